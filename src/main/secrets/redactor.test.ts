import { describe, expect, it } from 'vitest'
import { seededInts } from '../test-fixtures/seeded'
import { markerFor, RedactTextStream, Redactor } from './redactor'
import { extractSecretValues, isSecretLike, configUrlCredentials } from './secret-values'

const ENV = markerFor('.env')

describe('Redactor', () => {
  it('hides every known value, wherever it stands in the text', () => {
    const r = new Redactor([
      { value: 'sk-live-4f9a8b7c6d5e', source: '.env' },
      { value: 'ghp_abcdef0123456789', source: '.git/config' },
    ])
    expect(r.redactText('key=sk-live-4f9a8b7c6d5e; token ghp_abcdef0123456789 end')).toBe(
      `key=${ENV}; token ${markerFor('.git/config')} end`,
    )
    expect(r.redactText('sk-live-4f9a8b7c6d5esk-live-4f9a8b7c6d5e')).toBe(`${ENV}${ENV}`)
  })

  it('returns the very same string when nothing matches', () => {
    const r = new Redactor([{ value: 'sk-live-4f9a8b7c6d5e', source: '.env' }])
    const text = 'nothing secret here, sk-live-4f9a8b7c6d5 is one short'
    expect(r.redactText(text)).toBe(text)
  })

  it('merges overlapping values so no part of either shows', () => {
    const r = new Redactor([
      { value: 'AAAA1111BBBB', source: '.env' },
      { value: 'BBBB2222CCCC', source: '.env' },
    ])
    expect(r.redactText('xAAAA1111BBBB2222CCCCy')).toBe(`x${ENV}y`)
  })

  it('prefers the longest value at one position', () => {
    const r = new Redactor([
      { value: 'token123', source: 'a' },
      { value: 'token123-extended-value', source: 'b' },
    ])
    expect(r.redactText('[token123-extended-value]')).toBe(`[${markerFor('b')}]`)
  })

  it('handles values outside ASCII by their UTF-8 bytes', () => {
    const r = new Redactor([{ value: 'pässwörd-42-ü', source: '.env' }])
    expect(r.redactText('é pässwörd-42-ü é')).toBe(`é ${ENV} é`)
  })

  it('ignores values under the length floor', () => {
    const r = new Redactor([{ value: 'short1', source: '.env' }])
    expect(r.size).toBe(0)
    expect(r.redactText('short1 short1')).toBe('short1 short1')
  })

  it('catches a value split anywhere across stream chunks', () => {
    const secret = 'AKIAIOSFODNN7EXAMPLE-wJalrXUtnFEMI'
    const r = new Redactor([
      { value: secret, source: '.aws/credentials' },
      { value: 'another-Secret-99', source: '.env' },
    ])
    const text = `line one\n${secret}\nmiddle another-Secret-99 and ${secret}${secret}\nend`
    const expected = r.redactText(text)
    expect(expected).not.toContain(secret)
    const bytes = Buffer.from(text)
    const rand = seededInts(7)
    for (let trial = 0; trial < 300; trial++) {
      const stream = r.byteStream()
      const out: Buffer[] = []
      let at = 0
      while (at < bytes.length) {
        const n = 1 + (rand() % 12)
        out.push(stream.push(bytes.subarray(at, at + n)))
        at += n
      }
      out.push(stream.end())
      expect(Buffer.concat(out).toString()).toBe(expected)
    }
  })

  it('holds back no more than it must: text without values flows through', () => {
    const r = new Redactor([{ value: 'abcdefgh12345678', source: '.env' }])
    const stream = r.byteStream()
    const first = stream.push(Buffer.from('x'.repeat(100)))
    expect(first.length).toBe(100 - 15)
    expect(Buffer.concat([first, stream.end()]).toString()).toBe('x'.repeat(100))
  })

  it('costs the same per byte with 1,000 values as with one', () => {
    const many = Array.from({ length: 1000 }, (_, i) => ({
      value: `secret-${i}-${(i * 7919).toString(36)}-Zq`,
      source: '.env',
    }))
    const r = new Redactor(many)
    expect(r.size).toBe(1000)
    const text = `${'lorem ipsum dolor sit amet '.repeat(2000)}${many[500]?.value ?? ''}`
    expect(r.redactText(text).endsWith(ENV)).toBe(true)
  })

  it('finds every one of thousands of values, as a plain search for each one does', () => {
    // Enough values that table slots are shared by different first windows and by the same one: each lookup
    // must walk its slot's chain to the entries with its key.
    const rand = seededInts(11)
    const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_'
    const word = (n: number): string => Array.from({ length: n }, () => alphabet[rand() % 64]).join('')
    const values = Array.from(
      { length: 5000 },
      (_, i) => `${i % 3 === 0 ? 'sk-live-' : ''}${word(10 + (i % 7))}`,
    )
    const r = new Redactor(values.map((value) => ({ value, source: '.env' })))
    const picked = Array.from({ length: 400 }, () => values[rand() % values.length] ?? '')
    const text = picked.map((v) => `${word(rand() % 9)} ${v}.`).join('\n')
    let expected = text
    for (const v of [...picked].sort((a, b) => b.length - a.length)) expected = expected.split(v).join(ENV)
    expect(r.redactText(text)).toBe(expected)
  })
})

describe('the floor: what is too short or too common to be a secret', () => {
  it.each([
    'true',
    'false',
    '3000',
    'localhost',
    'production',
    'development',
    '8080',
    'us-east',
    '1.2.3.4',
    '2026-01-01',
    'http://localhost:3000',
    'https://api.example.com/v1',
    './data/db.sqlite',
    'my_app_name',
  ])('leaves %s alone', (value) => expect(isSecretLike(value)).toBe(false))

  it.each([
    'sk-live-4f9a8b7c6d5e',
    'hunter2hunter2',
    'ghp_0123456789abcdefABCDEF',
    'correcthorsebatterystaple',
    'p@ssw0rd!',
    'postgres://app:Pw0rd9x@db:5432/app',
    '4f9a8b7c6d5e4f9a8b7c',
  ])('treats %s as a secret', (value) => expect(isSecretLike(value)).toBe(true))
})

describe('extractSecretValues', () => {
  it('reads .env lines in every form', () => {
    const text = [
      '# comment SHOULD_NOT=be-read-123',
      'API_KEY=sk-live-4f9a8b7c6d5e',
      'export DB_PASSWORD="quoted Pa55word!"',
      "SINGLE='single-quoted-1a2b'",
      'INLINE=inline-value-9z # a note',
      'PORT=3000',
      'DEBUG=true',
      'HOST=localhost',
      'DATABASE_URL=postgres://app:Sup3rSecretPw@db:5432/app',
    ].join('\n')
    const values = extractSecretValues(text)
    expect(values).toEqual(
      expect.arrayContaining([
        'sk-live-4f9a8b7c6d5e',
        'quoted Pa55word!',
        'single-quoted-1a2b',
        'inline-value-9z',
        'Sup3rSecretPw',
        'postgres://app:Sup3rSecretPw@db:5432/app',
      ]),
    )
    expect(values).not.toContain('3000')
    expect(values).not.toContain('true')
    expect(values).not.toContain('localhost')
    expect(values.join(' ')).not.toContain('be-read-123')
  })

  it('reads .npmrc, .netrc, .pypirc, .git-credentials and JSON logins', () => {
    expect(extractSecretValues('//registry.npmjs.org/:_authToken=npm_AbCdEf0123456789')).toContain(
      'npm_AbCdEf0123456789',
    )
    expect(extractSecretValues('machine api.example.com login deploy-bot password s3cr3t-Netrc-pw')).toEqual(
      expect.arrayContaining(['s3cr3t-Netrc-pw']),
    )
    expect(
      extractSecretValues('[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc0123'),
    ).toContain('pypi-AgEIcHlwaS5vcmc0123')
    expect(extractSecretValues('https://alice:ghp_tokenTOKEN1234@github.com')).toContain('ghp_tokenTOKEN1234')
    expect(extractSecretValues('{"auths": {"r.io": {"auth": "YWxpY2U6c2VjcmV0MTIz"}}}')).toContain(
      'YWxpY2U6c2VjcmV0MTIz',
    )
  })

  it('reads each line of a private key body', () => {
    const body = ['MIIEvQIBADANBgkqhkiG9w0BAQEFAASC', 'BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj']
    const values = extractSecretValues(
      ['-----BEGIN PRIVATE KEY-----', ...body, '-----END PRIVATE KEY-----'].join('\n'),
    )
    expect(values).toEqual(body)
  })

  it('finds credentials in git config remote URLs', () => {
    const config =
      '[remote "origin"]\n\turl = https://x-access-token:ghs_RemoteTok3nValue@github.com/o/r.git\n'
    expect(configUrlCredentials(config)).toEqual(['ghs_RemoteTok3nValue'])
    expect(configUrlCredentials('[remote "o"]\n\turl = git@github.com:o/r.git\n')).toEqual([])
  })
})

describe('RedactTextStream', () => {
  const redactor = new Redactor([{ value: 'sk-live-0123456789abcdef', source: '.env' }])

  it('decodes characters split between chunks and hides a value split between chunks', () => {
    const stream = new RedactTextStream(redactor)
    let out = ''
    for (const part of ['é€ token sk-li', 've-0123456789ab', 'cdef done 😀']) out += stream.push(part)
    out += stream.end()
    expect(out).toBe(`é€ token ${ENV} done 😀`)
  })

  it('gives nothing for a stream that never had output', () => {
    expect(new RedactTextStream(redactor).end()).toBe('')
    expect(new RedactTextStream(Redactor.EMPTY).end()).toBe('')
  })
})
