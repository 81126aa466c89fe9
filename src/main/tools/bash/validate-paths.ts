import { ALLOW, deny, longName, type Verdict } from './validate-options'

/**
 * Commands run in the workspace folder and may only name paths inside it (DESIGN 2.2, applied lexically:
 * the validator has no file system). Absolute paths, `~` and `..` that climb above the workspace are
 * refused wherever they appear in an argument: whole, after `=` (`--git-dir=/x`), after `:` (`a:/x` lists),
 * glued to a short option (`-I/usr/include`), or in a URL (`file:///x`; and any URL read as the path it
 * also is: `ab://../../x`). `/dev/null` is the one absolute path
 * allowed. Arguments that are data rather than paths are exempt: everything echo and printf print, the
 * patterns of grep/rg/git grep (`'/api/'`), sed scripts (`'/^$/d'`) and git commit messages.
 */

/** Programs that would replace /dev/null itself (a device node, as root) rather than write into it. */
const REPLACES_TARGET = new Set(['mv', 'ln', 'install', 'cp'])

export function checkPaths(programKey: string, args: readonly string[]): Verdict {
  if (programKey === 'echo' || programKey === 'printf') return ALLOW
  const devNullOk = !REPLACES_TARGET.has(programKey)
  const exempt = dataArguments(programKey, args)
  for (const [i, arg] of args.entries()) {
    if (exempt.has(i)) continue
    const outside = outsidePart(arg, devNullOk)
    if (outside !== null)
      return deny(
        `\`${outside.slice(0, 80)}\` is outside the workspace: commands may only use paths inside it; use a path relative to the workspace folder (absolute paths, \`~\` and \`..\` above the workspace are refused)`,
      )
  }
  return ALLOW
}

function outsidePart(arg: string, devNullOk: boolean): string | null {
  if (/^[A-Za-z]:[\\/]/.test(arg) || arg.startsWith('\\')) return arg
  for (const part of arg.split('=')) {
    const url = URL_LIKE.exec(part)
    if (url !== null) {
      // To bash a URL is a path like any other (`ab://../../x` is the folder `ab:` and then `..` twice once
      // such a folder exists), and a `file:` URL is a path to the program too: both are checked.
      if (outsidePath(part, devNullOk)) return arg
      if (url[1]?.toLowerCase() === 'file' && outsidePath(part.slice(url[0].length), devNullOk)) return arg
      continue
    }
    for (const piece of part.split(':')) {
      const glued = /^-[A-Za-z0-9]+(\/.*)$/.exec(piece)
      const candidate = glued?.[1] ?? piece
      if (outsidePath(candidate, devNullOk)) return arg
    }
  }
  return null
}

const URL_LIKE = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//

function outsidePath(path: string, devNullOk: boolean): boolean {
  if (path === '/dev/null' && devNullOk) return false
  if (path.startsWith('/') || path.startsWith('~') || path.startsWith('\\')) return true
  let depth = 0
  for (const segment of path.split(/[\\/]/)) {
    if (segment === '..') {
      depth--
      if (depth < 0) return true
    } else if (segment !== '' && segment !== '.') {
      depth++
    }
  }
  return false
}

interface OptionShape {
  /** Short options that take a value (glued or in the next argument). */
  shortValue: string
  /** Long options that take a value (after `=` or in the next argument). */
  longValue: readonly string[]
  /** Short and long options whose value is a pattern/script (data). */
  dataShort: string
  dataLong: readonly string[]
  /** Options that read the patterns from a file: then no positional is a pattern. */
  fileShort: string
  fileLong: readonly string[]
}

const GREP: OptionShape = {
  shortValue: 'efmABCdD',
  longValue: [
    '--regexp',
    '--file',
    '--max-count',
    '--after-context',
    '--before-context',
    '--context',
    '--directories',
    '--devices',
    '--include',
    '--exclude',
    '--exclude-from',
    '--exclude-dir',
    '--label',
    '--binary-files',
  ],
  dataShort: 'e',
  dataLong: ['--regexp'],
  fileShort: 'f',
  fileLong: ['--file'],
}

const RG: OptionShape = {
  shortValue: 'efmABCgtTrjMEd',
  longValue: [
    '--regexp',
    '--file',
    '--glob',
    '--iglob',
    '--type',
    '--type-not',
    '--type-add',
    '--type-clear',
    '--replace',
    '--max-count',
    '--max-depth',
    '--max-filesize',
    '--max-columns',
    '--threads',
    '--encoding',
    '--sort',
    '--sortr',
    '--context',
    '--after-context',
    '--before-context',
    '--colors',
    '--ignore-file',
    '--path-separator',
    '--pre-glob',
    '--context-separator',
    '--field-match-separator',
    '--field-context-separator',
    '--dfa-size-limit',
    '--regex-size-limit',
    '--engine',
    '--hyperlink-format',
    '--generate',
  ],
  dataShort: 'e',
  dataLong: ['--regexp'],
  fileShort: 'f',
  fileLong: ['--file'],
}

const SED: OptionShape = {
  shortValue: 'elf',
  longValue: ['--expression', '--line-length', '--file'],
  dataShort: 'e',
  dataLong: ['--expression'],
  fileShort: 'f',
  fileLong: ['--file'],
}

const GIT_MESSAGE: OptionShape = {
  shortValue: 'mFC',
  longValue: ['--message', '--file', '--reuse-message', '--reedit-message'],
  dataShort: 'm',
  dataLong: ['--message'],
  fileShort: '',
  fileLong: [],
}

/** Indexes of the arguments that are patterns, scripts or messages rather than paths. */
function dataArguments(programKey: string, args: readonly string[]): Set<number> {
  switch (programKey) {
    case 'grep':
    case 'egrep':
    case 'fgrep':
      return classify(args, GREP, true).data
    case 'rg':
      return classify(args, RG, true).data
    case 'sed':
      return classify(args, SED, true).data
    case 'git': {
      // The subcommand is the first argument not starting with `-` after the global options; a global
      // option's value (`-C dir`) is never data, so an early guess only exempts less.
      const at = args.findIndex((arg) => !arg.startsWith('-'))
      const sub = args[at]
      if (sub === undefined) return new Set()
      const rest = args.slice(at + 1)
      const shape = sub === 'grep' ? GREP : GIT_MESSAGE
      const inner = classify(rest, shape, sub === 'grep').data
      return new Set([...inner].map((i) => i + at + 1))
    }
    default:
      return new Set()
  }
}

/**
 * Values of the data options, plus the first positional when the program takes its pattern/script there
 * (no data option and no pattern file given). Unknown options are taken as flags: a mistake then exempts an
 * earlier word instead of the pattern, which only refuses more. `operands` are the other positionals.
 */
function classify(
  args: readonly string[],
  shape: OptionShape,
  firstPositionalIsData: boolean,
): { data: Set<number>; operands: number[] } {
  const data = new Set<number>()
  let patternGiven = false
  const positional: number[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === '--') {
      for (let j = i + 1; j < args.length; j++) positional.push(j)
      break
    }
    const long = longName(arg)
    if (long !== null) {
      const isData = shape.dataLong.includes(long)
      if (isData || shape.fileLong.includes(long)) patternGiven = true
      if (shape.longValue.includes(long) && !arg.includes('=')) {
        if (isData && i + 1 < args.length) data.add(i + 1)
        i++
      } else if (isData) {
        data.add(i)
      }
      continue
    }
    if (arg.length > 1 && arg.startsWith('-')) {
      for (let j = 1; j < arg.length; j++) {
        const letter = arg[j] as string
        if (!shape.shortValue.includes(letter)) continue
        const isData = shape.dataShort.includes(letter)
        if (isData || shape.fileShort.includes(letter)) patternGiven = true
        if (j + 1 < arg.length) {
          if (isData) data.add(i)
        } else {
          if (isData && i + 1 < args.length) data.add(i + 1)
          i++
        }
        break
      }
      continue
    }
    positional.push(i)
  }
  const [first] = positional
  if (firstPositionalIsData && !patternGiven && first !== undefined) data.add(first)
  return { data, operands: positional.filter((i) => !data.has(i)) }
}

/** The files and folders grep or rg will search (its operands, without the pattern), or null for others. */
export function searchOperands(programKey: string, args: readonly string[]): string[] | null {
  const shape = programKey === 'rg' ? RG : programKey.endsWith('grep') ? GREP : null
  if (shape === null) return null
  return classify(args, shape, true).operands.map((i) => args[i] as string)
}
