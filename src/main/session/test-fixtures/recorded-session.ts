import { mkdtemp, readFile, realpath, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { editFileTool } from '../../tools/edit-file'
import { STRICT_RULES } from '../../tools/sensitive-paths'
import { SnapshotStore } from '../../tools/snapshots'
import type { ToolContext } from '../../tools/tool'
import { writeFileTool } from '../../tools/write-file'
import type { SessionEvent } from '../../../shared/events'
import { openSessionWriter, readSession, type SessionWriter } from '../log'
import { changeKeeper, identitiesTaken, preimagesDir, PreimageStore } from '../preimages'

/**
 * A session log made by the real file tools on a real folder, as the agent loop makes it (tool.queued,
 * file.preimage before the write, file.snapshot after, tool.finished), for the rewind tests and the bench.
 */
export interface RecordedSession {
  sessionsDir: string
  sessionId: string
  workspace: string
  /** Runs write_file or edit_file as call `callId` of `turn`; returns the tool's output. */
  call(
    turn: number,
    callId: string,
    name: 'write_file' | 'edit_file',
    input: Record<string, unknown>,
  ): Promise<string>
  close(): Promise<void>
}

export async function recordSession(
  opts: { sessionsDir?: string; workspace?: string } = {},
): Promise<RecordedSession> {
  const sessionsDir = opts.sessionsDir ?? (await mkdtemp(join(tmpdir(), 'lanes-rw-sessions-')))
  const workspace = await realpath(opts.workspace ?? (await mkdtemp(join(tmpdir(), 'lanes-rw-ws-'))))
  const sessionId = `s-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`
  const writer: SessionWriter = await openSessionWriter(sessionsDir, sessionId, { create: true })
  await writer.append({
    type: 'session.created',
    sessionId,
    workspace,
    settings: { model: 'm', scheduler: 'streaming', siblingSkip: true, demo: false },
  })
  await writer.append({ type: 'run.started', runId: 'r1', task: 'Change the files' })
  let store: Promise<PreimageStore> | undefined
  const snapshots = new SnapshotStore({
    onRecord: (s) => void writer.append({ type: 'file.snapshot', ...s }),
  })
  const turns = new Set<number>()
  return {
    sessionsDir,
    sessionId,
    workspace,
    async call(turn, callId, name, input) {
      if (!turns.has(turn)) {
        turns.add(turn)
        await writer.append({ type: 'turn.started', runId: 'r1', turn })
        await writer.append({
          type: 'assistant.message',
          turn,
          message: { role: 'assistant', content: [{ type: 'tool_use', id: callId, name, input }] },
          stopReason: 'tool_use',
        })
      }
      await writer.append({
        type: 'tool.queued',
        callId,
        turn,
        index: 0,
        name,
        input,
        safe: false,
        lane: { kind: 'serial' },
      })
      await writer.append({ type: 'tool.started', callId })
      const ctx: ToolContext = {
        workspace,
        signal: new AbortController().signal,
        snapshots,
        outputDir: writer.outputDir,
        callId,
        onProgress: () => undefined,
        pathRules: STRICT_RULES,
        changes: changeKeeper(
          () => (store ??= PreimageStore.open(preimagesDir(writer.outputDir))),
          callId,
          (draft) => writer.append(draft),
        ),
      }
      const result =
        name === 'write_file'
          ? await writeFileTool.execute(input as never, ctx)
          : await editFileTool.execute(input as never, ctx)
      await writer.append({
        type: 'tool.finished',
        callId,
        isError: result.isError,
        output: result.output,
        durationMs: 1,
      })
      if (result.isError) throw new Error(result.output)
      return result.output
    },
    async close() {
      // As a session left open a moment after its last write has them: the files' identities (preimages.ts).
      await identitiesTaken()
      await (await store)?.close()
      await writer.close()
    },
  }
}

/** A workspace file's text, as the rewind left it. */
export const fileText = (s: RecordedSession, rel: string): Promise<string> =>
  readFile(join(s.workspace, rel), 'utf8')

export const fileExists = (s: RecordedSession, rel: string): Promise<boolean> =>
  stat(join(s.workspace, rel)).then(
    () => true,
    () => false,
  )

/** The session's log as it is on disk now. */
export const sessionEvents = async (s: RecordedSession): Promise<SessionEvent[]> =>
  (await readSession(join(s.sessionsDir, `${s.sessionId}.jsonl`))).events

export type RecordedCall = Parameters<RecordedSession['call']>

/** A closed session of `calls`, made in order; its folders go onto `cleanup` for the test to remove. */
export async function recordCalls(calls: RecordedCall[], cleanup: string[]): Promise<RecordedSession> {
  const s = await recordSession()
  cleanup.push(s.sessionsDir, s.workspace)
  for (const call of calls) await s.call(...call)
  await s.close()
  return s
}
