import { closeSync, openSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, realpath, rename, rm, symlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { bwrapArgs } from './bwrap'
import { probeSandbox } from './launch'
import { SENSITIVE_PATH_TABLE } from '../../sensitive-paths.table'
import { MaskIndex, type Masks } from './masks'
import { sandboxEnv } from './policy'
import { quote, seatbeltProfile } from './seatbelt'

let root: string

beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'lanes-masks-')))
})

afterEach(async () => {
  await rm(root, { recursive: true, force: true })
})

const paths = (list: Masks['secrets']): string[] => list.map((p) => p.path.slice(root.length + 1)).sort()

describe('MaskIndex', () => {
  it('finds secret and protected paths at any depth with the one list, and pins .git config and hooks only', async () => {
    for (const dir of ['.git/hooks', '.git/objects', 'pkg/a/.aws', '.vscode', 'node_modules/x']) {
      await mkdir(join(root, dir), { recursive: true })
    }
    for (const file of ['.env', 'pkg/a/.env.local', 'pkg/.envrc', '.env.example', '.git/config', 'src.ts']) {
      await writeFile(join(root, file), 'x')
    }
    const masks = new MaskIndex(root).current()
    expect(paths(masks.secrets)).toEqual(['.env', 'pkg/.envrc', 'pkg/a/.aws', 'pkg/a/.env.local'])
    // .env.example is a template: protected, not secret. .git is pinned in part, so git can still write objects.
    expect(paths(masks.protected)).toEqual(['.env.example', '.git/config', '.git/hooks', '.vscode'])
  })

  it('masks every secret of the shared sensitive-path table, and nothing that is not one', async () => {
    for (const row of SENSITIVE_PATH_TABLE) {
      await mkdir(join(root, row.path, '..'), { recursive: true })
      await writeFile(join(root, row.path), 'x')
    }
    const masked = paths(new MaskIndex(root).current().secrets)
    // A secret is masked itself or through the secret folder that holds it (`.aws/`, `.config/gcloud/`).
    const hidden = (p: string): boolean => masked.some((m) => p === m || p.startsWith(`${m}/`))
    for (const row of SENSITIVE_PATH_TABLE) expect(hidden(row.path), row.path).toBe(row.secret)
  })

  it('protects the bare-repository names at a root without .git', async () => {
    await mkdir(join(root, 'objects'))
    await mkdir(join(root, 'refs'))
    await writeFile(join(root, 'HEAD'), 'ref: refs/heads/main\n')
    await writeFile(join(root, 'config'), '[core]\n')
    expect(paths(new MaskIndex(root).current().protected)).toEqual(['HEAD', 'config', 'objects', 'refs'])
    await mkdir(join(root, '.git'))
    expect(paths(new MaskIndex(root).current().protected)).toEqual([])
  })

  it('sees what changed since the last command, and forgets what is gone', async () => {
    const index = new MaskIndex(root)
    await mkdir(join(root, 'a', 'b'), { recursive: true })
    expect(index.current().secrets).toEqual([])
    await writeFile(join(root, 'a', 'b', '.env'), 'x')
    expect(paths(index.current().secrets)).toEqual(['a/b/.env'])
    await rm(join(root, 'a'), { recursive: true })
    expect(index.current().secrets).toEqual([])
  })

  it('masks the file a secret-named link points to inside the workspace, not a target outside', async () => {
    await writeFile(join(root, 'values.txt'), 'x')
    await symlink('values.txt', join(root, '.env'))
    await symlink('/etc/hostname', join(root, '.envrc'))
    expect(paths(new MaskIndex(root).current().secrets)).toEqual(['values.txt'])
  })
})

describe('MaskIndex.fresh (watched folders, before each command)', () => {
  const linux = process.platform === 'linux'
  /** A folder's times set a minute back: not "racy", so only a change of its mtime would make a `stat` read it. */
  const age = async (dir: string): Promise<Date> => {
    const old = new Date(Date.now() - 60_000)
    await utimes(dir, old, old)
    return old
  }

  it('sees a secret file made after the last look, also where its folder keeps its old mtime', async () => {
    await mkdir(join(root, 'a', 'b'), { recursive: true })
    const old = await age(join(root, 'a', 'b'))
    const index = new MaskIndex(root)
    expect((await index.fresh()).secrets).toEqual([])
    await writeFile(join(root, 'a', 'b', '.env'), 'x')
    // What a `stat` goes by is as it was: only the folder's watch knows (Linux); elsewhere the mtime moves.
    if (linux) await utimes(join(root, 'a', 'b'), old, old)
    expect(paths((await index.fresh()).secrets)).toEqual(['a/b/.env'])
    index.close()
  })

  it('reads a folder that another one of the same name replaced', async () => {
    await mkdir(join(root, 'pkg'))
    await writeFile(join(root, 'pkg', 'a.ts'), 'x')
    await age(join(root, 'pkg'))
    const index = new MaskIndex(root)
    expect((await index.fresh()).secrets).toEqual([])
    // Made whole elsewhere, then moved in: no event in it ever reaches the old folder's watch.
    const elsewhere = await mkdtemp(join(root, '..', 'lanes-masks-other-'))
    await writeFile(join(elsewhere, '.env'), 'x')
    await age(elsewhere)
    await rename(join(root, 'pkg'), join(elsewhere, '..', `${elsewhere.split('/').at(-1)}-old`))
    await rename(elsewhere, join(root, 'pkg'))
    expect(paths((await index.fresh()).secrets)).toEqual(['pkg/.env'])
    await rm(`${elsewhere}-old`, { recursive: true, force: true })
    index.close()
  })

  it('forgets a folder that is gone, and finds a secret in one moved in', async () => {
    await mkdir(join(root, 'a'))
    await writeFile(join(root, 'a', '.env'), 'x')
    const index = new MaskIndex(root)
    expect(paths((await index.fresh()).secrets)).toEqual(['a/.env'])
    await rm(join(root, 'a'), { recursive: true })
    expect((await index.fresh()).secrets).toEqual([])
    const elsewhere = await mkdtemp(join(root, '..', 'lanes-masks-in-'))
    await mkdir(join(elsewhere, 'deep'))
    await writeFile(join(elsewhere, 'deep', '.npmrc'), 'x')
    await rename(elsewhere, join(root, 'moved'))
    expect(paths((await index.fresh()).secrets)).toEqual(['moved/deep/.npmrc'])
    index.close()
  })

  it.runIf(linux)(
    "revalidates every folder by stat when the kernel's event queue may have overflowed (its events lost)",
    async () => {
      const queue = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim())
      if (!(queue <= 100_000)) return // a queue this large takes too long to fill in a unit test
      await mkdir(join(root, 'flood'))
      await mkdir(join(root, 'quiet'))
      await age(join(root, 'quiet'))
      const index = new MaskIndex(root)
      expect((await index.fresh()).secrets).toEqual([])
      // Without a turn of the event loop nothing is read off the queue: it fills, overflows, and the kernel drops
      // what comes after, the secret file's creation among it. Its folder's mtime moves: a `stat` sees it.
      for (let i = 0; i <= queue; i++) closeSync(openSync(join(root, 'flood', `f${i}`), 'w'))
      closeSync(openSync(join(root, 'quiet', '.env'), 'w'))
      expect(paths((await index.fresh()).secrets)).toEqual(['quiet/.env'])
      index.close()
    },
    30_000,
  )
})

describe('bwrapArgs', () => {
  const masks: Masks = {
    secrets: [
      { path: '/w/.env', kind: 'file' },
      { path: '/w/.aws', kind: 'dir' },
    ],
    protected: [{ path: '/w/.git/config', kind: 'file' }],
  }
  const context = { path: '/usr/bin:/home/u/.cargo/bin:/home/u', home: '/home/u' }

  it('unshares everything, binds the workspace read-only and masks secrets last', () => {
    const args = bwrapArgs({ mode: 'read-only', workspace: '/w', network: false }, masks, context)
    const text = args.join(' ')
    expect(args.slice(0, 6)).toEqual([
      '--unshare-all',
      '--unshare-user',
      '--disable-userns',
      '--die-with-parent',
      '--cap-drop',
      'ALL',
    ])
    expect(text).not.toContain('--share-net')
    expect(text).toContain('--ro-bind /w /w')
    expect(text).not.toContain('--bind /w /w')
    expect(text).toContain('--ro-bind /dev/null /w/.env')
    expect(text).toContain('--tmpfs /w/.aws --remount-ro /w/.aws')
    // Read-only already: protected paths need no pin.
    expect(text).not.toContain('/w/.git/config')
    expect(text.indexOf('--ro-bind /w /w')).toBeLessThan(text.indexOf('/w/.env'))
    // The user's home is never bound, not even through PATH; a tool folder inside it is.
    expect(args.filter((a) => a === '/home/u')).toEqual([])
  })

  it('binds the workspace writable for an approved command, pins protected paths, shares the network on request', () => {
    const args = bwrapArgs({ mode: 'workspace-write', workspace: '/w', network: true }, masks, context)
    const text = args.join(' ')
    expect(text).toContain('--bind /w /w')
    expect(text).toContain('--ro-bind /w/.git/config /w/.git/config')
    expect(text).toContain('--share-net')
    expect(text.indexOf('--bind /w /w')).toBeLessThan(text.indexOf('/w/.git/config'))
  })

  it('for an MCP server given no workspace: neither the workspace nor its masks, its install folder, no status report', () => {
    const spec = {
      mode: 'no-workspace' as const,
      workspace: '/w',
      network: false,
      readable: ['/opt/srv/node_modules'],
      statusReport: false,
    }
    const args = bwrapArgs(spec, masks, context)
    const text = args.join(' ')
    expect(text).not.toMatch(/ \/w( |$)/)
    expect(text).not.toContain('/w/.env')
    expect(text).toContain('--ro-bind-try /opt/srv/node_modules /opt/srv/node_modules')
    expect(text).toContain('--chdir /tmp/home')
    expect(text).not.toContain('--json-status-fd')
  })
})

describe('seatbeltProfile', () => {
  const masks: Masks = {
    secrets: [
      { path: '/Users/u/p/.env', kind: 'file' },
      { path: '/Users/u/p/.aws', kind: 'dir' },
    ],
    protected: [{ path: '/Users/u/p/.git/hooks', kind: 'dir' }],
  }
  const context = { tmp: '/private/var/folders/x/T/lanes-sandbox-1', pathFolders: ['/opt/homebrew/bin'] }

  it('denies by default, reads the system and the workspace, writes only the private temp folder', () => {
    const profile = seatbeltProfile(
      { mode: 'read-only', workspace: '/Users/u/p', network: false },
      masks,
      context,
    )
    const lines = profile.trim().split('\n')
    expect(lines.slice(0, 2)).toEqual(['(version 1)', '(deny default)'])
    expect(profile).toContain('(allow file-read* (subpath "/Users/u/p"))')
    expect(profile).toContain('(subpath "/opt/homebrew/bin")')
    expect(profile).not.toMatch(/allow file-write\* \(subpath "\/Users\/u\/p"\)/)
    expect(profile).not.toContain('network')
    // Secrets are denied after the workspace is allowed: in Seatbelt the last matching rule wins.
    const secretLine = lines.findIndex((l) => l.includes('"/Users/u/p/.env"'))
    expect(lines[secretLine]).toBe(
      '(deny file-read* file-write* (literal "/Users/u/p/.env") (subpath "/Users/u/p/.aws"))',
    )
    expect(secretLine).toBe(lines.length - 1)
  })

  it('lets an approved command write the workspace except protected paths, and reach the network on request', () => {
    const profile = seatbeltProfile(
      { mode: 'workspace-write', workspace: '/Users/u/p', network: true },
      masks,
      context,
    )
    expect(profile).toContain('(allow file-write* (subpath "/Users/u/p"))')
    expect(profile).toContain('(deny file-write* (subpath "/Users/u/p/.git/hooks"))')
    expect(profile).toContain('(allow network* system-socket)')
  })

  it('quotes paths so a name cannot end the string', () => {
    expect(quote('/a "b"\\c')).toBe('"/a \\"b\\"\\\\c"')
  })
})

describe('sandboxEnv', () => {
  it('keeps only the allowlist, whatever the names', () => {
    const env = sandboxEnv(
      {
        PATH: '/usr/bin',
        LANG: 'de_DE.UTF-8',
        LC_ALL: 'C',
        TZ: 'Europe/Berlin',
        HOME: '/home/u',
        PGPASSWORD: 'x',
        DATABASE_URL: 'postgres://u:p@h/db',
        OPENAI_KEY: 'x',
        SECRET_KEY_BASE: 'x',
        SSH_AUTH_SOCK: '/tmp/agent',
        NODE_OPTIONS: '--require evil.js',
      },
      { home: '/tmp/home', tmp: '/tmp' },
    )
    expect(env).toMatchObject({ PATH: '/usr/bin', LANG: 'de_DE.UTF-8', LC_ALL: 'C', TZ: 'Europe/Berlin' })
    expect(env.HOME).toBe('/tmp/home')
    for (const name of [
      'PGPASSWORD',
      'DATABASE_URL',
      'OPENAI_KEY',
      'SECRET_KEY_BASE',
      'SSH_AUTH_SOCK',
      'NODE_OPTIONS',
    ])
      expect(env[name]).toBeUndefined()
    expect(env).toMatchObject({ GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' })
  })
})

describe('probeSandbox', () => {
  it('says why there is no sandbox and how to get one', () => {
    const missing = probeSandbox('linux', join(root, 'nothing-here'))
    expect(missing).toMatchObject({ available: false })
    expect(!missing.available && missing.reason).toMatch(
      /bubblewrap is not installed.*apt install bubblewrap/,
    )
    const windows = probeSandbox('win32', '')
    expect(!windows.available && windows.reason).toMatch(/every command asks first/)
  })
})
