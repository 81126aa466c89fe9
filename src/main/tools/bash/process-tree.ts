import { readdir, readFile } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'

/**
 * Finding and ending everything a command started (pty-runner.ts): its process group and session, and the
 * descendants that left them, read from /proc on Linux.
 */

interface ProcInfo {
  pid: number
  ppid: number
  pgid: number
  sid: number
  startTime: string
  zombie: boolean
}

/**
 * Kills a command's whole tree: its process group and session, and descendants that left them
 * (setsid, setpgid) while their parent still lived. SIGTERM (and SIGCONT, so stopped processes can act on
 * it), a grace for clean exits, then SIGKILL until nothing is left. Processes are remembered with their
 * start time, so an orphan reparented to init is still recognised and a recycled pid never is.
 * Linux reads /proc; elsewhere only the process group is known.
 */
export async function killProcessTree(rootPid: number, graceMs: number): Promise<void> {
  const known = new Map<number, string>()
  const members = async (): Promise<number[] | null> => {
    const table = await readProcessTable()
    if (!table) return null
    const byPid = new Map(table.map((p) => [p.pid, p]))
    let grew = true
    while (grew) {
      grew = false
      for (const p of table) {
        if (known.get(p.pid) === p.startTime) continue
        const ours =
          p.pid === rootPid ||
          p.pgid === rootPid ||
          p.sid === rootPid ||
          (known.has(p.ppid) && known.get(p.ppid) === byPid.get(p.ppid)?.startTime)
        if (ours && p.pid !== process.pid && p.pid > 1) {
          known.set(p.pid, p.startTime)
          grew = true
        }
      }
    }
    return table.filter((p) => !p.zombie && known.get(p.pid) === p.startTime).map((p) => p.pid)
  }
  const signalAll = (pids: number[] | null, signal: NodeJS.Signals): void => {
    trySignal(-rootPid, signal)
    for (const pid of pids ?? []) trySignal(pid, signal)
  }

  const initial = await members()
  signalAll(initial, 'SIGTERM')
  signalAll(initial, 'SIGCONT')
  const deadline = performance.now() + graceMs
  while (performance.now() < deadline) {
    await delay(Math.min(50, Math.max(1, deadline - performance.now())))
    const alive = await members()
    if (alive ? alive.length === 0 : !groupExists(rootPid)) return
  }
  // A process may fork between a scan and the kill: repeat until a scan finds nothing.
  for (let round = 0; round < 10; round++) {
    const alive = await members()
    if (alive ? alive.length === 0 : !groupExists(rootPid)) return
    signalAll(alive, 'SIGKILL')
    await delay(20)
  }
}

function trySignal(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // ESRCH: already gone. EPERM: not ours to kill.
  }
}

/** True while any process, zombies included, is in the group. */
export function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function readProcessTable(): Promise<ProcInfo[] | null> {
  let names: string[]
  try {
    names = await readdir('/proc')
  } catch {
    return null
  }
  const rows = await Promise.all(
    names
      .filter((name) => /^\d+$/.test(name))
      .map(async (name) => {
        try {
          return parseStat(await readFile(`/proc/${name}/stat`, 'utf8'))
        } catch {
          return null // exited meanwhile
        }
      }),
  )
  return rows.filter((row): row is ProcInfo => row !== null)
}

/** `pid (comm) state ppid pgrp session ... starttime ...`; comm may hold spaces and parentheses. */
function parseStat(line: string): ProcInfo | null {
  const close = line.lastIndexOf(')')
  if (close === -1) return null
  const fields = line.slice(close + 2).split(' ')
  const state = fields[0] ?? ''
  return {
    pid: Number.parseInt(line, 10),
    ppid: Number(fields[1]),
    pgid: Number(fields[2]),
    sid: Number(fields[3]),
    startTime: fields[19] ?? '',
    zombie: state === 'Z' || state === 'X',
  }
}
