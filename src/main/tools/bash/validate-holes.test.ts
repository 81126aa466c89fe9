import { beforeAll, describe, expect, it } from 'vitest'
import { isReadOnlyCommand, loadBashGrammar, validateBashCommand } from './validate'
import { npmCommand } from './validate-programs'

/**
 * The validator holes of issue 12, closed as classes. Each row: the command, and what must become of it:
 * `deny` (refused with a reason), `ask` (valid, but not run without asking), `read-only` (runs unasked).
 */
const CORPUS: ReadonlyArray<[command: string, expected: 'deny' | 'ask' | 'read-only', why: string]> = [
  // A URL is a path to bash once a folder named like its scheme exists.
  ['cat ab://../../etc/passwd', 'deny', 'a URL climbing above the workspace'],
  ['cat x://a/../../../secret', 'deny', 'a URL whose path climbs out'],
  ['ls --dir=https://../../..', 'deny', 'a URL after `=`'],
  ['cat file:///etc/passwd', 'deny', 'a file URL is an absolute path'],
  ['git clone https://github.com/a/b', 'ask', 'an ordinary URL stays a valid argument'],
  ['npm view http://127.0.0.1:9/x', 'read-only', 'the sandbox has no network: harmless'],
  // GNU sed skips bracket expressions when it looks for the delimiter.
  ["sed 's/[/]/;#/e' a.txt", 'deny', 'the e flag behind a bracket expression'],
  ["sed 's/[/]/;#/w out.txt' a.txt", 'deny', 'the w flag behind a bracket expression'],
  ["sed '/[/]/;#/e' a.txt", 'deny', 'an address with a bracket expression'],
  ["sed 's/[[:space:]/]/x/e' a.txt", 'deny', 'a character class inside the brackets'],
  ["sed 's/[]/]/x/e' a.txt", 'deny', 'a leading ] is literal'],
  ["sed 's/[^]/]/x/w f' a.txt", 'deny', 'a leading ^] is literal'],
  ["sed 's/[\\/]/x/' a.txt", 'deny', 'a backslash in brackets is unclear'],
  ["sed 's/[/]/x/' a.txt", 'ask', 'a bracket expression that only substitutes'],
  ["sed 's/[a-z]/X/g' a.txt", 'ask', 'an ordinary bracket expression'],
  // npm runs any unique prefix of its commands.
  ['npm exe vitest', 'deny', 'npm exe is npm exec'],
  ['npm exe -- vitest', 'deny', 'npm exe with --'],
  ['npm creat vite', 'deny', 'npm creat is npm create, npm init <initializer>'],
  ['npm publi', 'deny', 'npm publi is npm publish'],
  ['npm unpub x', 'deny', 'npm unpub is npm unpublish'],
  ['npm explo lodash', 'deny', 'npm explo is npm explore'],
  ['npm x vitest', 'deny', 'an alias'],
  ['npm tes', 'ask', 'npm tes is npm test, a package script'],
  ['npm ru build', 'ask', 'npm ru is npm run'],
  // Every way GNU grep recurses reads the whole tree below its operands.
  ['grep -d recurse canary .', 'ask', '-d recurse'],
  ['grep -drecurse canary .', 'ask', '-d glued'],
  ['grep -nd recurse canary .', 'ask', '-d in a cluster'],
  ['grep --directories=recurse canary .', 'ask', '--directories='],
  ['grep --directories recurse canary .', 'ask', '--directories and its value apart'],
  ['grep --dir=rec canary .', 'ask', 'abbreviated option and value'],
  ['grep --recur canary .', 'ask', 'abbreviated --recursive'],
  ['grep -rn canary src/..', 'ask', 'the root spelled as a sub-folder and ..'],
  ['grep -Rn canary ./', 'ask', '-R from ./'],
  ['grep -rn canary', 'ask', 'no operand: the root'],
  ['grep -rn canary src', 'read-only', 'a named sub-folder'],
  ['grep -n canary a.txt', 'read-only', 'one file'],
  // ripgrep: globs, hidden files and ignore rules.
  ["rg -g '.e*' canary", 'ask', 'a glob selects hidden files'],
  ["rg --glob '.e*' canary", 'ask', '--glob'],
  ["rg --iglob '*' canary", 'ask', '--iglob'],
  ['rg --hidden canary', 'ask', '--hidden'],
  ['rg -. canary', 'ask', '-. is --hidden'],
  ['rg -u canary', 'ask', '-u'],
  ['rg --no-ignore-vcs canary', 'ask', 'the --no-ignore family'],
  ['rg -n canary src', 'read-only', 'an ordinary search'],
  // ps prints environments with BSD `e`.
  ['ps axeww', 'deny', 'BSD e'],
  ['ps e', 'deny', 'BSD e alone'],
  ['ps -E', 'deny', '-E'],
  ['ps aux', 'ask', 'no environments'],
  ['ps -o user,pid -C node', 'ask', 'option values are not BSD options'],
]

beforeAll(async () => {
  await loadBashGrammar()
})

describe('validator holes, as classes', () => {
  it.each(CORPUS)('%s: %s (%s)', (command, expected) => {
    const verdict = validateBashCommand(command)
    const got = !verdict.ok ? 'deny' : isReadOnlyCommand(command) ? 'read-only' : 'ask'
    expect(got, verdict.ok ? '' : verdict.reason).toBe(expected)
  })
})

describe('npmCommand', () => {
  it.each([
    ['exe', 'exec'],
    ['x', 'exec'],
    ['creat', 'init'],
    ['create', 'init'],
    ['publi', 'publish'],
    ['install-cl', 'ci'],
    ['installTest', 'install-test'],
    ['star', 'star'],
    ['sta', undefined],
    ['lodash', undefined],
  ])('resolves %s to %s as npm does', (word, command) => {
    expect(npmCommand(word)).toBe(command)
  })
})
