import { execFileSync } from 'node:child_process'
import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'

// A folder the scan cannot read may hold a secret file that no scan has seen, nor the redactor its values. It is
// hidden whole from commands, and once a `chmod` (which moves neither its mtime nor its watch) opens it, the
// next look reads it and hides the secret file in it instead.

const fixture = join(import.meta.dirname, 'test-fixtures', 'unreadable-folder.ts')
const asRoot = process.getuid?.() === 0
let root: string

beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'lanes-masks-unreadable-')))
})

afterEach(async () => {
  execFileSync('chmod', ['-R', 'u+rwx', root])
  await rm(root, { recursive: true, force: true })
})

it.skipIf(process.platform !== 'linux')(
  'an unreadable folder is masked whole, and what it holds once a chmod opens it',
  () => {
    // Root reads any folder whatever its mode; in a user namespace of its own it no longer can.
    const command = asRoot ? 'unshare' : process.execPath
    const args = [...(asRoot ? ['-U', process.execPath] : []), '--import', 'tsx', fixture, root]
    const seen = JSON.parse(execFileSync(command, args, { encoding: 'utf8' })) as Record<string, string[]>
    expect(seen.lockedCurrent).toEqual(['locked:dir'])
    expect(seen.lockedFresh).toEqual(['locked:dir'])
    expect(seen.openedFresh).toEqual(['locked/.env:file'])
    expect(seen.openedCurrent).toEqual(['locked/.env:file'])
  },
)
