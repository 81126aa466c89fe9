import { execFileSync } from 'node:child_process'
import { chmod, lstat, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { captureSupport } from '../tools/bash/capture/overlay'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { commandRuns } from './test-fixtures/command-runs'

/**
 * Issue 20 against a hostile model, end to end: `lanes run --approve all` (headless, so held changes are discarded)
 * runs a command that plants a way out of the workspace for the user's own tools; none of it lands.
 */
const overlay = sandboxSupport().available && captureSupport().mode === 'overlay'
if (!overlay) console.warn(`Skipping the command capture attack tests: ${JSON.stringify(captureSupport())}`)

const { prepare } = commandRuns('lanes-capture-attacks-cli-')

const git = (workspace: string, ...args: string[]) =>
  execFileSync('git', ['-C', workspace, '-c', 'user.email=a@b', '-c', 'user.name=a', ...args], {
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  })

describe.skipIf(!overlay)('a hostile command through lanes run', { timeout: 60_000 }, () => {
  it('lands neither a link git would write through nor a set-ID program', async () => {
    const t = await prepare({ 'a.txt': 'a\n' }, [
      'set -e',
      'ln -sfn ../../rc .git/COMMIT_EDITMSG',
      'cp /bin/true tool && chmod 4755 tool',
      'echo b > a.txt',
    ])
    git(t.workspace, 'init', '-q')
    git(t.workspace, 'add', 'a.txt')
    git(t.workspace, 'commit', '-qm', 'one')
    const ran = await t.run()
    expect(ran.code, ran.stderr).toBe(0)
    const held = ran.events.find((e) => e.type === 'command.held')
    expect(held).toMatchObject({ landed: false, count: 1, paths: [{ relPath: '.git/COMMIT_EDITMSG' }] })
    expect((await lstat(join(t.workspace, '.git/COMMIT_EDITMSG'))).isSymbolicLink()).toBe(false)
    expect((await lstat(join(t.workspace, 'tool'))).mode & 0o7777).toBe(0o755)
    git(t.workspace, 'commit', '-qam', 'two')
    await expect(lstat(join(t.root, 'rc'))).rejects.toThrow()
  })

  it('holds a change to the folder the repository’s config names for its hooks (core.hooksPath)', async () => {
    const planted = 'PLANTED'
    const t = await prepare({ 'a.txt': 'a\n', 'scripts/hooks/pre-commit': '#!/bin/sh\nexit 0\n' }, [
      'set -e',
      `printf '#!/bin/sh\\ntouch ../${planted}\\n' > scripts/hooks/pre-commit`,
      `printf '#!/bin/sh\\ntouch ../${planted}\\n' > scripts/hooks/post-commit && chmod +x scripts/hooks/post-commit`,
      'echo b > a.txt',
    ])
    git(t.workspace, 'init', '-q')
    git(t.workspace, 'config', 'core.hooksPath', 'scripts/hooks')
    await chmod(join(t.workspace, 'scripts/hooks/pre-commit'), 0o755)
    const ran = await t.run()
    expect(ran.code, ran.stderr).toBe(0)
    const held = ran.events.find((e) => e.type === 'command.held')
    expect(held?.type === 'command.held' && held.paths.map((p) => p.relPath).sort()).toEqual([
      'scripts/hooks/post-commit',
      'scripts/hooks/pre-commit',
    ])
    expect(await readFile(join(t.workspace, 'a.txt'), 'utf8')).toBe('b\n')
    git(t.workspace, 'add', '.')
    git(t.workspace, 'commit', '-qm', 'user')
    await expect(lstat(join(t.root, planted))).rejects.toThrow()
  })
})
