import { join } from 'node:path'
import { z } from 'zod'
import { CONTROL_CHAR_MESSAGE, cleanText, countField, noControlChars, toolInput } from '../input-fields'
import { workspaceSecrets } from '../../secrets/workspace-secrets'
import { defineTool, fail, ok, type ToolResult } from '../tool'
import { runInPty, TIMEOUT_KILL_GRACE_MS, type PtyRunResult } from './pty-runner'
import { MAX_MODEL_BYTES, MAX_MODEL_LINES, RollingBuffer } from './rolling-buffer'
import { describeChanges, resumeCapture, startCapture, type CommandChanges } from './capture/capture'
import { prepareCommandSandbox, sandboxStartFailure } from './sandbox/launch'
import { rulesAllowCommand } from '../../../shared/events'
import { checkBashCommand, loadBashGrammar, type BashCommandCheck } from './validate'

/** A bash call's timeout when neither the call nor the user's settings give one. */
export const DEFAULT_BASH_TIMEOUT_SEC = 180

export const BashInput = toolInput('Run one shell command in the workspace.', {
  command: cleanText(
    'One simple command to run in the workspace folder (no pipes, redirects, ; or &&).',
    `${CONTROL_CHAR_MESSAGE}: run one single-line command per call`,
  ),
  timeout: countField(
    `Timeout in seconds, 1 to 600. Omit for the default (${DEFAULT_BASH_TIMEOUT_SEC} seconds).`,
    600,
  ),
  description: z
    .string()
    .max(1000)
    .refine(noControlChars, CONTROL_CHAR_MESSAGE)
    .optional()
    .describe('A few words saying what the command is for, shown to the user.'),
})
export type BashInput = z.infer<typeof BashInput>

/** Live output reaches the UI at most this often, or sooner once this much is waiting. */
const LIVE_INTERVAL_MS = 50
const LIVE_MAX_CHUNK = 16 * 1024

/**
 * A flood (a 1 GB log, a binary on stdout) is shown live only in part: events are logged and sent to the
 * UI, and nobody reads 100 MB/s scrolling by. The full output is in the saved file either way.
 */
const LIVE_RATE_BYTES_PER_SEC = 256 * 1024
const LIVE_BURST_BYTES = 1024 * 1024

/** An argument that names a subcommand (`test`, `run:unit`), not a flag, a path or a value. */
const SUBCOMMAND = /^[a-z][a-z0-9:_-]*$/

/**
 * A call's command read once (validate.ts `checkBashCommand`): its policy, its session rule and its run ask
 * the same questions of the same parsed input (the engine parses a call's arguments once and hands every hook
 * that object). Keyed by that object, so it goes with the call; the command is compared too, and an answer
 * given before the grammar loaded is never kept.
 */
const checks = new WeakMap<BashInput, BashCommandCheck>()

function checkOf(input: BashInput): BashCommandCheck {
  const known = checks.get(input)
  if (known !== undefined && known.command === input.command) return known
  const check = checkBashCommand(input.command)
  if (check.final) checks.set(input, check)
  return check
}

function bashTitle(input: BashInput): string {
  return input.description?.trim() || input.command
}

export const bashTool = defineTool({
  name: 'bash',
  description: [
    'Runs one command with bash in the workspace folder, in a terminal, and returns its output (stdout and',
    'stderr merged) and exit status.',
    '',
    '- One simple command only: no pipes, redirects, `;`, `&&`, `$(...)`, variables or globs expanded by the',
    '  shell. Rejected commands are not run and the reason says what to do instead.',
    '- Prefer the read_file, grep and glob tools to cat, grep and find.',
    '- There is no input: stdin is empty, so prompts get end of file. Pass flags such as --yes or',
    '  --non-interactive, and use non-watch modes (e.g. `vitest run`).',
    `- The output you get is the last ${MAX_MODEL_LINES} lines and at most ${MAX_MODEL_BYTES / 1000} KB, with`,
    '  colours stripped; when it is cut, the result says so and names the file with the full output, which',
    '  read_file can read. Often a narrower command (one test file, a quieter flag) is better.',
    `- Timeout: ${DEFAULT_BASH_TIMEOUT_SEC} s unless you pass \`timeout\` (1 to 600 s); on timeout the command`,
    '  and everything it started are killed.',
    '- A non-zero exit code is reported as an error.',
  ].join('\n'),
  input: BashInput,
  concurrencySafe: false,
  title: bashTitle,
  runsInSandbox: true,
  alwaysAllowRule: (input) => ({ tool: 'bash', command: input.command }),
  reportsExecutionTime: true,
  // What the validator refuses never runs; the read-only allowlist and the user's "always allow" rules run at
  // once; anything else is the user's decision.
  policy(input, opts) {
    const check = checkOf(input)
    const verdict = check.verdict
    if (!verdict.ok) return { kind: 'deny', reason: verdict.reason }
    // Nothing runs without asking where there is no sandbox (DESIGN 2.3): neither the read-only allowlist nor
    // an "always allow" rule, which the user gave for a command that would run in one.
    if (!opts.sandbox) return { kind: 'ask', protected: false }
    if (check.readOnly(opts.pathRules)) return { kind: 'allow' }
    if (opts.alwaysAllow.some((rule) => rule.tool === 'bash' && rule.command === input.command))
      return { kind: 'allow', byRule: true }
    const words = check.words()
    if (words && rulesAllowCommand(opts.sessionRules ?? [], words)) return { kind: 'allow', byRule: true }
    return { kind: 'ask', protected: false }
  },
  // The command's program and its first argument when that reads as a subcommand (`npm test`, `git commit`,
  // `make`): the user sees the prefix before granting it. Not offered where the policy would ask anyway.
  sessionRule(input, opts) {
    const words = opts.sandbox ? checkOf(input).words() : null
    if (!words) return undefined
    const [program, next] = words as [string, ...string[]]
    return { kind: 'command', words: next && SUBCOMMAND.test(next) ? [program, next] : [program] }
  },
  previewFromArguments: true,
  async preview(input, ctx) {
    const { command, description } = input
    return { ok: true, preview: { kind: 'bash', command, description, cwd: ctx.workspace } }
  },
  async execute(input, ctx) {
    const title = bashTitle(input)
    try {
      await loadBashGrammar()
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err)
      return fail(`Command not run: the command checker could not start (${why}).`, { title })
    }
    const check = checkOf(input)
    const verdict = check.verdict
    if (!verdict.ok) {
      return fail(`Command not run: ${verdict.reason}`, {
        title,
        metadata: {
          denied: true,
          reason: verdict.reason,
          cwd: ctx.workspace,
          description: input.description,
        },
      })
    }

    const fromSettings = ctx.bashTimeoutSec
    const timeoutSec =
      input.timeout ??
      (fromSettings && Number.isFinite(fromSettings) && fromSettings > 0
        ? fromSettings
        : DEFAULT_BASH_TIMEOUT_SEC)
    // The id comes from the model's stream: keep it a plain file name whatever it holds.
    const outputPath = join(ctx.outputDir, `${ctx.callId.replace(/[^A-Za-z0-9_.-]/g, '_')}.log`)
    const approval = ctx.approval
    // Everything the command prints passes the redactor before it is kept or shown: the saved full output, the
    // live chunks and the tail for the model alike. The workspace's first scan began when the session opened;
    // a command issued before it is done waits for it.
    const secrets = workspaceSecrets(ctx.workspace)
    await secrets.ready()
    // The policy let this run unasked when the call arrived; the scan may since have found that git holds a
    // secret file, and then a command that prints or searches git's contents needs a person after all.
    if (
      !approval &&
      ctx.pathRules.gitTracksSecrets &&
      !check.readOnly(ctx.pathRules) &&
      check.readOnly({ ...ctx.pathRules, gitTracksSecrets: false })
    )
      return fail(
        'Command not run: git holds a version of a secret file in this workspace, so commands that print or search file contents from git need the user’s approval. Issue the call again to ask for it.',
        { title, metadata: { denied: true, cwd: ctx.workspace, description: input.description } },
      )
    const redact = secrets.redactor().byteStream()
    const sandbox = approval?.outsideSandbox
      ? null
      : await prepareCommandSandbox({
          mode: approval ? 'workspace-write' : 'read-only',
          workspace: ctx.workspace,
          network: approval?.network ?? false,
        })
    if (sandbox !== null && 'error' in sandbox) {
      // Never a silent run without the sandbox: the model and the user read why.
      return fail(`Command not run: the sandbox could not start (${sandbox.error}).`, {
        title,
        metadata: { cwd: ctx.workspace, description: input.description, sandbox: 'failed' },
      })
    }
    // An approved command's changes are captured (issue 20): it runs on a copy-on-write layer, or is scanned.
    const capture = approval
      ? startCapture({
          sandbox,
          workspace: ctx.workspace,
          outputDir: ctx.outputDir,
          callId: ctx.callId,
          rules: ctx.pathRules,
          host: ctx.capture,
          holdAll: approval.hold === true,
        })
      : null
    if (capture !== null && 'error' in capture) {
      return fail(`Command not run: its changes could not be captured (${capture.error}).`, {
        title,
        metadata: { cwd: ctx.workspace, description: input.description, sandbox: 'failed' },
      })
    }
    const launch = capture ? capture.launch : sandbox
    const buffer = new RollingBuffer({ filePath: outputPath })
    const live = new LiveOutput(ctx.onProgress, outputPath)
    let run: PtyRunResult
    try {
      run = await runInPty({
        command: input.command,
        cwd: ctx.workspace,
        timeoutMs: timeoutSec * 1000,
        signal: ctx.signal,
        onData: (chunk) => {
          const shown = redact.push(chunk)
          if (shown.length === 0) return undefined
          live.push(shown)
          return buffer.write(shown)
        },
        ...(launch ? { launch } : {}),
      })
    } finally {
      await sandbox?.cleanup()
    }
    const rest = redact.end()
    if (rest.length > 0) {
      live.push(rest)
      void buffer.write(rest)
    }
    live.end()
    const summary = await buffer.close()
    const sandboxFailure = sandbox ? sandboxStartFailure(sandbox, run, summary.text) : null
    const createdSensitive = sandbox && approval ? await sandbox.createdSensitive() : []

    const metadata = {
      exitCode: run.exitCode,
      signal: run.signal,
      timedOut: run.timedOut,
      aborted: run.aborted,
      durationMs: Math.round(run.durationMs),
      outputPath: summary.outputPath,
      totalBytes: summary.totalBytes,
      totalLines: summary.totalLines,
      shownLines: summary.shownLines,
      truncated: summary.truncated,
      cwd: ctx.workspace,
      description: input.description,
      timeoutSec,
      // For the UI and the log: how the command was confined.
      sandbox: sandbox === null ? 'off' : approval ? 'writable' : 'read-only',
      network: sandbox === null || approval?.network === true,
      ...(summary.saveError !== undefined ? { saveError: summary.saveError } : {}),
      ...(createdSensitive.length > 0 ? { createdSensitive } : {}),
    }
    const notStarted =
      run.pid === null && !run.aborted
        ? `Command not run: ${run.error ?? 'bash could not be started'}.`
        : sandboxFailure !== null
          ? `Command not run: the sandbox could not start (${sandboxFailure}).`
          : undefined

    const parts: string[] = []
    if (summary.truncated) {
      const where = summary.outputPath
        ? `Full output: ${summary.outputPath} (read_file reads it, with offset and limit)`
        : `The full output could not be saved (${summary.saveError ?? 'unknown error'}).`
      parts.push(
        `[Output truncated: showing the last ${summary.shownLines} of ${summary.totalLines} lines; the command ` +
          `printed ${formatBytes(summary.totalBytes)} in total. ${where}]`,
      )
    }
    if (summary.text.length > 0) parts.push(summary.text)
    else if (!summary.truncated) parts.push('(no output)')

    let status: string | null = null
    if (run.timedOut) {
      status =
        `Timed out after ${timeoutSec} s: the command was killed together with its whole process group ` +
        `(SIGTERM, then SIGKILL after ${TIMEOUT_KILL_GRACE_MS / 1000} s). Pass a larger timeout (up to 600 s) ` +
        'if it needs longer, or run something smaller.'
    } else if (run.aborted) {
      status =
        run.pid === null
          ? 'Stopped by the user before the command started.'
          : 'Stopped by the user: the command was killed together with its whole process group.'
    } else if (run.error !== undefined) {
      status = `The command was stopped: ${run.error}.`
    } else if (run.signal !== null) {
      status = `Killed by signal ${run.signal}`
    } else if (run.exitCode !== 0) {
      status = `Exit code ${run.exitCode ?? 'unknown'}`
    }
    const ran: RanCommand = {
      title,
      metadata,
      output: parts.join('\n'),
      status,
      createdSensitive,
      ...(notStarted !== undefined ? { notStarted } : {}),
      ...(sandboxFailure !== null ? { sandboxFailed: true } : {}),
    }
    // Also after a timeout or a stop: what the command changed until then is captured all the same.
    const changes = await capture?.finish(ran)
    // A command that ran writable may have added or changed secret files: their values are known from now on.
    if (approval) await secrets.refresh()
    return commandResult(ran, changes)
  },
  // The app stopped while this command ran, or while its held changes waited for the user's review (issue 20):
  // what it changed is reviewed (again), and the call is answered as it would have been.
  async resume(input, ctx) {
    const interrupted: RanCommand = {
      title: bashTitle(input),
      metadata: {
        exitCode: null,
        signal: null,
        timedOut: false,
        aborted: false,
        interrupted: true,
        cwd: ctx.workspace,
        description: input.description,
        sandbox: 'writable',
      },
      output: '(its output was not kept)',
      status:
        'Interrupted: Lanes stopped while this command was running, so it did not finish. What it had changed by ' +
        'then was kept apart from the workspace; what the user accepted of it is said above.',
      createdSensitive: [],
    }
    const found = await resumeCapture({
      workspace: ctx.workspace,
      outputDir: ctx.outputDir,
      callId: ctx.callId,
      rules: ctx.pathRules,
      host: ctx.capture,
      interrupted,
    })
    if (!found || !isRanCommand(found.ran)) return null
    await workspaceSecrets(ctx.workspace).refresh()
    return commandResult(found.ran, found.changes)
  },
})

/** The bash tool's account of a command that ran, without its changes: what its result is made of. */
interface RanCommand {
  title: string
  metadata: Record<string, unknown>
  /** What the command printed, as the model reads it (or the truncation note and the tail). */
  output: string
  /** Why it did not end well (exit code, timeout, stop), or null. */
  status: string | null
  createdSensitive: string[]
  /** It never ran (bash or the sandbox could not start): the result says only that. */
  notStarted?: string
  sandboxFailed?: boolean
}

function isRanCommand(value: unknown): value is RanCommand {
  const v = value as Partial<RanCommand> | null
  return typeof v === 'object' && v !== null && typeof v.title === 'string' && typeof v.output === 'string'
}

function commandResult(ran: RanCommand, changes: CommandChanges | null | undefined): ToolResult {
  const { title } = ran
  const metadata = { ...ran.metadata, ...(changes ? { changes } : {}) }
  if (ran.notStarted !== undefined)
    return fail(ran.notStarted, {
      title,
      metadata: ran.sandboxFailed ? { ...metadata, sandbox: 'failed' } : metadata,
    })
  const parts = [ran.output]
  const changed = changes ? describeChanges(changes) : ''
  if (changed !== '') parts.push(`\n${changed}`)
  if (ran.createdSensitive.length > 0)
    parts.push(
      `\n[The command created protected files (they can run code or hold secrets): ${ran.createdSensitive.slice(0, 20).join(', ')}]`,
    )
  const body = parts.join('\n')
  if (ran.status === null) return ok(body, { title, metadata })
  return fail(`${body}\n\n${ran.status}`, { title, metadata })
}

/**
 * Raw output for the UI's live view (terminal sequences kept: the UI renders them inert), coalesced into
 * one call per interval or per 16 KiB, and rate-limited so a flood cannot swamp the event log.
 */
class LiveOutput {
  private readonly decoder = new TextDecoder('utf-8')
  private pending = ''
  private timer: NodeJS.Timeout | undefined
  private budget = LIVE_BURST_BYTES
  private refilledAt = performance.now()
  private skipped = 0

  constructor(
    private readonly emit: (chunk: string) => void,
    private readonly outputPath: string,
  ) {}

  push(chunk: Buffer): void {
    const now = performance.now()
    this.budget = Math.min(
      LIVE_BURST_BYTES,
      this.budget + ((now - this.refilledAt) * LIVE_RATE_BYTES_PER_SEC) / 1000,
    )
    this.refilledAt = now
    if (chunk.length > this.budget) {
      this.skipped += chunk.length
      return
    }
    this.budget -= chunk.length
    this.noteSkipped()
    this.pending += this.decoder.decode(chunk, { stream: true })
    if (this.pending.length >= LIVE_MAX_CHUNK) this.flush()
    else this.timer ??= setTimeout(() => this.flush(), LIVE_INTERVAL_MS)
  }

  end(): void {
    this.pending += this.decoder.decode()
    this.noteSkipped()
    this.flush()
  }

  private noteSkipped(): void {
    if (this.skipped === 0) return
    this.pending += `\n[${formatBytes(this.skipped)} of output not shown live; all of it is in ${this.outputPath}]\n`
    this.skipped = 0
  }

  private flush(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.pending.length === 0) return
    const text = this.pending
    this.pending = ''
    try {
      this.emit(text)
    } catch {
      // The live view is a convenience; a failing listener must not fail the command.
    }
  }
}

function formatBytes(n: number): string {
  if (n < 1000) return `${n} bytes`
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)} KB`
  if (n < 1_000_000_000) return `${(n / 1_000_000).toFixed(1)} MB`
  return `${(n / 1_000_000_000).toFixed(2)} GB`
}
