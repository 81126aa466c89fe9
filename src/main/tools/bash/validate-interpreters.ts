import { ALLOW, deny, longName, type Verdict } from './validate-options'

/**
 * Interpreters (python, node, perl, ruby, ...). Policy: running a *script file* from the workspace is the
 * same kind of act as `npm test` (project code, shown to the human for approval), so `python3 tool.py` is
 * allowed; inline code (`-c`, `-e`, `--eval`, `-r`...), code from stdin (`-`) and interactive prompts (no
 * script at all) are refused, because the code the human approves must be in a file they can read. Options
 * before the script are checked against a per-interpreter allowlist (fail-closed: an option the checker does
 * not know is refused); everything after the script belongs to the script.
 */

interface InterpreterSpec {
  /** Short options allowed alone or clustered (no value). */
  flags: string
  /** Short options taking a value (the rest of the cluster, or the next argument). */
  valueFlags: string
  /** Short options whose value is the program to run (`python -m pytest`): they stand for the script. */
  programFlags?: string
  /** Long options that stand for the script (`node --test`, `node --run build`, `R --file=x.R`). */
  programLong?: readonly string[]
  /** Long options allowed; a trailing `*` allows every option with that prefix. */
  long: readonly string[]
  /** Long options taking their value in the next argument when not written `--opt=value`. */
  longValue?: readonly string[]
  /** Long options (or prefixes) refused even though an allowed prefix matches them. */
  longDenied?: readonly string[]
  /** Short options that run inline code: named in the reason. */
  codeFlags: string
  /** False when the first positional is not a script (e.g. `R CMD ...`). */
  positionalIsScript?: boolean
}

const VERSION_AND_HELP = ['--version', '--help']

const PYTHON: InterpreterSpec = {
  flags: 'bBdEIOqRsSuvVxhP?',
  valueFlags: 'WX',
  programFlags: 'm',
  long: [...VERSION_AND_HELP, '--help-all', '--help-env', '--help-xoptions', '--check-hash-based-pycs'],
  longValue: ['--check-hash-based-pycs'],
  codeFlags: 'ci',
}

/** node's long options taking a value (in the next argument unless written `--opt=value`); all allowed. */
const NODE_VALUE_LONG = [
  '--require',
  '--import',
  '--experimental-loader',
  '--loader',
  '--conditions',
  '--env-file',
  '--env-file-if-exists',
  '--title',
  '--run',
  '--watch-path',
  '--disable-warning',
  '--test-reporter',
  '--test-reporter-destination',
  '--test-name-pattern',
  '--test-skip-pattern',
  '--redirect-warnings',
]

const NODE: InterpreterSpec = {
  flags: 'vhc',
  valueFlags: 'rC',
  long: [
    ...VERSION_AND_HELP,
    ...NODE_VALUE_LONG,
    '--v8-options',
    '--check',
    '--watch',
    '--watch-preserve-output',
    '--test',
    '--test-*',
    '--experimental-*',
    '--no-*',
    '--trace-*',
    '--enable-source-maps',
    '--max-old-space-size',
    '--max-semi-space-size',
    '--stack-size',
    '--unhandled-rejections',
    '--expose-gc',
    '--preserve-symlinks',
    '--preserve-symlinks-main',
    '--abort-on-uncaught-exception',
    '--heapsnapshot-*',
    '--cpu-prof*',
    '--heap-prof*',
    '--report-*',
    '--frozen-intrinsics',
    '--pending-deprecation',
    '--throw-deprecation',
    '--permission',
    '--allow-*',
  ],
  longValue: NODE_VALUE_LONG,
  // Network imports fetch and run remote code; --input-type only matters for code given inline or on stdin.
  longDenied: ['--experimental-network-imports', '--input-type'],
  programLong: ['--run', '--test'],
  codeFlags: 'epi',
}

/** tsx and ts-node accept node's options plus their own; the code-running ones are the same. */
const TS_RUNNER: InterpreterSpec = {
  ...NODE,
  flags: 'vhcT',
  valueFlags: 'rCPO',
  long: [
    ...NODE.long,
    '--tsconfig',
    '--project',
    '--transpile-only',
    '--esm',
    '--swc',
    '--files',
    '--no-cache',
  ],
  longValue: [...(NODE.longValue ?? []), '--tsconfig', '--project'],
}

const PERL: InterpreterSpec = {
  flags: 'wWXTtcvVhs',
  valueFlags: 'I',
  long: VERSION_AND_HELP,
  codeFlags: 'eEMmnpix',
}

const RUBY: InterpreterSpec = {
  flags: 'wWvcdy',
  valueFlags: '',
  long: [...VERSION_AND_HELP, '--verbose', '--disable-gems', '--disable', '--enable', '--jit', '--yjit'],
  codeFlags: 'erSxnpi',
}

const PHP: InterpreterSpec = {
  flags: 'vlnhmiq',
  valueFlags: '',
  programFlags: 'f',
  long: [...VERSION_AND_HELP, '--ini', '--syntax-check', '--no-php-ini'],
  codeFlags: 'rRBEFaSdz',
}

const LUA: InterpreterSpec = { flags: 'vWE', valueFlags: '', long: VERSION_AND_HELP, codeFlags: 'eli' }

const RSCRIPT: InterpreterSpec = {
  flags: '',
  valueFlags: '',
  long: [
    ...VERSION_AND_HELP,
    '--vanilla',
    '--verbose',
    '--no-environ',
    '--no-site-file',
    '--no-init-file',
    '--no-restore',
    '--no-save',
    '--default-packages',
  ],
  codeFlags: 'e',
}

const R: InterpreterSpec = {
  flags: 'qs',
  valueFlags: '',
  programFlags: 'f',
  long: [
    ...VERSION_AND_HELP,
    '--vanilla',
    '--no-save',
    '--no-restore',
    '--quiet',
    '--silent',
    '--slave',
    '--file',
  ],
  programLong: ['--file'],
  codeFlags: 'e',
  positionalIsScript: false,
}

const JULIA: InterpreterSpec = {
  flags: 'qvh',
  valueFlags: 'tOp',
  long: [
    ...VERSION_AND_HELP,
    '--project',
    '--threads',
    '--startup-file',
    '--history-file',
    '--color',
    '--check-bounds',
    '--compile',
    '--optimize',
    '--quiet',
    '--banner',
    '--depwarn',
  ],
  codeFlags: 'eEiL',
}

/** Interpreters with no option the checker trusts: a script file, or a version/help query. */
const SCRIPT_ONLY: InterpreterSpec = { flags: '', valueFlags: '', long: VERSION_AND_HELP, codeFlags: '' }

export const INTERPRETERS: ReadonlyMap<string, InterpreterSpec> = new Map([
  ['python', PYTHON],
  ['python2', PYTHON],
  ['python3', PYTHON],
  ['pypy', PYTHON],
  ['pypy3', PYTHON],
  ['py', PYTHON],
  ['ipython', PYTHON],
  ['ipython3', PYTHON],
  ['node', NODE],
  ['nodejs', NODE],
  ['tsx', TS_RUNNER],
  ['ts-node', TS_RUNNER],
  ['ts-node-esm', TS_RUNNER],
  ['esno', TS_RUNNER],
  ['perl', PERL],
  ['ruby', RUBY],
  ['php', PHP],
  ['lua', LUA],
  ['luajit', LUA],
  ['rscript', RSCRIPT],
  ['r', R],
  ['julia', JULIA],
  ...[
    'tclsh',
    'wish',
    'guile',
    'racket',
    'sbcl',
    'clisp',
    'ecl',
    'scala',
    'groovy',
    'kotlin',
    'jshell',
    'swift',
    'ghci',
    'runghc',
    'runhaskell',
    'elixir',
    'iex',
    'erl',
    'escript',
    'ocaml',
    'csi',
    'gosh',
    'octave',
    'irb',
    'pry',
  ].map((name) => [name, SCRIPT_ONLY] as const),
])

export function checkInterpreter(name: string, spec: InterpreterSpec, args: readonly string[]): Verdict {
  const inline = (option: string): Verdict =>
    deny(
      `\`${name} ${option}\` runs inline code, which is not allowed; write the code to a file with write_file and run \`${name} <file>\``,
    )
  const unknown = (option: string): Verdict =>
    deny(
      `\`${name}\` option \`${option}\` is not allowed before the script (options can run inline code); run \`${name} <script-file>\``,
    )
  let query = false
  let program = false
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === '-')
      return deny(`\`${name} -\` reads code from stdin, which is empty here; run a script file`)
    if (arg === '--') {
      if (args[i + 1] === undefined) break
      return checkScript(name, spec, args[i + 1] as string)
    }
    const long = longName(arg)
    if (long !== null) {
      if (spec.longDenied?.some((d) => long.startsWith(d))) return unknown(long)
      if (/^--(eval|print|interactive|inspect|debug|expr)/.test(long)) return inline(long)
      const allowed = spec.long.some((o) => (o.endsWith('*') ? long.startsWith(o.slice(0, -1)) : long === o))
      if (!allowed) return unknown(long)
      if (long === '--version' || long.startsWith('--help') || long === '--v8-options') query = true
      const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : undefined
      if (value === undefined && spec.longValue?.includes(long)) {
        const next = args[++i]
        if (next === undefined) return deny(`\`${name} ${long}\` needs a value`)
        const bad = remoteCode(next)
        if (bad) return deny(bad)
      } else if (value !== undefined) {
        const bad = remoteCode(value)
        if (bad) return deny(bad)
      }
      if (spec.programLong?.includes(long)) program = true
      continue
    }
    if (arg.startsWith('-') && arg.length > 1) {
      for (let j = 1; j < arg.length; j++) {
        const letter = arg[j] as string
        if (spec.codeFlags.includes(letter)) return inline(`-${letter}`)
        if (spec.flags.includes(letter)) {
          if ('vVh?'.includes(letter)) query = true
          continue
        }
        const takesValue = spec.valueFlags.includes(letter) || spec.programFlags?.includes(letter) === true
        if (!takesValue) return unknown(`-${letter}`)
        const rest = arg.slice(j + 1)
        const value = rest !== '' ? rest : args[++i]
        if (value === undefined) return deny(`\`${name} -${letter}\` needs a value`)
        const bad = remoteCode(value)
        if (bad) return deny(bad)
        if (spec.programFlags?.includes(letter)) return ALLOW
        break
      }
      continue
    }
    return checkScript(name, spec, arg)
  }
  if (query || program) return ALLOW
  return deny(
    `\`${name}\` without a script starts an interactive prompt, which gets no input here; run \`${name} <script-file>\``,
  )
}

function checkScript(name: string, spec: InterpreterSpec, script: string): Verdict {
  if (spec.positionalIsScript === false)
    return deny(`\`${name} ${script}\` is not allowed; run a script file with \`${name} -f <file>\``)
  const bad = remoteCode(script)
  return bad ? deny(bad) : ALLOW
}

/** Module specifiers and script paths that are code inline or from the network rather than a file. */
function remoteCode(value: string): string | null {
  return /^(data|https?|ftp|npm|jsr):/i.test(value)
    ? `\`${value.slice(0, 40)}\` is code from a URL or inline data, not a file in the workspace; it is not allowed`
    : null
}
