import { execFileSync } from 'node:child_process'
import { existsSync, promises as fs, readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lexWords } from './lexer'
import { isReadOnlyCommand, loadBashGrammar, MAX_COMMAND_BYTES, validateBashCommand } from './validate'

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..')
const corpusDir = path.resolve(repoRoot, '..', 'shared', 'corpus')
const corpusFile = path.join(corpusDir, 'bash-sample.json')

interface CorpusCase {
  cmd: string | null
  cmd_prefix?: string
  cmd_repeat?: [string, number]
  cmd_suffix?: string
  expect: 'allow' | 'deny'
  why: string
  category: string
  debatable?: boolean
}

/** `cmd: null` cases are built as the corpus README says. */
function buildCommand(c: CorpusCase): string {
  if (c.cmd !== null) return c.cmd
  const [segment, count] = c.cmd_repeat ?? ['', 0]
  return (c.cmd_prefix ?? '') + segment.repeat(count) + (c.cmd_suffix ?? '')
}

const corpus: CorpusCase[] = existsSync(corpusFile)
  ? (JSON.parse(readFileSync(corpusFile, 'utf8')) as CorpusCase[])
  : []

function verdict(command: string): 'allow' | 'deny' {
  return validateBashCommand(command).ok ? 'allow' : 'deny'
}

function reasonOf(command: string): string {
  const result = validateBashCommand(command)
  if (result.ok) throw new Error(`expected a denial for ${JSON.stringify(command)}`)
  return result.reason
}

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

  describe.skipIf(corpus.length === 0)(`shared corpus (${corpusFile})`, () => {
    for (const [i, c] of corpus.entries()) {
      const command = buildCommand(c)
      const label = JSON.stringify(command).slice(0, 60)
      it(`${c.category}: ${c.expect}s ${label} (${c.why.slice(0, 80)}) #${i}`, () => {
        const result = validateBashCommand(command)
        expect(result.ok ? 'allow' : 'deny').toBe(c.expect)
        if (!result.ok) expect(result.reason.length).toBeGreaterThan(10)
      })
    }
  })

  if (corpus.length === 0) {
    it.skip(`shared corpus skipped: ${corpusDir} is absent`, () => {})
  }

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

  describe('refuses wrappers and options that run other code', () => {
    it.each([
      ['time rm -rf build', /time/],
      ['nice -n 10 make', /nice/],
      ['timeout 5 ls', /timeout/],
      ['xargs rm', /xargs/],
      ['nohup npm start', /nohup/],
      ['env ls', /env/],
      ['stdbuf -o0 ls', /stdbuf/],
      ['setsid rm -rf build', /setsid/],
      ['watch -n1 ls', /watch/],
      ["script -qc 'rm -rf build' /dev/null", /script/],
      ['command ls', /command/],
      ['builtin echo x', /builtin/],
      ["bash -c 'id'", /shell/],
      ['sh script.sh', /shell/],
      ['python3 -c x', /inline code/],
      ["python3 -Ic 'import os'", /inline code/],
      ['python3 -', /stdin/],
      ['python3', /interactive/],
      ['node -e 1', /inline code/],
      ['node --eval 1', /inline code/],
      ['node -p 1', /inline code/],
      ['node -pe 1', /inline code/],
      ['node --print 1', /inline code/],
      ["node --import 'data:text/javascript,1' a.js", /URL or inline data/],
      ['node --inspect app.js', /inline code|not allowed/],
      ['node --experimental-network-imports app.js', /not allowed/],
      ['perl -e 1', /inline code/],
      ['perl -ne print x', /inline code/],
      ['perl -MPOSIX script.pl', /inline code/],
      ["ruby -e 'system(1)'", /inline code/],
      ['php -r 1', /inline code/],
      ['lua -e 1', /inline code/],
      ['Rscript -e 1', /inline code/],
      ['tsx -e 1', /inline code/],
      ['deno eval 1', /deno eval/],
      ['deno run https://example.com/x.ts', /URL/],
      ['bun -e 1', /inline code/],
      ['bun x cowsay', /bun x/],
      ["find . -exec rm '{}' ';'", /-exec/],
      ["find . '-exec' rm '{}' +", /-exec/],
      ["find . -execdir rm '{}' +", /-execdir/],
      ["find . -ok rm '{}' ';'", /-ok/],
      ['find . -okdir ls', /-okdir/],
      ['find . -delete', /-delete/],
      ['find . -fprint out', /writes a file/],
      ["find . -fprintf out '%p'", /writes a file/],
      ['find . -fls out', /writes a file/],
      ['fd -x rm', /fd --exec/],
      ['fd --exec-batch rm', /fd --exec/],
      ['rg --pre sh x', /--pre/],
      ["git -c alias.x='!rm -rf .' x", /-c/],
      ['git -c core.pager=sh log', /-c/],
      ['git --config-env=core.pager=X log', /-c/],
      ['git --exec-path=. status', /exec-path/],
      ['git config core.pager cat', /git config/],
      ['git foo', /not a built-in/],
      ["git rebase --exec 'rm -rf .' HEAD~1", /--exec/],
      ["git rebase --exe='rm -rf .' HEAD~1", /--exec/],
      ["git rebase -x 'rm -rf .' HEAD~1", /--exec/],
      ['git rebase -i HEAD~3', /editor/],
      ["git submodule foreach 'rm -rf .'", /foreach/],
      ["git bisect run 'make test'", /bisect run/],
      ['git difftool', /difftool/],
      ['git filter-branch --tree-filter x', /filter-branch/],
      ["git clone --upload-pack='touch x' repo", /upload-pack/],
      ["git clone -u 'touch x' repo", /upload-pack/],
      ['git clone --template=t repo', /template/],
      ['git clone -c core.fsmonitor=x repo', /-c/],
      ["git fetch --upload-pack='x' origin", /upload-pack/],
      ["git push --receive-pack='x' origin", /receive-pack/],
      ["git clone 'ext::sh -c x' dir", /remote-helper/],
      ['git grep -O pattern', /-O/],
      ['git grep --open-files-in-pager=vim x', /-O/],
      ['git merge -s ../evil main', /strategy/],
      ['git merge --strategy=evil main', /strategy/],
      ['git archive --remote=origin HEAD', /archive/],
      ['git clean -fdx', /clean/],
      ['git reset --hard HEAD~1', /reset --hard/],
      ['git help log', /help/],
      ['git credential fill', /credential/],
      ['git-upload-pack .', /git helper/],
      ["awk '{print $1}' data.txt", /awk/],
      ["gawk 'BEGIN{}'", /gawk/],
      ["sed '1e rm -rf build' notes.txt", /`e` command/],
      ["sed 's/x/id/e' notes.txt", /`e` flag/],
      ["sed 's/x/y/w out' notes.txt", /`w` flag/],
      ["sed 'w out' notes.txt", /`w` command/],
      ["sed 'r /etc/passwd' notes.txt", /`r` command/],
      ["sed -n '1{e id' notes.txt", /`e` command/],
      ["sed '/x/!e id' notes.txt", /`e` command/],
      ["sed -e 'p' -e 'e id' notes.txt", /`e` command/],
      ["sed -i 's/a/b/' notes.txt", /in place/],
      ["sed --in-place 's/a/b/' notes.txt", /in place/],
      ["sed --in-pl 's/a/b/' notes.txt", /in place/],
      ["sed -ni 's/a/b/p' notes.txt", /in place/],
      ['sed -f script.sed notes.txt', /file/],
      ["sed 's/a/b/Q' notes.txt", /./],
      ['tar -cf x.tar --checkpoint=1 --checkpoint-action=exec=sh src', /checkpoint-action/],
      ["tar -xf a.tar --to-command='sh -c id'", /to-command/],
      ["tar -xf a.tar --to-com='sh -c id'", /to-command/],
      ['tar -I zstd -xf a.tar', /-I/],
      ["tar --use-compress-program='sh x' -xf a.tar", /use-compress-program/],
      ['tar xIf zstd a.tar', /-I/],
      ['tar -cf host:a.tar src', /remote archive/],
      ["zip -T -TT 'sh -c id' out.zip a.txt", /-TT/],
      ["zip --unzip-command='sh' out.zip a", /-TT|unzip-command/],
      ["sort --compress-program='sh' a", /compress-program/],
      ["split --filter='sh' a", /filter/],
      ["date -s '2020-01-01'", /clock/],
      ['make --eval=x all', /eval/],
      ['cmake -E rm -rf build', /cmake/],
      ['java -XX:OnError=sh -jar a.jar', /java option/],
      ['go run example.com/tool@latest', /downloads/],
      ['go build -toolexec=sh ./...', /toolexec/],
      ['npm exec vitest', /npm exec/],
      ['npm x vitest', /npm x/],
      ['npm init vite', /init/],
      ['npm create vite', /create/],
      ['npm --prefix sub exec vitest', /npm exec/],
      ['npm run build --script-shell=sh', /script-shell/],
      ['npm config set script-shell sh', /config/],
      ['npm publish', /publish/],
      ['pnpm dlx cowsay', /dlx/],
      ['yarn dlx cowsay', /dlx/],
      ['uv run pytest', /uv run/],
      ['poetry run pytest', /poetry run/],
      ['printf -v x y', /printf -v/],
      ['let x=1', /let/],
      ['trap ls EXIT', /trap/],
      ['mapfile -C ls x', /mapfile/],
      ['alias ls=rm', /alias/],
      ['source ./setup.sh', /source/],
      ['test -f x', /test/],
      ['xdg-open index.html', /xdg-open/],
      ['sqlite3 db .shell', /sqlite3/],
      ['ssh-keygen -R host', /ssh-keygen/],
      ['git reset --ha', /reset --hard/],
      ['gxargs rm', /gxargs/],
      ['grm -rf build', /grm/],
      ["gsed -i 's/a/b/' x", /in place/],
      ['gtar --to-command=sh -xf a.tar', /to-command/],
      ["sed -- 'e id' notes.txt", /`e` command/],
    ])('refuses %s', (command, reason) => {
      expect(reasonOf(command)).toMatch(reason)
    })
  })

  describe('refuses paths outside the workspace', () => {
    it.each([
      'git -C /home/user/other-repo status',
      'git -C ../other status',
      'git --git-dir=/tmp/x/.git log',
      'git --work-tree=/ status',
      'cat /etc/passwd',
      'cat ../secret.txt',
      'cat src/../../secret.txt',
      'ls ..',
      'ls /',
      'cp notes.txt /tmp/notes.txt',
      'tar -C / -xf a.tar',
      'grep -r x /etc',
      'grep -f /etc/passwd x',
      'cat file:///etc/passwd',
      'ls --dir=/etc',
      'ls -I/usr/include',
      'mv notes.txt /dev/null',
      'make -C .. all',
      "cat 'C:\\Windows\\win.ini'",
      "sed -n '/a/p' /etc/passwd",
    ])('refuses %s', (command) => {
      expect(reasonOf(command)).toMatch(/outside the workspace/)
    })

    it('allows /dev/null and paths that only visit a parent inside the workspace', () => {
      expect(verdict('git diff --no-index /dev/null a.txt')).toBe('allow')
      expect(verdict('cat src/../README.md')).toBe('allow')
      expect(verdict('ls ./src/./lib')).toBe('allow')
    })
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

describe('isReadOnlyCommand', () => {
  beforeAll(async () => {
    await loadBashGrammar()
  })

  it.each([
    'ls',
    'ls -la src',
    'pwd',
    'cat README.md',
    'head -n 5 a.txt',
    'tail -n 5 a.txt',
    'wc -l a.txt',
    'file a.bin',
    'stat a.txt',
    'du -sh src',
    'df -h',
    'which node',
    'echo hi',
    'date',
    'whoami',
    'uname -a',
    'tree src',
    "grep -rn 'x' src",
    "rg -n 'x' src",
    "find src -name '*.ts'",
    'git status',
    'git status --porcelain',
    'git diff',
    'git diff --stat HEAD~1',
    'git log --oneline -n 20',
    'git show HEAD',
    'git rev-parse HEAD',
    'git branch',
    'git branch -a',
    'git branch -vv',
    "git branch --list 'feat*'",
    'git branch --merged main',
    'git ls-files',
    'git blame src/a.ts',
    'git --no-pager log',
    'node --version',
    'node -v',
    'python3 --version',
    'python3 -V',
    'npm --version',
    'npm ls',
    'npm view react version',
    'npm outdated',
    'go version',
  ])('treats %s as read-only', (command) => {
    expect(isReadOnlyCommand(command)).toBe(true)
  })

  it.each([
    ['a denied command', 'rm -rf build'],
    ['an invalid command', 'ls | wc -l'],
    ['a write', 'mkdir build'],
    ['a copy', 'cp a b'],
    ['a package script', 'npm test'],
    ['an install', 'npm install'],
    ['npm audit fix', 'npm audit fix'],
    ['an unknown program', 'mytool --version'],
    ['a name in another case', 'LS'],
    ['git branch creating a branch', 'git branch feature'],
    ['git branch deleting a branch', 'git branch -D feature'],
    ['git branch renaming', 'git branch -m a b'],
    ['git on another folder', 'git -C sub status'],
    ['git with a git dir', 'git --git-dir=.git status'],
    ['git diff writing a file', 'git diff --output=out.patch'],
    ['git diff running an external diff', 'git diff --ext-diff'],
    ['git commit', "git commit -m 'x'"],
    ['git checkout', 'git checkout main'],
    ['git stash', 'git stash'],
    ['a git alias', 'git st'],
    ['tail -f, which never ends', 'tail -f log.txt'],
    ['tail --follow', 'tail --follow=name log.txt'],
    ['tree writing a file', 'tree -o out.txt'],
    ['file compiling a magic file', 'file -C -m magic'],
    ['rg running decompressors', 'rg -z x'],
    ['find deleting', 'find . -delete'],
    ['sed, even printing', "sed -n '1p' a.txt"],
    ['a script', 'node script.js'],
    ['python verbose', 'python3 -v'],
    ['whoami with arguments', 'whoami x'],
    ['an outside path', 'cat /etc/passwd'],
    ['an empty command', ''],
    ['a secret file', 'cat .env'],
    ['a secret file in a folder', 'head -n 3 config/.env.production'],
    ['git internals', 'cat .git/config'],
    ['a key file', 'cat certs/server.key'],
    ['a committed secret', 'git show HEAD:.env'],
    ['a recursive grep from the root', "grep -rn 'x' ."],
    ['a recursive grep with no folder', "grep -r -m 5 'TODO'"],
    ['rg searching hidden files', "rg --hidden 'x'"],
    ['rg without ignore rules', "rg -uu 'x'"],
  ])('does not treat %s as read-only', (_label, command) => {
    expect(isReadOnlyCommand(command)).toBe(false)
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
