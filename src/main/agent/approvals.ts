import { readFile } from 'node:fs/promises'
import { capWritePreview, type ApprovalPreview } from '../../shared/events'
import { writeJsonAtomic } from '../tools/atomic-write'
import { isReadOnlyCommand, validateBashCommand } from '../tools/bash/validate'
import { planEdit } from '../tools/edit-file'
import { fileDiff } from '../tools/file-diff'
import type { BashInput, EditFileInput, ReadFileInput, WriteFileInput } from '../tools/schemas'
import type { ToolContext } from '../tools/tool'
import { isProtectedPath, isSecretPath, type SensitivePathRules } from '../tools/sensitive-paths'
import { nameInWorkspace } from '../tools/workspace'
import { planWrite } from '../tools/write-file'

/**
 * The approval policy (DESIGN 5). It decides per call without blocking: `allow` runs at once, `ask` waits
 * for the user with a preview, `deny` never runs and tells the model why. Protected paths (.git/, .env*,
 * editor and shell config) always ask, whatever the settings.
 */

export interface AlwaysAllowRule {
  tool: 'bash'
  /** The exact command, as validated. */
  command: string
}

export interface PolicyOptions {
  workspace: string
  /** The workspace's sensitive-path rules (computed once when the session opened it). */
  pathRules: SensitivePathRules
  alwaysAllow: readonly AlwaysAllowRule[]
  /** Writes and edits outside protected paths run without asking. */
  autoApproveEdits: boolean
  /**
   * This machine has an OS sandbox (DESIGN 2.3). Read-only commands run without asking only inside it; without
   * one every command asks.
   */
  sandbox: boolean
}

export type PolicyVerdict =
  /** `byRule`: a command the user marked "always allow": it runs as an approved one. */
  { kind: 'allow'; byRule?: true } | { kind: 'ask'; protected: boolean } | { kind: 'deny'; reason: string }

export function decidePolicy(name: string, input: unknown, opts: PolicyOptions): PolicyVerdict {
  switch (name) {
    case 'grep':
    case 'glob':
      return { kind: 'allow' }
    // Paths are judged by the name the model wrote, without touching the disk, so an allowed call starts the
    // moment its block closes. A name that hides a protected target behind a symbolic link is refused by the
    // tool itself (`linkHidesProtection`), which then names the real path for the model to use.
    case 'read_file': {
      // Reading a secret sends it to the model provider: the user decides. Other protected files (.git/,
      // editor settings) are protected against writes only; reading them is what an agent needs to do.
      const name = nameInWorkspace(opts.workspace, (input as ReadFileInput).path)
      return name !== null && isSecretPath(name) ? { kind: 'ask', protected: true } : { kind: 'allow' }
    }
    case 'write_file':
    case 'edit_file': {
      const name = nameInWorkspace(opts.workspace, (input as WriteFileInput).path)
      if (name !== null && isProtectedPath(name, opts.pathRules)) return { kind: 'ask', protected: true }
      return opts.autoApproveEdits ? { kind: 'allow' } : { kind: 'ask', protected: false }
    }
    case 'bash': {
      const { command } = input as BashInput
      const verdict = validateBashCommand(command)
      if (!verdict.ok) return { kind: 'deny', reason: verdict.reason }
      if (opts.sandbox && isReadOnlyCommand(command)) return { kind: 'allow' }
      if (opts.alwaysAllow.some((rule) => rule.tool === 'bash' && rule.command === command))
        return { kind: 'allow', byRule: true }
      return { kind: 'ask', protected: false }
    }
    default:
      // A tool this policy does not know is a side effect until proven otherwise.
      return { kind: 'ask', protected: false }
  }
}

export type PreviewResult =
  | {
      ok: true
      preview: ApprovalPreview
      /** The content that approval allows to be written. */ after?: string
    }
  | { ok: false; error: string }

/**
 * What the user reviews. For a write or edit: the diff against the file as it is now (or as an earlier call
 * of the same turn will leave it, through `base`). A write that cannot be planned (old_string missing) fails
 * here, before anyone is asked to approve something that would not apply.
 */
export async function buildPreview(
  name: string,
  input: unknown,
  ctx: ToolContext,
  opts: { protected: boolean; base?: { path: string; content: string | null } },
): Promise<PreviewResult> {
  switch (name) {
    case 'write_file':
    case 'edit_file': {
      const plan =
        name === 'write_file'
          ? await planWrite(ctx, input as WriteFileInput, opts.base)
          : await planEdit(ctx, input as EditFileInput, opts.base)
      if (!plan.ok) return { ok: false, error: plan.error }
      const diff = fileDiff(plan.relPath, plan.before, plan.after)
      const preview = capWritePreview({
        kind: 'write',
        path: plan.relPath,
        before: plan.before,
        after: plan.after,
        hunks: diff.hunks,
        truncated: diff.truncated,
        protected: opts.protected,
      })
      return { ok: true, preview, after: plan.after }
    }
    case 'bash': {
      const { command, description } = input as BashInput
      return { ok: true, preview: { kind: 'bash', command, description, cwd: ctx.workspace } }
    }
    case 'read_file':
      return {
        ok: true,
        preview: {
          kind: 'other',
          summary: `Read ${(input as ReadFileInput).path} (a protected file: its content goes to the model)`,
        },
      }
    default:
      return {
        ok: true,
        preview: { kind: 'other', summary: `${name} ${JSON.stringify(input).slice(0, 500)}` },
      }
  }
}

/**
 * "Always allow this command in this folder", kept per workspace in one JSON file. Written atomically so a
 * crash never leaves a half file that would lose every rule.
 */
export class AlwaysAllowStore {
  constructor(private readonly file: string) {}

  /** Read once, then kept: the policy asks for every call, on the path from block close to tool start. */
  private cache: Promise<Record<string, AlwaysAllowRule[]>> | null = null

  async rules(workspace: string): Promise<AlwaysAllowRule[]> {
    this.cache ??= this.readAll()
    return (await this.cache)[workspace] ?? []
  }

  async add(workspace: string, rule: AlwaysAllowRule): Promise<void> {
    const all = await this.readAll()
    const rules = all[workspace] ?? []
    if (!rules.some((r) => r.tool === rule.tool && r.command === rule.command)) rules.push(rule)
    all[workspace] = rules
    await writeJsonAtomic(this.file, all)
    this.cache = Promise.resolve(all)
  }

  private async readAll(): Promise<Record<string, AlwaysAllowRule[]>> {
    try {
      const parsed = JSON.parse(await readFile(this.file, 'utf8')) as unknown
      if (typeof parsed !== 'object' || parsed === null) return {}
      const out: Record<string, AlwaysAllowRule[]> = {}
      for (const [workspace, rules] of Object.entries(parsed)) {
        if (!Array.isArray(rules)) continue
        out[workspace] = rules.filter(
          (r): r is AlwaysAllowRule =>
            typeof r === 'object' && r !== null && r.tool === 'bash' && typeof r.command === 'string',
        )
      }
      return out
    } catch {
      return {}
    }
  }
}
