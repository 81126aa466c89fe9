/**
 * A real process running the real session writer, for the tests that kill it (log.durability.test.ts) or
 * starve it of disk (log.test.ts). Run with `node --import tsx`.
 *
 *   crash <sessionsDir> <id,id,...>
 *     prints `loaded`, waits for `go` on stdin, opens (or reopens) every session, prints `ready`, then
 *     appends and syncs "turns" forever, printing `synced <id> <seq>` after each sync, until it is killed.
 *   disk-full <sessionsDir> <id>
 *     appends 40 KB events until the file size limit (ulimit -f) refuses one, then a small one, prints a
 *     JSON report and exits without closing the writer.
 */
import { createInterface } from 'node:readline'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { openSessionWriter, sessionPaths, type SessionWriter } from '../log'

/**
 * The chunk of the tool.output event with this seq: deterministic, so the parent can check every line's
 * bytes.
 */
export function payloadFor(seq: number): string {
  // Mostly a few KB, now and then 256 KB so that some kills land in the middle of a write.
  const size = seq % 17 === 0 ? 256_000 : (seq * 7919) % 6000
  const unit = `${seq}:abcdefghijklmnopqrstuvwxyz0123456789-é✓-`
  return unit.repeat(Math.ceil(size / unit.length) + 1).slice(0, size + unit.length)
}

async function open(dir: string, id: string): Promise<SessionWriter> {
  const create = !existsSync(sessionPaths(dir, id).log)
  const writer = await openSessionWriter(dir, id, { create })
  if (writer.nextSeq === 0) {
    await writer.append({
      type: 'session.created',
      sessionId: id,
      workspace: '/tmp/lanes-durability',
      settings: { model: 'test', scheduler: 'batch', siblingSkip: true, demo: true },
    })
  }
  return writer
}

async function crash(dir: string, ids: string[]): Promise<void> {
  console.log('loaded')
  const lines = createInterface({ input: process.stdin })
  await new Promise<void>((resolve) => lines.once('line', () => resolve()))
  const writers = await Promise.all(ids.map((id) => open(dir, id)))
  console.log('ready')
  await Promise.all(
    writers.map(async (writer) => {
      let turn = 0
      for (;;) {
        turn++
        const appends: Promise<unknown>[] = []
        const count = 1 + ((turn * 31 + writer.nextSeq) % 9)
        for (let i = 0; i < count; i++) {
          appends.push(
            writer.append({ type: 'tool.output', callId: 'c1', chunk: payloadFor(writer.nextSeq) }),
          )
        }
        await Promise.all(appends)
        await writer.sync()
        console.log(`synced ${writer.sessionId} ${writer.nextSeq - 1}`)
      }
    }),
  )
}

async function diskFull(dir: string, id: string): Promise<void> {
  const writer = await open(dir, id)
  const big = 'x'.repeat(40 * 1024)
  let accepted = 0
  let failure = ''
  for (let i = 0; i < 100 && !failure; i++) {
    try {
      await writer.append({ type: 'tool.output', callId: 'c1', chunk: big })
      accepted++
    } catch (e) {
      failure = (e as Error).message
    }
  }
  const seqAfterFailure = writer.nextSeq
  // A batch (three appends in one tick) that cannot fit either: all three fail, numbering is handed back.
  const batch = await Promise.allSettled(
    [1, 2, 3].map(() => writer.append({ type: 'tool.output', callId: 'c1', chunk: big })),
  )
  const seqAfterBatch = writer.nextSeq
  const small = await writer.append({ type: 'tool.output', callId: 'c1', chunk: 'small' }).then(
    (event) => event.seq,
    (e: Error) => e.message,
  )
  console.log(
    JSON.stringify({
      accepted,
      failure,
      seqAfterFailure,
      batchRejected: batch.filter((r) => r.status === 'rejected').length,
      seqAfterBatch,
      small,
    }),
  )
  // Without close(): the exit hook must still release the lock.
  process.exit(0)
}

// Only when run as a script: the parent test imports payloadFor from here.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [mode, dir, ids] = process.argv.slice(2)
  if (mode === 'crash' && dir && ids) {
    void crash(dir, ids.split(','))
  } else if (mode === 'disk-full' && dir && ids) {
    void diskFull(dir, ids)
  } else {
    console.error('usage: log-writer-child.ts crash|disk-full <sessionsDir> <ids>')
    process.exitCode = 2
  }
}
