import { spawn } from 'node:child_process'
import { cp, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { recordSession, type RecordedSession } from '../../session/test-fixtures/recorded-session'

/**
 * The rewind race and crash tests' world: the rewind child process (rewind-child.ts) run and killed at chosen
 * moments, and a session of 2N files to rewind, with where its files stand.
 */

const CHILD = fileURLToPath(new URL('./rewind-child.ts', import.meta.url))

export interface Child {
  code: number | null
  signal: string | null
  stdout: string
  stderr: string
}

/**
 * Runs the child; `onLine` hears each line of its output (and may kill it). `openFiles`: its limit of open
 * files (`ulimit -n`), as low as a desktop's usual 1024 or lower.
 */
export function child(
  args: string[],
  onLine?: (line: string, kill: () => void) => void,
  opts: { openFiles?: number } = {},
): Promise<Child> {
  return new Promise((resolve, reject) => {
    const node = [process.execPath, '--import', 'tsx', CHILD, ...args]
    const [command, ...rest] =
      opts.openFiles === undefined
        ? node
        : ['sh', '-c', `ulimit -n ${opts.openFiles} && exec "$@"`, 'sh', ...node]
    const p = spawn(command as string, rest, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    p.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d
      for (const line of d.split('\n').filter(Boolean)) onLine?.(line, () => p.kill('SIGKILL'))
    })
    p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    p.once('error', reject)
    p.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}

export const N = 100
const original = (i: number) => `file ${i}\n${'a line of the file\n'.repeat(40)}end of file\n`
const edited = (i: number) => original(i).replace('end of file\n', 'CHANGED\n')

/**
 * 2N files: turn 1 creates f0..f(N-1); turn 2 (from call e0) edits each of them and creates g0..g(N-1). A
 * rewind to e0 restores N files and removes N.
 */
export async function manyFiles(cleanup: string[]): Promise<RecordedSession> {
  const s = await recordSession()
  cleanup.push(s.sessionsDir, s.workspace)
  for (let i = 0; i < N; i++)
    await s.call(1, `w${i}`, 'write_file', { path: `f${i}.txt`, content: original(i) })
  for (let i = 0; i < N; i++) {
    await s.call(2, `e${i}`, 'edit_file', {
      path: `f${i}.txt`,
      old_string: 'end of file\n',
      new_string: 'CHANGED\n',
    })
    await s.call(2, `g${i}`, 'write_file', { path: `sub/g${i}.txt`, content: `new ${i}\n` })
  }
  await s.close()
  return s
}

/** Where the 2N files stand: all before the rewind, all rewound, or (the failure) a mix. */
export async function standing(s: RecordedSession, except?: string): Promise<'before' | 'rewound' | string> {
  let before = 0
  let rewound = 0
  const odd: string[] = []
  for (let i = 0; i < N; i++) {
    const f = await readFile(join(s.workspace, `f${i}.txt`), 'utf8').catch(() => null)
    const g = await readFile(join(s.workspace, `sub/g${i}.txt`), 'utf8').catch(() => null)
    if (f === edited(i)) before++
    else if (f === original(i)) rewound++
    else odd.push(`f${i}.txt`)
    if (`sub/g${i}.txt` === except) {
      before++
      rewound++
    } else if (g === `new ${i}\n`) before++
    else if (g === null) rewound++
    else odd.push(`sub/g${i}.txt`)
  }
  if (before === 2 * N) return 'before'
  if (rewound === 2 * N) return 'rewound'
  return `a mix: ${before} before, ${rewound} rewound, torn: ${odd.join(', ') || 'none'}`
}

/** The session and its workspace copied aside; the returned function puts them back as they were. */
export async function keptAside(s: RecordedSession, cleanup: string[]): Promise<() => Promise<void>> {
  const snapshot = { ws: `${s.workspace}.snap`, sessions: `${s.sessionsDir}.snap` }
  cleanup.push(snapshot.ws, snapshot.sessions)
  await cp(s.workspace, snapshot.ws, { recursive: true })
  await cp(s.sessionsDir, snapshot.sessions, { recursive: true })
  return async () => {
    await rm(s.workspace, { recursive: true, force: true })
    await rm(s.sessionsDir, { recursive: true, force: true })
    await cp(snapshot.ws, s.workspace, { recursive: true })
    await cp(snapshot.sessions, s.sessionsDir, { recursive: true })
  }
}

/** Runs `args` uncut; returns how long it took from printing `line` to printing the next one (its end). */
export async function timedFrom(args: string[], line: string): Promise<{ ms: number; out: Child }> {
  let at = 0
  let ms = 0
  const out = await child(args, (l) => {
    if (l === line) at = performance.now()
    else if (at > 0 && ms === 0) ms = performance.now() - at
  })
  return { ms, out }
}
