// Split from validate.test.ts: length limits, inputs that must never throw or blow up, and agreement with
// real bash on the words of every allowed command.
import { execFileSync } from 'node:child_process'
import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lexWords } from './lexer'
import { reasonOf, verdict } from './test-fixtures/verdicts'
import { isReadOnlyCommand, loadBashGrammar, MAX_COMMAND_BYTES, validateBashCommand } from './validate'

describe('validateBashCommand: limits, robustness and agreement with bash', () => {
  beforeAll(async () => {
    await loadBashGrammar()
  })

  describe('limits the length of a command', () => {
    it('allows exactly 8 KiB and refuses one byte more, measured in UTF-8 bytes', () => {
      const exact = `echo ${'a'.repeat(MAX_COMMAND_BYTES - 5)}`
      expect(Buffer.byteLength(exact)).toBe(MAX_COMMAND_BYTES)
      expect(verdict(exact)).toBe('allow')
      expect(reasonOf(`${exact}a`)).toMatch(/longer than 8 KiB/)
      // 3000 characters, but 9000 bytes.
      expect(reasonOf(`echo '${'\u20ac'.repeat(3000)}'`)).toMatch(/longer than 8 KiB/)
    })

    it('refuses a 1 MB input quickly, before parsing', () => {
      const huge = `echo ${'a '.repeat(500_000)}`
      expect(reasonOf(huge)).toMatch(/longer/)
      expect(costMs(() => validateBashCommand(huge))).toBeLessThan(50)
    })

    it('handles the largest accepted inputs of every shape within the time budget', () => {
      const shapes = [
        `echo ${'a '.repeat(4000)}`,
        `echo '${'x'.repeat(8000)}'`,
        `echo "${'y '.repeat(4000)}"`,
        `echo ${"'a'".repeat(2700)}`,
        `echo ${'a '.repeat(999)}`,
        `echo ${'""'.repeat(999)}`,
        `ls ${'|'.repeat(8000)}`,
        `echo ${'$('.repeat(4000)}`,
        `echo ${'{'.repeat(8000)}`,
        `${'('.repeat(8000)}`,
        `echo ${'"'.repeat(8000)}`,
        `echo ${'<<'.repeat(4000)}`,
        `echo "${'<<'.repeat(4000)}"`,
        `echo '${'((('.repeat(2600)}'`,
        `echo ${'a=b '.repeat(2000)}`,
        `${'x=1 '.repeat(2000)}ls`,
        `echo ${"a'<<'".repeat(1300)}`,
      ]
      for (const command of shapes) {
        expect(
          costMs(() => validateBashCommand(command)),
          command.slice(0, 20),
        ).toBeLessThan(50)
      }
    })

    it('refuses an empty or whitespace-only command', () => {
      expect(reasonOf('')).toMatch(/empty/)
      expect(reasonOf('    ')).toMatch(/empty/)
      expect(verdict('\t')).toBe('deny')
    })
  })

  describe('never throws', () => {
    it('denies values that are not strings', () => {
      for (const value of [undefined, null, 42, {}, ['ls'], Symbol('x')]) {
        const result = validateBashCommand(value as unknown as string)
        expect(result.ok).toBe(false)
        expect(isReadOnlyCommand(value as unknown as string)).toBe(false)
      }
    })

    it('survives 10k random strings from a hostile alphabet, each under 50 ms', () => {
      const random = mulberry32(0x1a2b3c)
      const alphabet = [
        ...'abcrmls-_./=:,@%^+~ \'"`$\\|&;<>(){}[]*?!#',
        '\t',
        '\n',
        '\r',
        '\0',
        '\u001b',
        '\u007f',
        '\u0085',
        '\u00a0',
        '\u200b',
        '\u202e',
        '\u2028',
        '\ufeff',
        '\ud800',
        '\udc00',
        '\ud83d\ude00',
        '\u00e9',
        '\u0301',
        '\ue000',
      ]
      const vocabulary = [
        'ls',
        'rm',
        'git',
        'echo',
        'find',
        'sed',
        '-rf',
        '-exec',
        '--',
        "'a b'",
        '"c d"',
        '$(id)',
        '`id`',
        '${x}',
        '|',
        '&&',
        ';',
        '>',
        '<<EOF',
        '{a,b}',
        '~',
        '*',
        '#',
        '!',
        '\\',
        "''",
        '""',
        'x=1',
        '(',
        ')',
        '\u202e',
        '/etc/passwd',
        '..',
      ]
      let worst = 0
      for (let n = 0; n < 10_000; n++) {
        let command = ''
        if (n % 2 === 0) {
          const length = Math.floor(random() * (n % 100 === 0 ? 4000 : 40))
          for (let i = 0; i < length; i++) command += alphabet[Math.floor(random() * alphabet.length)]
        } else {
          const count = 1 + Math.floor(random() * 8)
          command = Array.from(
            { length: count },
            () => vocabulary[Math.floor(random() * vocabulary.length)],
          ).join(random() < 0.8 ? ' ' : '')
        }
        worst = Math.max(
          worst,
          costMs(() => validateBashCommand(command)),
        )
        const result = validateBashCommand(command)
        expect(typeof isReadOnlyCommand(command)).toBe('boolean')
        expect(typeof result.ok).toBe('boolean')
        if (!result.ok) expect(result.reason.length).toBeGreaterThan(0)
        else expect(hasNoShellSyntax(command), command).toBe(true)
      }
      expect(worst).toBeLessThan(50)
    })
  })

  describe('agrees with real bash on the words of every command it allows', () => {
    const dirs: string[] = []
    afterAll(async () => {
      await Promise.all(dirs.map((dir) => fs.rm(dir, { recursive: true, force: true })))
    })

    it('decodes quotes exactly as bash does, for fixed and generated commands', async () => {
      const random = mulberry32(0x5eed)
      const pieces = [
        'a',
        'B9',
        '-x',
        '--opt=val',
        'HEAD~1',
        'a,b',
        '@x',
        '%s',
        '^x',
        'x:y',
        'a+b',
        "'a b'",
        "''",
        '""',
        '"c d"',
        "'$HOME'",
        "'*'",
        '"a;b|c&d"',
        "'\\n'",
        '"it\'s"',
        '\'say "hi"\'',
        "'\u00e9\u65e5'",
        '"{a,b}"',
        "'~root'",
        '"#x"',
        "'!x'",
        'x"y"z',
        "q'r's",
      ]
      const commands = [
        "echo 'hello world'",
        'echo a"b c"d',
        "grep -rn 'a|b' src",
        'npm test -- --watch=false',
        "git commit -m 'fix: it''s done'",
      ]
      for (let n = 0; n < 300; n++) {
        const count = 1 + Math.floor(random() * 5)
        const words = Array.from({ length: count }, () => {
          const parts = 1 + Math.floor(random() * 3)
          return Array.from({ length: parts }, () => pieces[Math.floor(random() * pieces.length)]).join('')
        })
        commands.push(`echo ${words.join(random() < 0.7 ? ' ' : '  ')}`)
      }
      const accepted = commands.filter((command) => validateBashCommand(command).ok)
      expect(accepted.length).toBeGreaterThan(200)

      // One bash process prints the argv of each accepted command (the program name replaced by a
      // function that prints its arguments), so bash itself does the word splitting and quote removal.
      const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'lanes-validate-')))
      dirs.push(dir)
      const script = [
        'p() { for a in "$@"; do printf \'%s\\0\' "$a"; done; printf \'\\1\\0\'; }',
        ...accepted.map((command) => {
          const lexed = lexWords(command)
          if (!lexed.ok) throw new Error(`lexer refused an accepted command: ${command}`)
          return `p${command.slice(lexed.words[0]?.end ?? 0)}`
        }),
      ].join('\n')
      await fs.writeFile(path.join(dir, 'words.sh'), script)
      const output = execFileSync('bash', ['--norc', '--noprofile', 'words.sh'], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C.UTF-8' },
        encoding: 'utf8',
      })
      const perCommand = output.split('\u0001\u0000').slice(0, -1)
      expect(perCommand).toHaveLength(accepted.length)
      for (const [i, command] of accepted.entries()) {
        const lexed = lexWords(command)
        const expected = lexed.ok ? lexed.words.slice(1).map((word) => word.value) : []
        const fromBash = (perCommand[i] ?? '').split('\u0000').slice(0, -1)
        expect(fromBash, command).toEqual(expected)
      }
    })
  })
})

/**
 * Independent check of what an accepted command may contain: no special character of bash outside quotes,
 * nothing but literal text in double quotes, no `~` where bash expands it, a plain first character.
 */
function hasNoShellSyntax(command: string): boolean {
  if (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}]/u.test(command)) return false
  if (!/^[A-Za-z0-9_]/.test(command)) return false
  for (let i = 0; i < command.length; i++) {
    const ch = command[i] as string
    if (ch === "'" || ch === '"') {
      const close = command.indexOf(ch, i + 1)
      if (close === -1) return false
      if (ch === '"' && /[$`\\!]/.test(command.slice(i + 1, close))) return false
      i = close
      continue
    }
    if (/[$`\\|&;<>(){}[\]*?!#]/.test(ch)) return false
    if (ch === '~' && (i === 0 || ' =:'.includes(command[i - 1] as string))) return false
  }
  return true
}

/**
 * CPU time of `fn` in ms: the validator's own cost, not the wall clock of a machine shared with other test
 * runs. A slow first measure is taken again (twice) and the best kept, so a garbage collection or a compile
 * on a V8 helper thread is not charged to the input, while a real blow-up (slow every time) still shows.
 */
function costMs(fn: () => void): number {
  let best = Number.POSITIVE_INFINITY
  for (let attempt = 0; attempt < 3 && best >= 10; attempt++) {
    const started = process.cpuUsage()
    fn()
    const used = process.cpuUsage(started)
    best = Math.min(best, (used.user + used.system) / 1000)
  }
  return best
}

function mulberry32(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
