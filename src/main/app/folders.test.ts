import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { join, sep } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  listFolder,
  openWorkspace,
  RecentFolders,
  recordedWorkspace,
  resolveWorkspace,
  tooBroadReason,
} from './folders'

describe('the folder browser', () => {
  let base: string
  beforeAll(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'lanes-folders-')))
    for (const dir of ['b-project', 'a-project', 'project10', 'project9', '.hidden'])
      await mkdir(join(base, dir))
    await writeFile(join(base, 'notes.txt'), 'not a folder')
    await symlink(join(base, 'a-project'), join(base, 'link-to-a'))
    await symlink(join(base, 'nowhere'), join(base, 'dangling'))
  })
  afterAll(async () => {
    await rm(base, { recursive: true, force: true })
  })

  it('lists subfolders in natural order, without files, hidden folders or dangling links', async () => {
    const listed = await listFolder(base, [])
    expect(listed.ok).toBe(true)
    if (!listed.ok) return
    expect(listed.value.folders.map((f) => f.name)).toEqual([
      'a-project',
      'b-project',
      'link-to-a',
      'project9',
      'project10',
    ])
    expect(listed.value.folders[0]).toEqual({ name: 'a-project', path: join(base, 'a-project') })
    expect(listed.value.truncated).toBe(false)
  })

  it('takes ~ and ~/... as the home folder, as a terminal does; ~user and a ~ inside a path stay as typed', async () => {
    const home = await realpath(homedir())
    expect(await resolveWorkspace('~')).toEqual({ ok: true, value: expect.objectContaining({ path: home }) })
    const listed = await listFolder('~', [])
    expect(listed.ok && listed.value.path).toBe(home)
    const inside = await realpath(await mkdtemp(join(homedir(), '.lanes-tilde-')))
    try {
      const relative = inside.slice(home.length + 1)
      expect(await resolveWorkspace(`~/${relative}`)).toEqual({
        ok: true,
        value: expect.objectContaining({ path: inside }),
      })
    } finally {
      await rm(inside, { recursive: true, force: true })
    }
    expect((await resolveWorkspace('~no-such-user-lanes')).ok).toBe(false)
    expect((await resolveWorkspace(join(base, '~'))).ok).toBe(false)
  })

  it('gives breadcrumbs from the root and the way up', async () => {
    const listed = await listFolder(join(base, 'a-project'), [])
    if (!listed.ok) throw new Error(listed.error)
    expect(listed.value.parent).toBe(base)
    expect(listed.value.crumbs[0]).toEqual({ name: sep, path: sep })
    expect(listed.value.crumbs.at(-1)).toEqual({ name: 'a-project', path: join(base, 'a-project') })
    const parts = join(base, 'a-project').split(sep).slice(1)
    expect(listed.value.crumbs.map((c) => c.path)).toEqual([
      sep,
      ...parts.map((_, n) => sep + parts.slice(0, n + 1).join(sep)),
    ])
    const root = await listFolder(sep, [])
    if (!root.ok) throw new Error(root.error)
    expect(root.value.parent).toBeNull()
    expect(root.value.crumbs).toEqual([{ name: sep, path: sep }])
  })

  it('starts at home without a path, and refuses a file or a missing folder as a value', async () => {
    const home = await listFolder(undefined, [])
    expect(home).toMatchObject({ ok: true, value: { path: await realpath(homedir()), home: homedir() } })
    expect(await listFolder(join(base, 'notes.txt'), [])).toMatchObject({ ok: false, code: 'invalid-input' })
    expect(await listFolder(join(base, 'gone'), [])).toMatchObject({ ok: false, code: 'not-found' })
  })

  it('remembers recent folders newest first, without duplicates, and forgets ones that are gone', async () => {
    const recent = new RecentFolders(join(base, 'data', 'recent-folders.json'))
    expect(await recent.list()).toEqual([])
    await recent.add({ path: join(base, 'a-project'), name: 'a-project' })
    await recent.add({ path: join(base, 'b-project'), name: 'b-project' })
    await recent.add({ path: join(base, 'a-project'), name: 'a-project' })
    expect((await recent.list()).map((f) => f.name)).toEqual(['a-project', 'b-project'])
    await rename(join(base, 'b-project'), join(base, 'b-moved'))
    expect((await recent.list()).map((f) => f.name)).toEqual(['a-project'])
    await rename(join(base, 'b-moved'), join(base, 'b-project'))
  })

  it("accepts a session's recorded folder only while it is still that folder", async () => {
    expect(await recordedWorkspace(join(base, 'a-project'))).toMatchObject({ ok: true })
    // The same path now a link elsewhere is not the folder the session worked in.
    expect(await recordedWorkspace(join(base, 'link-to-a'))).toMatchObject({ ok: false, code: 'not-found' })
    const gone = await recordedWorkspace(join(base, 'gone'))
    expect(gone).toMatchObject({ ok: false, code: 'not-found' })
    expect((gone as { error: string }).error).toContain('which is gone')
  })
})

describe('opening a folder that exposes everything', () => {
  it('refuses the whole disk, the home folder and a folder above it, saying why', async () => {
    for (const folder of ['/', homedir(), join(homedir(), '..')]) {
      const opened = await openWorkspace(folder)
      expect(opened.ok, folder).toBe(false)
      if (opened.ok) continue
      expect(opened.code).toBe('invalid-input')
      expect(opened.error).toMatch(/search and read everything in it/)
    }
    expect(tooBroadReason('/home/ann', '/home/ann')).toMatch(/your home folder/)
    expect(tooBroadReason('/home', '/home/ann')).toMatch(/holds your home folder/)
    expect(tooBroadReason('/home/ann/project', '/home/ann')).toBeNull()
    expect(tooBroadReason('/home/annex', '/home/ann')).toBeNull()
  })

  it('opens a project folder inside the home folder or elsewhere', async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), 'lanes-open-')))
    try {
      expect(await openWorkspace(dir)).toMatchObject({ ok: true, value: { path: dir } })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
