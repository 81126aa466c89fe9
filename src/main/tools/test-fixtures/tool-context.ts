import path from 'node:path'
import { STRICT_RULES } from '../sensitive-paths'
import { SnapshotStore } from '../snapshots'
import type { ToolContext } from '../tool'

/**
 * The ToolContext a test runs a tool with: the strict sensitive-path rules, a fresh snapshot store and
 * signal, and the session's output folder beside the workspace (never inside it), as in the app.
 * `overrides` replace any part (a signal to abort, a store that records, the workspace's own rules).
 */
export function makeToolContext(workspace: string, overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    workspace,
    pathRules: STRICT_RULES,
    signal: new AbortController().signal,
    snapshots: new SnapshotStore(),
    outputDir: path.dirname(workspace),
    callId: 'call-1',
    onProgress: () => undefined,
    ...overrides,
  }
}
