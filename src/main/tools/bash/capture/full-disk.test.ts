import { spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * Issue 20, bad input: the disk fills up while a command's changes land. A real small file system: a 400 KiB
 * tmpfs, which an unprivileged user can mount in a user and mount namespace of its own (`unshare -Urm`), holds
 * the workspace; the landing (full-disk-child.ts) copies about 700 KiB into it and fails half-way. Nothing may
 * be left half-landed (not even a partly copied temporary file), and the error must say what happened.
 */
const child = fileURLToPath(new URL('./test-fixtures/full-disk-child.ts', import.meta.url))
const root = fileURLToPath(new URL('../../../../../', import.meta.url))

function namespacesWork(): string | null {
  const probe = spawnSync(
    'unshare',
    [
      '-Urm',
      'sh',
      '-c',
      'mount -t tmpfs -o size=64k tmpfs /mnt 2>&1 || mount -t tmpfs -o size=64k tmpfs /tmp',
    ],
    {
      encoding: 'utf8',
    },
  )
  return probe.status === 0
    ? null
    : `unshare -Urm with a tmpfs mount is not available here: ${probe.stderr}${probe.stdout}`
}
const unavailable = process.platform === 'linux' ? namespacesWork() : 'Linux only'
if (unavailable) console.warn(`Skipping the full-disk landing test: ${unavailable}`)

let base: string
beforeAll(async () => {
  const cache = join(process.cwd(), 'node_modules', '.cache')
  await mkdir(cache, { recursive: true })
  base = await realpath(await mkdtemp(join(cache, 'lanes-full-disk-')))
})
afterAll(async () => {
  await rm(base, { recursive: true, force: true })
})

describe.skipIf(unavailable !== null)('a landing on a disk that fills up', () => {
  it('is rolled back whole, leaves no partial file, and says the disk is full', { timeout: 60_000 }, () => {
    const mountPoint = join(base, 'ws')
    const scratch = join(base, 'scratch')
    spawnSync('mkdir', ['-p', mountPoint, scratch])
    const ran = spawnSync(
      'unshare',
      [
        '-Urm',
        'sh',
        '-c',
        'mount -t tmpfs -o size=400k tmpfs "$1" && exec "$2" --import tsx "$3" "$1" "$4"',
        'sh',
        mountPoint,
        process.execPath,
        child,
        scratch,
      ],
      { cwd: root, encoding: 'utf8' },
    )
    expect(ran.status, ran.stderr).toBe(0)
    const out = JSON.parse(ran.stdout.trim().split('\n').at(-1) as string) as {
      before: Record<string, string>
      after: Record<string, string>
      error?: string
      events: { type: string; outcome?: string }[]
    }
    // The workspace is exactly as before: no landed file, no temporary copy, the changed files' old contents.
    expect(out.after, JSON.stringify(out)).toEqual(out.before)
    expect(out.error).toMatch(/could not be landed .*(ENOSPC|no space left on device)/i)
    expect(out.error).toMatch(/put back as it was before the command\.$/)
    expect(out.events.filter((e) => e.type.startsWith('command.'))).toEqual([
      { type: 'command.landing' },
      { type: 'command.landed', outcome: 'rolled-back' },
    ])
  })
})
