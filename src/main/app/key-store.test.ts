import { mkdtemp, readFile, realpath, rm, stat, writeFile, chmod } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createKeyStore, keyFileOf, osKeychainEntry, type KeychainEntry } from './key-store'

const KEY = 'sk-ant-api03-TEST-0123456789abcdefghij'

/** An in-memory keychain: the OS ones (Keychain, Credential Manager, Secret Service) cannot run here. */
function memoryKeychain(): KeychainEntry & { value: string | null } {
  const entry = {
    value: null as string | null,
    get: () => entry.value,
    set: (secret: string) => void (entry.value = secret),
    delete: () => void (entry.value = null),
  }
  return entry
}

/** A keychain like Linux without a Secret Service: every call fails. */
const brokenKeychain: KeychainEntry = {
  get: () => {
    throw new Error("Couldn't access platform storage: AccessDenied")
  },
  set: () => {
    throw new Error("Couldn't access platform storage: AccessDenied")
  },
  delete: () => {
    throw new Error("Couldn't access platform storage: AccessDenied")
  },
}

describe('the API key store', () => {
  let dir: string
  let file: string
  beforeEach(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'lanes-keys-')))
    file = keyFileOf(join(dir, 'data'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('keeps the key in the keychain when one works, and no copy in a file', async () => {
    const keychain = memoryKeychain()
    const keys = createKeyStore({ file, keychain })
    expect(await keys.storage()).toEqual({ kind: 'keychain', file: null })
    // The probe that found it working left nothing behind.
    expect(keychain.value).toBeNull()
    expect(await keys.set(KEY)).toEqual({ kind: 'keychain', file: null })
    expect(keychain.value).toBe(KEY)
    expect(await keys.get()).toBe(KEY)
    await expect(stat(file)).rejects.toThrow()
    await keys.clear()
    expect(keychain.value).toBeNull()
    expect(await keys.get()).toBeNull()
  })

  it('falls back to a file only the user can read when the keychain fails (no Secret Service)', async () => {
    const keys = createKeyStore({ file, keychain: brokenKeychain })
    expect(await keys.storage()).toEqual({ kind: 'file', file })
    expect(await keys.set(KEY)).toEqual({ kind: 'file', file })
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect((await stat(join(dir, 'data'))).mode & 0o777).toBe(0o700)
    expect(await keys.get()).toBe(KEY)
    // A second store over the same file (the next start) finds it.
    expect(await createKeyStore({ file, keychain: null }).get()).toBe(KEY)
    await keys.clear()
    await expect(stat(file)).rejects.toThrow()
    expect(await keys.get()).toBeNull()
  })

  it('replaces the file whole, and closes a file someone opened to others', async () => {
    const keys = createKeyStore({ file, keychain: null })
    await keys.set('sk-ant-first-key-000000000000')
    await chmod(file, 0o644)
    await keys.set(KEY)
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ plain: KEY })
  })

  it('seals the file with the OS secret store where the app has one: no plain key on disk', async () => {
    const sealer = {
      encrypt: (plain: string) => Buffer.from(plain).reverse().toString('base64'),
      decrypt: (sealed: string) => Buffer.from(sealed, 'base64').reverse().toString(),
    }
    const keys = createKeyStore({ file, keychain: null, sealer })
    expect(await keys.set(KEY)).toEqual({ kind: 'encrypted-file', file })
    expect(await readFile(file, 'utf8')).not.toContain(KEY)
    expect(await keys.get()).toBe(KEY)
  })

  it('moves a key from the file to the keychain once the keychain works, leaving no copy behind', async () => {
    await createKeyStore({ file, keychain: null }).set('sk-ant-old-key-0000000000000')
    const keychain = memoryKeychain()
    const keys = createKeyStore({ file, keychain })
    await keys.set(KEY)
    await expect(stat(file)).rejects.toThrow()
    expect(await keys.get()).toBe(KEY)
  })

  it('ignores a damaged key file instead of failing', async () => {
    const keys = createKeyStore({ file, keychain: null })
    await keys.set(KEY)
    await writeFile(file, '{not json')
    expect(await keys.get()).toBeNull()
  })

  it("works with this machine's real keychain, whichever way it goes", async () => {
    // On a desktop this is the OS keychain; on a server without a Secret Service it falls back to the file.
    const keys = createKeyStore({ file, keychain: osKeychainEntry(dir) })
    const where = await keys.set(KEY)
    try {
      expect(['keychain', 'file']).toContain(where.kind)
      expect(await keys.get()).toBe(KEY)
      expect((await keys.storage()).kind).toBe(where.kind)
    } finally {
      await keys.clear()
    }
    expect(await keys.get()).toBeNull()
  })
})
