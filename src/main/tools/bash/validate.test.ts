import { beforeAll, describe, expect, it } from 'vitest'
import { bashCommand, loadCorpus, type BashCase } from '../../test-fixtures/corpus'
import { reasonOf, verdict } from './test-fixtures/verdicts'
import { isReadOnlyCommand, loadBashGrammar, validateBashCommand } from './validate'

const corpus = loadCorpus<BashCase>('bash-sample')

// Runs first, while this file's module instance has not loaded the grammar yet.
describe('validateBashCommand before the grammar is loaded', () => {
  it('denies with a reason saying the checker is not ready, without throwing', () => {
    const result = validateBashCommand('ls')
    expect(result.ok).toBe(false)
    expect(result.ok ? '' : result.reason).toMatch(/not ready/)
    expect(isReadOnlyCommand('ls')).toBe(false)
  })

  it('shares one load between concurrent callers, and loading again is a no-op', async () => {
    const first = loadBashGrammar()
    const second = loadBashGrammar()
    expect(second).toBe(first)
    await Promise.all([first, second])
    await loadBashGrammar()
    expect(validateBashCommand('ls')).toEqual({ ok: true })
  })
})

describe('validateBashCommand', () => {
  beforeAll(async () => {
    await loadBashGrammar()
  })

  describe('the hostile command sample (test-fixtures/corpus)', () => {
    for (const [i, c] of corpus.entries()) {
      const command = bashCommand(c)
      const label = JSON.stringify(command).slice(0, 60)
      it(`${c.category}: ${c.expect}s ${label} (${c.why.slice(0, 80)}) #${i}`, () => {
        const result = validateBashCommand(command)
        expect(result.ok ? 'allow' : 'deny').toBe(c.expect)
        if (!result.ok) expect(result.reason.length).toBeGreaterThan(10)
      })
    }
  })

  describe('allows ordinary single commands', () => {
    it.each([
      'ls',
      'ls -la src',
      'pwd',
      'npm test',
      'npm run build',
      'npm run lint -- --fix',
      'npm test -- --watch=false',
      'npm install',
      'npm install lodash',
      'npm ci',
      'npm init -y',
      'pnpm install',
      'yarn build',
      'git status',
      'git diff --stat',
      'git diff HEAD~1 -- src',
      'git diff HEAD~1..HEAD',
      'git log --oneline -n 5',
      'git add src/a.ts',
      "git commit -m 'fix: handle /api/users and ../ paths'",
      'git checkout -b feature/x',
      'git switch main',
      'git stash',
      'git push origin main',
      'git fetch origin',
      'git merge -s ort main',
      'git clean -n',
      'git show HEAD:src/a.ts',
      'git blame src/a.ts',
      'git -C packages/app status',
      "git grep -n '/api/' -- src",
      'tsc --noEmit',
      'vitest run src/a.test.ts',
      'python3 -m pytest -q',
      'python3 scripts/gen.py --out build',
      'python3 --version',
      'node scripts/build.js',
      'node --test',
      'node --version',
      'cargo test',
      'go test ./...',
      'make build',
      'make -j4',
      'mkdir -p build/out',
      'touch notes.txt',
      'cp a b',
      'mv a b',
      'cat package.json',
      'head -n 20 src/a.ts',
      'tail -n 50 log.txt',
      "grep -rn 'TODO' src",
      "grep -rn 'a|b' src",
      'grep -rn "/api/v1" src',
      "rg -n 'foo' src",
      "find . -name '*.ts' -not -path './node_modules/*'",
      "sed -n '1,20p' src/a.ts",
      "sed -n '/start/,/end/p' notes.txt",
      "sed 's/foo/bar/g' notes.txt",
      "sed -e 's/a/b/' -e '/^$/d' notes.txt",
      "sed --sandbox 's/a/b/w out' notes.txt",
      'wc -l a b',
      'diff a b',
      "echo 'hello world'",
      'echo "a; b && c | d > e"',
      "echo '$HOME is literal here'",
      'echo /etc/passwd',
      'date +%Y-%m-%d',
      'tar -czf out.tar.gz src',
      'tar -cf x.tar --checkpoint=1 src',
      'du -sh src',
      'sort -u list.txt',
      'jq .name package.json',
      'pip install -r requirements.txt',
      'ls a~',
      "ls ''",
      'echo a"b c"d',
      "grep -rn 'foo\\.bar' src",
      'git diff --no-index /dev/null a.txt',
      'g++ --version',
      'x86_64-linux-gnu-gcc -c a.c',
    ])('allows %s', (command) => {
      expect(validateBashCommand(command)).toEqual({ ok: true })
    })
  })

  describe('refuses control characters', () => {
    const controls = [
      ...Array.from({ length: 0x20 }, (_, i) => i),
      0x7f,
      ...Array.from({ length: 0x20 }, (_, i) => 0x80 + i),
    ]
    it.each(controls.map((code) => [code.toString(16).padStart(4, '0')]))('refuses U+%s anywhere', (hex) => {
      const ch = String.fromCodePoint(Number.parseInt(hex, 16))
      for (const command of [`${ch}ls`, `ls${ch}`, `ls ${ch}-la`, `echo '${ch}'`, `echo "a${ch}b"`]) {
        expect(verdict(command)).toBe('deny')
      }
    })

    it('names the carriage return that would hide the real command', () => {
      expect(reasonOf('rm -rf ~\r echo ok')).toMatch(/carriage return/)
    })
  })

  describe('refuses Unicode tricks', () => {
    const tricky: [string, string][] = [
      ['00A0', 'no-break space'],
      ['1680', 'ogham space'],
      ['2000', 'en quad'],
      ['2003', 'em space'],
      ['200A', 'hair space'],
      ['202F', 'narrow no-break space'],
      ['205F', 'math space'],
      ['3000', 'ideographic space'],
      ['200B', 'zero-width space'],
      ['200C', 'zero-width non-joiner'],
      ['200D', 'zero-width joiner'],
      ['2060', 'word joiner'],
      ['FEFF', 'byte order mark'],
      ['00AD', 'soft hyphen'],
      ['202A', 'left-to-right embedding'],
      ['202E', 'right-to-left override'],
      ['2066', 'left-to-right isolate'],
      ['2069', 'pop directional isolate'],
      ['200E', 'left-to-right mark'],
      ['200F', 'right-to-left mark'],
      ['061C', 'arabic letter mark'],
      ['180E', 'mongolian vowel separator'],
      ['115F', 'hangul choseong filler'],
      ['3164', 'hangul filler'],
      ['FFA0', 'halfwidth hangul filler'],
      ['034F', 'combining grapheme joiner'],
      ['FE0F', 'variation selector'],
      ['E0100', 'variation selector supplement'],
      ['E0001', 'language tag'],
      ['E0041', 'tag latin A'],
      ['2028', 'line separator'],
      ['2029', 'paragraph separator'],
      ['2800', 'braille blank'],
      ['E000', 'private use'],
      ['F0000', 'supplementary private use'],
      ['FDD0', 'noncharacter'],
      ['FFFF', 'noncharacter'],
      ['D800', 'lone high surrogate'],
      ['DFFF', 'lone low surrogate'],
      ['0378', 'unassigned'],
    ]
    it.each(tricky)('refuses U+%s (%s) in the name, between words and inside quotes', (hex) => {
      const code = Number.parseInt(hex, 16)
      // String.fromCharCode keeps a lone surrogate lone.
      const ch = code <= 0xffff ? String.fromCharCode(code) : String.fromCodePoint(code)
      for (const command of [
        `g${ch}it status`,
        `ls${ch}-la`,
        `ls ${ch}`,
        `echo '${ch}rm -rf build'`,
        `echo "x${ch}"`,
      ]) {
        expect(verdict(command)).toBe('deny')
      }
    })

    it.each([
      ['a combining long solidus on a dash', 'ls -\u0338la'],
      ['a combining acute on an ASCII letter', "echo 'e\u0301'"],
      ['a combining mark at the start', '\u0301ls'],
      ['a Cyrillic letter in the name', 'r\u043c -rf build'],
      ['fullwidth letters as the name', '\uff52\uff4d -rf build'],
      ['a fullwidth pipe unquoted', 'ls \uff5c wc'],
    ])('refuses %s', (_label, command) => {
      expect(verdict(command)).toBe('deny')
    })

    it('allows non-ASCII text inside quotes', () => {
      expect(verdict("echo 'caf\u00e9 \u65e5\u672c \ud83d\ude00'")).toBe('allow')
      expect(verdict('echo "\u00fcber"')).toBe('allow')
    })

    it('refuses unquoted non-ASCII text, with a reason saying to quote it', () => {
      expect(reasonOf('echo caf\u00e9')).toMatch(/quotes/)
    })
  })

  describe('refuses every shell operator and construct', () => {
    it.each([
      ['ls | wc -l', /pipes/],
      ['ls |& cat', /pipes/],
      ['ls || true', /lists/],
      ['ls && ls', /lists/],
      ['ls && ', /&&/],
      ['ls; ls', /`;`/],
      ['ls;', /`;`/],
      ['npm start &', /background/],
      ['ls > out.txt', /redirects/],
      ['ls >> out.txt', /redirects/],
      ['ls >| out.txt', /redirects/],
      ['ls &> out.txt', /redirects/],
      ['ls &>> out.txt', /redirects/],
      ['ls 2> err.txt', /redirects/],
      ['ls 2>&1', /redirects/],
      ['cat < in.txt', /redirects/],
      ['cat <> in.txt', /redirects/],
      ['cat <&3', /redirects/],
      ['cat <<< text', /here-/],
      ['cat << EOF', /./],
      ['cat <(ls)', /process substitution/],
      ['diff >(cat) a', /./],
      ['(ls)', /subshells/],
      ['{ ls; }', /groups/],
      ['(( x = 1 ))', /arithmetic/],
      ['echo $((1 + 2))', /arithmetic/],
      ['echo $[1+2]', /./],
      ['echo $(id)', /substitution/],
      ['echo `id`', /substitution/],
      ['echo "`id`"', /./],
      ['ls "$(echo src)"', /substitution/],
      ['$(echo rm) -rf build', /substitution/],
      ['echo $HOME', /expansion/],
      ['echo ${HOME}', /expansion/],
      ['echo "$HOME"', /\$/],
      ['ls $@', /expansion/],
      ['echo $1', /./],
      ["echo $'\\x72m'", /\$'/],
      ['echo $"text"', /./],
      ['X=1 ls', /assignments/],
      ['LD_PRELOAD=./evil.so ls', /assignments/],
      ['x=1', /assignments/],
      ['export X=1', /assignments/],
      ['declare -a x', /./],
      ['unset PATH', /./],
      ['ls() { rm -rf build; }', /functions/],
      ['function f { ls; }', /./],
      ['if true; then ls; fi', /control/],
      ['for f in a b; do ls; done', /control/],
      ['while true; do ls; done', /control/],
      ['until false; do ls; done', /./],
      ['case x in a) ls;; esac', /./],
      ['select x in a; do ls; done', /./],
      ['! ls', /negation/],
      ['[ -f x ]', /test/],
      ['[[ -f x ]]', /test/],
      ['ls # comment', /comment/],
      ['ls {a,b}', /brace/],
      ['{rm,-rf,build}', /brace/],
      ['echo {1..3}', /brace/],
      ['ls *', /glob/],
      ['* -rf', /glob/],
      ['ls ?', /glob/],
      ['ls [ab]', /glob/],
      ['ls ~', /~/],
      ['ls ~root', /~/],
      ['ls --dir=~/x', /~/],
      ['ls a:~/x', /~/],
      ["ls ''~", /~/],
      ['ls \\;', /backslash/],
      ['echo "a\\"b"', /backslash/],
      ['ls !x', /!/],
      ['ls "!x"', /!/],
      ['ls "unclosed', /quote/],
      ["ls 'unclosed", /quote/],
      ['coproc ls', /./],
      ['time ls', /./],
      ['ls -la#x', /#/],
      ['echo @(a)', /./],
    ])('refuses %s', (command, reason) => {
      expect(reasonOf(command)).toMatch(reason)
    })
  })

  describe('refuses quoting and escaping tricks in the command name', () => {
    it.each([
      '\\rm -rf build',
      "'rm' -rf build",
      '"rm" -rf build',
      "r''m -rf build",
      'r""m -rf build',
      "rm'' -rf build",
      "''rm -rf build",
      "r'm' -rf build",
      '"r"m -rf build',
      'r\\m -rf build',
      "$'rm' -rf build",
      '$"rm" -rf build',
      "'' -rf build",
      '"" ls',
      "'ls'",
      '=rm -rf build',
      '-rf build',
      '. ./setup.sh',
    ])('refuses %s', (command) => {
      expect(verdict(command)).toBe('deny')
    })
  })

  describe('refuses programs run by path', () => {
    it.each([
      '/bin/rm -rf build',
      './rm -rf build',
      'bin/ls',
      '../../bin/rm x',
      './node_modules/.bin/vitest',
      '/usr/bin/ls',
    ])('refuses %s', (command) => {
      expect(verdict(command)).toBe('deny')
    })
  })

  describe('refuses denied programs in every spelling', () => {
    const names = [
      'rm',
      'rmdir',
      'dd',
      'shred',
      'mkfs',
      'fdisk',
      'sudo',
      'su',
      'doas',
      'chmod',
      'chown',
      'kill',
      'pkill',
      'shutdown',
      'reboot',
      'curl',
      'wget',
      'ssh',
      'nc',
      'crontab',
      'at',
      'mount',
      'passwd',
      'env',
      'xargs',
      'nohup',
      'eval',
      'exec',
      'source',
      'bash',
      'sh',
      'zsh',
      'busybox',
      'awk',
      'gawk',
      'vim',
      'less',
      'man',
      'npx',
      'docker',
      'apt-get',
      'systemctl',
      'strace',
      'chroot',
    ]
    const spellings = (name: string): string[] => [
      name,
      name.toUpperCase(),
      name[0]?.toUpperCase() + name.slice(1),
      `${name}.exe`,
      `${name}.EXE`,
      `${name.toUpperCase()}.Exe`,
      `${name}.`,
    ]
    it.each(names)('refuses %s, whatever its case or .exe suffix', (name) => {
      for (const spelling of spellings(name)) {
        const reason = reasonOf(`${spelling} x`)
        expect(reason).toContain(`\`${spelling}\``)
      }
    })

    it.each([
      'mkfs.ext4 /dev/sdb1',
      'fsck.ext4 x',
      'python3.12 -c x',
      'nc.openbsd host 1',
      'ld-linux-x86-64.so.2 ./a',
    ])('refuses the family variant %s', (command) => {
      expect(verdict(command)).toBe('deny')
    })
  })
})
