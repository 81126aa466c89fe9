import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, constants, openSync, readSync, writeSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'
import type { Readable } from 'node:stream'
import { ReadStream as TtyReadStream } from 'node:tty'
import * as nodePty from 'node-pty'
import { ensureUtf8Locale, NON_INTERACTIVE_ENV } from './child-env'
import { groupExists, killProcessTree } from './process-tree'

/**
 * Runs one `bash -c` command in a pseudo-terminal (DESIGN 2): programs see a terminal, so they line-buffer
 * and print what they would print for a person, and stdout and stderr arrive merged in their real order.
 * The child is a session leader with the terminal as its controlling terminal, so its process group is the
 * command's: timeout and stop kill that whole group, plus descendants that moved to other groups, SIGTERM
 * first and SIGKILL after a grace.
 *
 * The terminal comes from node-pty's `openpty`, and the process from `child_process.spawn` with the
 * terminal's slave as stdio and `detached` (setsid; the slave becomes the controlling terminal when bash, a
 * session leader, opens it by name at its start: strace shows it). node-pty's own spawn forks the whole app
 * with forkpty and reports the exit only after a waiter thread and the socket's close: starting `true` that
 * way took 1.9x `child_process.spawn`, this way 1.3-1.6x, most of it bash's own start
 * (`npm run bench -- spawn` shows both).
 */

/** How long processes get to exit after SIGTERM before SIGKILL, on timeout. */
export const TIMEOUT_KILL_GRACE_MS = 2000
/** The same after the user pressed stop: they asked for it to end now, but a clean exit is still kinder. */
export const STOP_KILL_GRACE_MS = 500

/** A wide terminal: tools that wrap or truncate to the width (ls, ps, tables) lose less of their output. */
const COLUMNS = 160
const ROWS = 50

/**
 * Stdin is /dev/null, so a command that reads input (a prompt, a REPL, `cat` with no file) gets end of
 * file at once instead of waiting for the timeout, and tools that check `isatty(stdin)` (watch modes,
 * confirmation prompts) run non-interactively. A redirection builtin: no extra process.
 *
 * The terminal stays open on fd 9. Without it, a program whose stdin is not the terminal closes its last
 * terminal descriptors itself on the way out (coreutils flush and close stdout and stderr at exit); the
 * master sees the hang-up, closes, and the kernel's SIGHUP for the session kills the program in its last
 * microseconds: a successful `ls` reported as killed by SIGHUP. fd 9 is only closed by the kernel.
 */
const STDIN_FROM_NULL = 'exec 9<&0 </dev/null; '

/** Ctrl-D: end of file for a program that opens /dev/tty itself (ssh, sudo, pinentry asking a password). */
const END_OF_TRANSMISSION = '\x04'

/**
 * Longest time the pty stays paused for a slow consumer. A consumer that never catches up (a stalled disk)
 * must not hold the command until its timeout, nor the rest of the output past OUTPUT_AFTER_EXIT_MS. Between
 * pauses one more chunk (4 KiB) is read, so memory grows by at most ~40 KiB/s while the disk stalls.
 */
const MAX_PAUSE_MS = 100

/** After SIGKILL, how long to wait for the exit to be reported before giving up on it. */
const EXIT_AFTER_KILL_MS = 5000

/**
 * After the command and everything it left behind have ended, how long the rest of its output may take to
 * be read (the terminal reports end of output once its buffer is empty). Only a process outside the tree
 * still holding the terminal makes this wait run out; the output is then cut there.
 */
const OUTPUT_AFTER_EXIT_MS = 1000

export interface PtyRunOptions {
  /** Run by `bash -c`, after the stdin redirection above. */
  command: string
  cwd: string
  timeoutMs: number
  signal?: AbortSignal
  /**
   * Every byte the command writes, in order, with the terminal's CR+LF line endings turned back into the
   * LF the program wrote. Return a promise to push back: the pty is not read until it settles.
   */
  onData: (chunk: Buffer) => Promise<void> | undefined | void
  /** The environment to start from (secrets are removed and terminal settings added); process.env by default. */
  env?: NodeJS.ProcessEnv
  /**
   * Start `bash -c` through this program (the sandbox): `program ...args bash -c <command>`, in exactly `env`
   * (the `env` option above is then unused). With `statusFd`, the program gets a pipe on that descriptor and
   * what it writes there is returned as `status`.
   */
  launch?: {
    program: string
    args: string[]
    env: Record<string, string>
    statusFd: number | null
    /** Everything the command started ends when the launcher exits (a PID namespace): nothing to hunt. */
    endsTree: boolean
    /** Text that marks the launcher's last status report. */
    statusEnd?: string
  }
}

export interface PtyRunResult {
  /** Process id of the command's shell, which is also its process group and session id. */
  pid: number | null
  /** Exit status, or null when the shell was ended by a signal or never started. */
  exitCode: number | null
  signal: NodeJS.Signals | null
  timedOut: boolean
  aborted: boolean
  durationMs: number
  /** Set when the command could not be started, or output handling failed; the command did not complete. */
  error?: string
  /** What the launch program wrote on its status descriptor (see `launch`). */
  status?: string
}

/** Runs the command to its end (or its timeout or stop). Never rejects. */
export async function runInPty(options: PtyRunOptions): Promise<PtyRunResult> {
  const startedAt = performance.now()
  const notStarted = (extra: Partial<PtyRunResult>): PtyRunResult => ({
    pid: null,
    exitCode: null,
    signal: null,
    timedOut: false,
    aborted: false,
    durationMs: performance.now() - startedAt,
    ...extra,
  })
  if (options.signal?.aborted) return notStarted({ aborted: true })
  let term: Terminal
  try {
    term = startInTerminal(options)
  } catch (err) {
    // The folder is checked only now: checking first would cost every command a round trip.
    return notStarted({ error: await startFailure(options.cwd, err) })
  }
  return new PtyRun(term, options, startedAt).finished
}

async function startFailure(cwd: string, err: unknown): Promise<string> {
  try {
    if (!(await stat(cwd)).isDirectory()) return `${cwd} is not a folder`
  } catch (statErr) {
    return `cannot run in ${cwd}: ${errorMessage(statErr)}`
  }
  return `could not start bash: ${errorMessage(err)}`
}

/** A started command: its process, and the master side of its terminal, open for reading. */
interface Terminal {
  child: ChildProcess
  pid: number
  /** The master side's descriptor, owned by `output`, which closes it. */
  fd: number
  output: TtyReadStream
  /** Everything the launch program wrote on its status descriptor, once it closed it (or wrote `statusEnd`). */
  status: Promise<string> | null
  /** Lanes' end of the status descriptor, closed when the run is finished (a holder of the other end sees it). */
  statusPipe: Readable | null
}

/**
 * node-pty's native binding (exported as `native`, undocumented, hence the pinned version); its `open` is
 * openpty(3) with the window size set and both ends non-blocking. Null on Windows.
 */
const ptyNative = (
  nodePty as unknown as {
    native?: { open(cols: number, rows: number): { master: number; slave: number; pty: string } } | null
  }
).native

/** Throws when the terminal or the process cannot be had (no ptys left, no bash, bad arguments). */
function startInTerminal({ command, cwd, env, launch }: PtyRunOptions): Terminal {
  if (!ptyNative) throw new Error('pseudo-terminals are not available on this system')
  const opened = ptyNative.open(COLUMNS, ROWS)
  const { master } = opened
  // openpty's descriptors are inherited by every child: the command (and a launcher) would hold a second slave
  // beyond its stdio, and the end of the output would wait for the last of those. The slave is opened again by name
  // (Node's opens are close-on-exec; O_NOCTTY: it never becomes Lanes' own terminal), so a child has it only as its
  // stdio. (The master is inherited too; it has no name to open again by.)
  let slave: number
  try {
    slave = openSync(opened.pty, constants.O_RDWR | constants.O_NOCTTY)
  } catch (err) {
    closeSync(master)
    throw err
  } finally {
    closeSync(opened.slave)
  }
  const bashArgs = ['bash', '-c', STDIN_FROM_NULL + command]
  const [program, ...args] = launch ? [launch.program, ...launch.args, ...bashArgs] : bashArgs
  const stdio: Array<number | 'pipe' | 'ignore'> = [slave, slave, slave]
  if (launch?.statusFd != null) {
    while (stdio.length < launch.statusFd) stdio.push('ignore')
    stdio[launch.statusFd] = 'pipe'
  }
  let child: ChildProcess
  try {
    // libuv makes stdio blocking in the child (openpty's slave was set non-blocking) and resets signals.
    child = spawn(program as string, args, {
      cwd,
      env: launch ? { ...launch.env, PWD: cwd } : Object.assign(commandEnv(env ?? process.env), { PWD: cwd }),
      stdio,
      detached: true,
    })
  } catch (err) {
    closeSync(master)
    throw err
  } finally {
    // Only the command may hold the slave: the end of output is seen when its last holder exits.
    closeSync(slave)
  }
  if (child.pid === undefined) {
    closeSync(master)
    // The reason comes as an 'error' event on the next tick; the pid's absence already says it failed.
    child.on('error', () => {})
    throw new Error(
      launch
        ? `${launch.program} could not be started`
        : 'bash could not be started (is it installed and on the PATH?)',
    )
  }
  let status: Promise<string> | null = null
  const statusPipe = launch?.statusFd != null ? (child.stdio[launch.statusFd] as Readable | null) : null
  if (statusPipe) {
    status = new Promise((resolve) => {
      let text = ''
      statusPipe.setEncoding('utf8')
      statusPipe.on('data', (chunk: string) => {
        if (text.length < 64 * 1024) text += chunk
        // Its last report came: no need to wait for the pipe to close as well (that comes tens of ms later).
        if (launch?.statusEnd !== undefined && text.includes(launch.statusEnd)) resolve(text)
      })
      statusPipe.on('error', () => resolve(text))
      statusPipe.on('close', () => resolve(text))
    })
  }
  return { child, pid: child.pid, fd: master, output: new TtyReadStream(master), status, statusPipe }
}

class PtyRun {
  readonly finished: Promise<PtyRunResult>
  private resolveFinished!: (result: PtyRunResult) => void
  private readonly lineEndings = new LineEndingRestorer()
  private readonly outputClosed: Promise<void>
  private exit: { exitCode: number | null; signal: NodeJS.Signals | null } | null = null
  private timedOut = false
  private aborted = false
  private error: string | undefined
  private termination: Promise<void> | null = null
  private paused = false
  private pauseTimer: NodeJS.Timeout | undefined
  private readonly timeoutTimer: NodeJS.Timeout
  private exitWatchdog: NodeJS.Timeout | undefined
  private done = false
  private statusText: string | undefined
  private readonly onAbort = (): void => {
    if (this.exit) return
    this.aborted = true
    this.terminate(STOP_KILL_GRACE_MS)
  }

  constructor(
    private readonly term: Terminal,
    private readonly options: PtyRunOptions,
    private readonly startedAt: number,
  ) {
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve))
    const { output, child } = term
    this.outputClosed = new Promise((resolve) => output.once('close', () => resolve()))
    output.on('data', (chunk: Buffer) => this.deliver(chunk))
    output.on('end', () => this.drainAfterHangup())
    // EIO once the last holder of the terminal is gone: the end of the output, after which the stream closes.
    output.on('error', () => {})
    child.on('error', () => {}) // a failed kill of a process that is already gone
    child.once('exit', (exitCode, signal) => void this.onExit(exitCode, signal))
    this.timeoutTimer = setTimeout(() => {
      this.timedOut = true
      this.terminate(TIMEOUT_KILL_GRACE_MS)
    }, options.timeoutMs)
    options.signal?.addEventListener('abort', this.onAbort, { once: true })
    try {
      writeSync(term.fd, END_OF_TRANSMISSION)
    } catch {
      // The terminal is already gone: nobody is left to ask for input.
    }
  }

  private deliver(raw: Buffer): void {
    const chunk = this.lineEndings.push(raw)
    if (chunk.length === 0 || this.error !== undefined) return
    let wait: Promise<void> | undefined | void
    try {
      wait = this.options.onData(chunk)
    } catch (err) {
      this.error = `reading the output failed: ${errorMessage(err)}`
      this.terminate(STOP_KILL_GRACE_MS)
      return
    }
    if (!wait || this.paused) return
    this.paused = true
    this.term.output.pause()
    const resume = (): void => {
      if (!this.paused) return
      this.paused = false
      clearTimeout(this.pauseTimer)
      this.term.output.resume()
    }
    this.pauseTimer = setTimeout(resume, MAX_PAUSE_MS)
    wait.then(resume, resume)
  }

  /**
   * libuv treats a hang-up after a short read as end of file without reading again (right for pipes,
   * wrong for a pty, which hands out at most 4 KiB per read): the last few KiB of a fast command's output
   * are still in the kernel when 'end' fires. Read them here, before the stream closes its descriptor.
   * Every writer has closed the terminal, so this stops at EIO almost at once and never blocks.
   */
  private drainAfterHangup(): void {
    for (;;) {
      const buffer = Buffer.allocUnsafe(64 * 1024)
      let n: number
      try {
        n = readSync(this.term.fd, buffer, 0, buffer.length, null)
      } catch {
        break // EIO: drained; EAGAIN: a writer reopened it, and the stream will not read it anyway
      }
      if (n <= 0) break
      this.deliver(buffer.subarray(0, n))
    }
  }

  private async onExit(exitCode: number | null, signal: NodeJS.Signals | null): Promise<void> {
    this.exit = { exitCode: signal ? null : exitCode, signal }
    clearTimeout(this.timeoutTimer)
    clearTimeout(this.exitWatchdog)
    this.options.signal?.removeEventListener('abort', this.onAbort)
    // The shell is gone; anything it left in its group (a server, a watcher) ends with it. A launcher that
    // ends its whole tree itself (the sandbox's PID namespace dies with it) leaves at most zombies behind.
    if (!this.termination && !this.options.launch?.endsTree && groupExists(this.term.pid))
      this.terminate(STOP_KILL_GRACE_MS)
    await this.termination
    // Everything that held the terminal is gone: what is left in it is read, then the stream closes.
    let cutOff: NodeJS.Timeout | undefined
    await Promise.race([
      this.outputClosed,
      new Promise<void>((resolve) => (cutOff = setTimeout(resolve, OUTPUT_AFTER_EXIT_MS))),
    ])
    clearTimeout(cutOff)
    const tail = this.lineEndings.flush()
    if (tail.length > 0 && this.error === undefined) void this.options.onData(tail)
    // Written before the launcher exits; closed with its exit (the command cannot hold it: bubblewrap does not
    // pass it on), or, when the capture wrapper's holder keeps it (capture/overlay.ts), ended by `statusEnd`.
    // The fallback timer must not keep the process alive once the status came (`lanes run` would linger).
    if (this.term.status)
      this.statusText = await Promise.race([this.term.status, delay(1000, '', { ref: false })])
    this.finish()
  }

  private terminate(graceMs: number): void {
    if (this.termination) return
    clearTimeout(this.timeoutTimer)
    this.termination = killProcessTree(this.term.pid, graceMs)
    void this.termination.then(() => {
      if (this.exit) return
      // Killed, but the exit is not reported yet; never wait forever for it.
      this.exitWatchdog = setTimeout(() => {
        this.term.child.kill('SIGKILL')
        this.finish()
      }, EXIT_AFTER_KILL_MS)
    })
  }

  private finish(): void {
    if (this.done) return
    this.done = true
    clearTimeout(this.timeoutTimer)
    clearTimeout(this.pauseTimer)
    clearTimeout(this.exitWatchdog)
    this.options.signal?.removeEventListener('abort', this.onAbort)
    this.term.output.destroy()
    this.term.statusPipe?.destroy()
    this.resolveFinished({
      pid: this.term.pid,
      exitCode: this.exit?.exitCode ?? null,
      signal: this.exit?.signal ?? null,
      timedOut: this.timedOut,
      aborted: this.aborted && !this.timedOut,
      durationMs: performance.now() - this.startedAt,
      ...(this.error !== undefined ? { error: this.error } : {}),
      ...(this.statusText !== undefined ? { status: this.statusText } : {}),
    })
  }
}

/**
 * The terminal turns every LF the program writes into CR LF (ONLCR). Turning each CR LF back into LF is an
 * exact inverse: a CR the program wrote before its LF comes through as CR CR LF and is kept. A CR at the
 * end of a chunk waits for the next one.
 */
export class LineEndingRestorer {
  private pendingCr = false

  push(chunk: Buffer): Buffer {
    const firstCr = chunk.indexOf(0x0d)
    if (!this.pendingCr && firstCr === -1) return chunk
    const out = Buffer.allocUnsafe(chunk.length + 1)
    let n = 0
    let i = 0
    if (this.pendingCr) {
      this.pendingCr = false
      if (chunk[0] !== 0x0a) out[n++] = 0x0d
    }
    if (firstCr > 0) {
      chunk.copy(out, n, 0, firstCr)
      n += firstCr
      i = firstCr
    } else if (firstCr === -1) {
      chunk.copy(out, n)
      return out.subarray(0, n + chunk.length)
    }
    const last = chunk.length - 1
    for (; i < last; i++) {
      const byte = chunk[i] as number
      if (byte !== 0x0d || chunk[i + 1] !== 0x0a) out[n++] = byte
    }
    if (chunk[last] === 0x0d) this.pendingCr = true
    else out[n++] = chunk[last] as number
    return out.subarray(0, n)
  }

  /** The CR held back at the very end of the output, if any. */
  flush(): Buffer {
    if (!this.pendingCr) return Buffer.alloc(0)
    this.pendingCr = false
    return Buffer.from([0x0d])
  }
}

/**
 * Names whose values are credentials, for a command the user chose to run outside the sandbox (inside it,
 * the environment is an allowlist: sandbox/policy.ts). A name ending in a credential word, glued or not
 * (`OPENAI_KEY`, `PGPASSWORD`, `GITHUB_TOKEN`); one with such a word as a part (`SECRET_KEY_BASE`) unless it
 * names a place (`PASSWORD_STORE_DIR`, `SSH_AUTH_SOCK`); and connection strings, which carry passwords
 * (`DATABASE_URL`, `REDIS_URL`, `SENTRY_DSN`).
 */
function isSecretName(name: string): boolean {
  const upper = name.toUpperCase()
  if (/(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|COOKIE)$/.test(upper)) return true
  if (/_(?:DIR|PATH|FILE|SOCK|HOME)$/.test(upper)) return false
  if (upper.split('_').some((part) => SECRET_PARTS.has(part))) return true
  return CONNECTION_STRING.test(upper)
}

const SECRET_PARTS = new Set([
  'KEY',
  'APIKEY',
  'TOKEN',
  'SECRET',
  'PASSWORD',
  'PASSWD',
  'CREDENTIALS',
  'PRIVATE',
])
const CONNECTION_STRING =
  /(?:^|_)(?:DATABASE|DB|POSTGRES|PG|MYSQL|MONGO|MONGODB|REDIS|AMQP|RABBITMQ|BROKER|CONNECTION)_?(?:URL|URI|STRING)$|(?:^|_)DSN$/

/**
 * isSecretName by name, remembered: it depends on the name alone, and every command goes through the same
 * few dozen names, so each command's environment costs lookups instead of five regular expressions a name
 * (a third of a millisecond a command, more than the rest of starting it on our side). Bounded, for an app
 * whose environment keeps gaining new names.
 */
const secretNames = new Map<string, boolean>()
const MAX_REMEMBERED_NAMES = 4096

function isSecretNameRemembered(name: string): boolean {
  let secret = secretNames.get(name)
  if (secret === undefined) {
    secret = isSecretName(name)
    if (secretNames.size >= MAX_REMEMBERED_NAMES) secretNames.clear()
    secretNames.set(name, secret)
  }
  return secret
}

/** Leftovers from the app's own terminal that would contradict the settings commandEnv adds. */
const TERMINAL_LEFTOVERS = new Set([
  'FORCE_COLOR',
  'CLICOLOR_FORCE',
  'COLUMNS',
  'LINES',
  'TMUX',
  'TMUX_PANE',
  'STY',
  'WINDOWID',
])

/**
 * The environment of a command run outside the sandbox. Secrets are removed: whatever a command prints goes
 * to the model provider, and a model-chosen command like `printenv` would otherwise hand over the user's keys
 * (ours first: ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN; and by name, see isSecretName).
 * Then the settings every command gets (child-env.ts): nothing waits for a person, no colour.
 * A new object each call, the caller's to add to; `base` is read once (process.env's every read is a call
 * into the environment).
 */
export function commandEnv(base: NodeJS.ProcessEnv): Record<string, string> {
  // Null prototype: an environment may hold any name, `__proto__` and `constructor` included.
  const env: Record<string, string> = Object.create(null) as Record<string, string>
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || TERMINAL_LEFTOVERS.has(name) || isSecretNameRemembered(name)) continue
    env[name] = value
  }
  ensureUtf8Locale(env)
  return Object.assign(env, NON_INTERACTIVE_ENV)
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
