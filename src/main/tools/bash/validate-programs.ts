import { checkGit } from './validate-git'
import { checkInterpreter, INTERPRETERS } from './validate-interpreters'
import {
  ALLOW,
  clusterHas,
  deny,
  longName,
  matchesLong,
  shortCluster,
  type Verdict,
} from './validate-options'
import {
  ASK_USER,
  DENIED,
  DENIED_PREFIXES,
  NPM_ALIASES,
  NPM_COMMANDS,
  PACKAGE_MANAGER_DENIED,
  PACKAGE_MANAGER_OPTIONS,
  SCRIPT_RUNNERS,
} from './validate-programs.data'
import { checkSed } from './validate-sed'
import { own } from '../../../shared/own'

/**
 * What a syntactically simple command may run. Programs are matched case-insensitively (macOS and Windows
 * file systems are), with a Windows executable extension stripped, and also by their family name
 * (`mkfs.ext4` -> `mkfs`, `python3.12` -> `python3`, `pip3` -> `pip`), so spelling variants of a denied
 * program stay denied. Unknown programs are allowed here: they go to human approval.
 */

/** The names a program may be known by: `Rm.EXE` -> rm; `python3.12` -> python3.12, python3, python. */
export function programKeys(name: string): string[] {
  let lower = name.toLowerCase()
  for (;;) {
    const stripped = lower.replace(/\.(exe|com|bat|cmd|ps1)$/, '').replace(/\.+$/, '')
    if (stripped === lower || stripped === '') break
    lower = stripped
  }
  const keys = [lower]
  const dot = lower.indexOf('.')
  if (dot > 0) keys.push(lower.slice(0, dot))
  for (const key of [...keys]) {
    const unversioned = key.replace(/[\d._-]+$/, '')
    if (unversioned !== '' && unversioned !== key) keys.push(unversioned)
  }
  // Homebrew installs GNU tools with a `g` prefix on macOS (grm, gxargs, gtimeout, gsed, gtar, gfind).
  for (const key of [...keys]) if (key.length > 2 && key.startsWith('g')) keys.push(key.slice(1))
  return [...new Set(keys)]
}

export function checkProgram(name: string, args: readonly string[]): Verdict {
  const keys = programKeys(name)
  for (const key of keys) {
    const why = DENIED.get(key) ?? DENIED_PREFIXES.find(([prefix]) => key.startsWith(prefix))?.[1]
    if (why !== undefined) return deny(`\`${name}\` is not allowed: ${why}`)
  }
  for (const key of keys) {
    const spec = INTERPRETERS.get(key)
    if (spec !== undefined) return checkInterpreter(name, spec, args)
    const rule = own(RULES, key)
    if (rule !== undefined) return rule(args, name)
  }
  return ALLOW
}

const PS_ENVIRONMENT =
  "`ps` with `e` shows the processes' environments, which hold keys; run ps without it (e.g. `ps aux`)"

type Rule = (args: readonly string[], name: string) => Verdict

/** tar options that name a program to run. */
const TAR_PROGRAM_OPTIONS = [
  '--to-command',
  '--checkpoint-action',
  '--use-compress-program',
  '--info-script',
  '--new-volume-script',
  '--rsh-command',
  '--rmt-command',
]

/** `-exec` etc. run commands, `-delete` deletes, `-fprint*`/`-fls` write files. */
const FIND_ACTIONS = [
  '-exec',
  '-execdir',
  '-ok',
  '-okdir',
  '-delete',
  '-fprint',
  '-fprint0',
  '-fprintf',
  '-fls',
]

const RULES: Record<string, Rule> = {
  find: (args) => {
    const action = args.find((arg) => FIND_ACTIONS.includes(arg))
    if (action === undefined) return ALLOW
    return deny(
      action === '-delete'
        ? '`find -delete` deletes files; list them with find (or the glob tool) and ask the user to delete them'
        : action.startsWith('-f')
          ? `\`find ${action}\` writes a file; print to the output instead`
          : `\`find ${action}\` runs a command for each file; use find (or the glob tool) to list the files, then act on them one call at a time`,
    )
  },
  fd: (args) => checkFd(args),
  fdfind: (args) => checkFd(args),
  rg: (args) =>
    args.some((arg) => arg === '--pre' || arg.startsWith('--pre=') || arg.startsWith('--hostname-bin'))
      ? deny('`rg --pre` / `--hostname-bin` run a program; use rg without them, or the grep tool')
      : ALLOW,
  git: (args) => checkGit(args),
  sed: (args) => checkSed(args),
  tar: (args) => {
    for (const arg of args) {
      const option = matchesLong(arg, TAR_PROGRAM_OPTIONS, ['--checkpoint'])
      if (option !== null)
        return deny(`\`tar ${option}\` runs a program; use tar with its built-in options (-z, -j, -J)`)
    }
    // The first argument may be an old-style cluster without a dash (`tar xIf ...`).
    const first = args[0]
    const oldStyle = first !== undefined && !first.startsWith('-') ? `-${first}` : undefined
    if ([...args, oldStyle].some((arg) => arg !== undefined && clusterHas(arg, 'IF')))
      return deny('`tar -I` / `-F` run a program; use tar with its built-in options (-z, -j, -J)')
    if (!args.includes('--force-local') && args.some((arg) => !arg.startsWith('-') && arg.includes(':')))
      return deny(
        'tar reads `host:file` as a remote archive (over rsh/ssh); add `--force-local` or rename the file',
      )
    return ALLOW
  },
  zip: (args) =>
    args.some(
      (arg) => matchesLong(arg, ['--unzip-command']) !== null || (shortCluster(arg) ?? '').includes('TT'),
    )
      ? deny('`zip -TT` / `--unzip-command` run a program; use `zip -T` to test the archive')
      : ALLOW,
  sort: (args) =>
    args.some((arg) => matchesLong(arg, ['--compress-program']) !== null)
      ? deny('`sort --compress-program` runs a program; sort without it')
      : ALLOW,
  split: (args) =>
    args.some((arg) => matchesLong(arg, ['--filter']) !== null)
      ? deny('`split --filter` runs a shell command; split without it')
      : ALLOW,
  date: (args) =>
    args.some((arg) => matchesLong(arg, ['--set']) !== null || clusterHas(arg, 's'))
      ? deny('`date -s` sets the system clock; it is not allowed')
      : ALLOW,
  hostname: (args) =>
    args.some((arg) => !arg.startsWith('-') || matchesLong(arg, ['--file']) !== null || clusterHas(arg, 'bF'))
      ? deny('`hostname <name>` changes the machine name; it is not allowed')
      : ALLOW,
  printf: (args) =>
    args[0] !== undefined && args[0].startsWith('-v')
      ? deny(
          '`printf -v` assigns a shell variable (and can run code through array subscripts); print to the output',
        )
      : ALLOW,
  make: (args) =>
    args.some((arg) => matchesLong(arg, ['--eval']) !== null || clusterHas(arg, 'E'))
      ? deny('`make --eval` runs make code given on the command line; put the rule in the Makefile')
      : ALLOW,
  cmake: (args) =>
    args.some((arg) => arg === '-E' || arg === '-P')
      ? deny('`cmake -E` / `-P` run commands or scripts directly; use a configured build (`cmake --build`)')
      : ALLOW,
  java: (args) => {
    // Every argument is checked: where java's own options end depends on options that take values.
    for (const arg of args) {
      if (arg.startsWith('@'))
        return deny('java `@argfiles` hide options from the checker; pass the options inline')
      if (/^-XX:[+-]?On/i.test(arg) || /^-agent(lib|path)/.test(arg))
        return deny(`java option \`${arg.split('=')[0]}\` runs a program or native code; run java without it`)
    }
    return ALLOW
  },
  go: (args) => {
    if (args.some((arg) => /^--?(toolexec|exec)(=|$)/.test(arg)))
      return deny('`go -exec` / `-toolexec` run another program around the build; run go without them')
    if (args[0] === 'env' && args.includes('-w'))
      return deny('`go env -w` changes go settings for later builds; ask the user to change them')
    if (args[0] === 'run' && args.some((arg) => /@/.test(arg) && !arg.startsWith('-')))
      return deny(
        '`go run pkg@version` downloads and runs code; add the dependency to the module and run it locally',
      )
    return ALLOW
  },
  cargo: (args) =>
    args.some((arg) => matchesLong(arg, ['--config']) !== null || /^-Z/.test(arg))
      ? deny(
          '`cargo --config` / `-Z` can make cargo run other programs (runners, linkers); run cargo without them',
        )
      : ALLOW,
  ps: (args) => {
    // BSD-style `e` (`ps axeww`), `-E`, and on macOS `-e` print every process's environment: the user's
    // keys included, and the app's own when the command runs outside the sandbox.
    for (let i = 0; i < args.length; i++) {
      const arg = args[i] as string
      const shows =
        (!arg.startsWith('-') && /^[A-Za-z]+$/.test(arg) && arg.includes('e')) ||
        clusterHas(arg, 'E') ||
        (process.platform === 'darwin' && clusterHas(arg, 'e'))
      if (shows) return deny(PS_ENVIRONMENT)
      // A short option that takes a value (`-o user`, `-C node`) has it in the next argument.
      if (/^-[A-Za-z]*[oOCpqsugGtUk]$/.test(arg)) i++
    }
    return ALLOW
  },
  npm: (args, name) => checkNodePackageManager(name, args),
  pnpm: (args, name) => checkNodePackageManager(name, args),
  yarn: (args, name) => checkNodePackageManager(name, args),
  bun: (args, name) => checkNodePackageManager(name, args),
  deno: (args) => {
    if (args.length === 0)
      return deny('`deno` without arguments starts an interactive prompt; run a script file')
    if (args.some((arg) => /^(https?|data|npm|jsr):/i.test(arg)))
      return deny('deno would run code from a URL or a registry; run a script file from the workspace')
    // Options may take values, so any positional naming one of these subcommands is refused.
    const sub = args.find((arg) =>
      ['eval', 'repl', 'x', 'install', 'uninstall', 'upgrade', 'jupyter'].includes(arg),
    )
    if (sub !== undefined)
      return deny(`\`deno ${sub}\` runs inline or downloaded code, or changes the system; run a script file`)
    if (args.some((arg) => /^--(eval|print)/.test(arg) || arg === '-e' || arg === '-p'))
      return deny('deno inline code is not allowed; write the code to a file with write_file and run it')
    return ALLOW
  },
  uv: (args) =>
    args[0] === 'run' || (args[0] === 'tool' && args[1] === 'run')
      ? deny('`uv run` runs another command that the checker cannot vet; run the command directly')
      : ALLOW,
  poetry: (args) => denyRunWrapper('poetry', args, 'run'),
  pipenv: (args) => denyRunWrapper('pipenv', args, 'run'),
  pdm: (args) => denyRunWrapper('pdm', args, 'run'),
  hatch: (args) => denyRunWrapper('hatch', args, 'run'),
  rye: (args) => denyRunWrapper('rye', args, 'run'),
  conda: (args) => denyRunWrapper('conda', args, 'run'),
  mamba: (args) => denyRunWrapper('mamba', args, 'run'),
  micromamba: (args) => denyRunWrapper('micromamba', args, 'run'),
  pixi: (args) => denyRunWrapper('pixi', args, 'run'),
  bundle: (args) => denyRunWrapper('bundle', args, 'exec'),
  dotnet: (args) => denyRunWrapper('dotnet', args, 'exec'),
}

function denyRunWrapper(program: string, args: readonly string[], verb: string): Verdict {
  return args.find((arg) => !arg.startsWith('-')) === verb
    ? deny(
        `\`${program} ${verb}\` runs another command that the checker cannot vet; run the command directly`,
      )
    : ALLOW
}

function checkFd(args: readonly string[]): Verdict {
  return args.some((arg) => matchesLong(arg, ['--exec', '--exec-batch']) !== null || clusterHas(arg, 'xX'))
    ? deny('`fd --exec` runs a command for each result; list the files, then act on them one call at a time')
    : ALLOW
}

function checkNodePackageManager(name: string, args: readonly string[]): Verdict {
  const tool = programKeys(name).find((key) => Object.hasOwn(PACKAGE_MANAGER_DENIED, key)) ?? 'npm'
  const option = args.find((arg) => matchesLong(arg, PACKAGE_MANAGER_OPTIONS) !== null)
  if (option !== undefined)
    return deny(
      `\`${tool} ${longName(option)}\` changes what runs the scripts (or runs inline code); run it without that option`,
    )
  if (tool === 'bun' && args.some((arg) => arg === '-e' || arg === '-p'))
    return deny('`bun -e` runs inline code; write the code to a file with write_file and run `bun <file>`')
  if (tool === 'npm' && args.some((arg) => clusterHas(arg, 'c')) && args.includes('exec'))
    return deny('`npm exec -c` runs a shell command; run the command directly')
  // Options may take a value in the next argument (`--prefix dir`, `-C dir`, `--filter pkg`), so the
  // subcommand is not reliably the first positional: every positional is checked up to the one that runs a
  // package script (what follows it is the script's name and arguments).
  const dashDash = args.indexOf('--')
  const positional = (dashDash === -1 ? args : args.slice(0, dashDash)).filter((arg) => !arg.startsWith('-'))
  const resolve = (arg: string): string => (tool === 'npm' ? (npmCommand(arg) ?? arg) : arg)
  for (const word of positional) {
    const arg = resolve(word)
    if (SCRIPT_RUNNERS.has(arg)) break
    if (own(PACKAGE_MANAGER_DENIED, tool)?.includes(arg))
      return deny(
        `\`${tool} ${word}\`${word === arg ? '' : ` (${tool} ${arg})`} is not allowed: it downloads and runs code, opens an interactive program, or publishes; use a package script (\`${tool} run <script>\`) or ${ASK_USER}`,
      )
  }
  const [word, ...rest] = positional
  const sub = word === undefined ? undefined : resolve(word)
  // `npm init <initializer>` is `npm exec create-<initializer>`: a download-and-run.
  if (sub === 'init' && rest.length > 0)
    return deny(`\`${tool} ${word} <initializer>\` downloads and runs a package; ${ASK_USER}`)
  const configWrite =
    sub === 'set' || (sub === 'config' && ['set', 'edit', 'delete', 'rm', 'fix'].includes(rest[0] ?? ''))
  if (configWrite)
    return deny(
      `\`${tool} config set/edit/delete\` changes settings for later commands; ask the user to change them`,
    )
  return ALLOW
}

/**
 * The npm command a word runs, resolved as npm's `deref` does (lib/utils/cmd-list.js): camelCase to
 * kebab-case, an exact command or alias, else the one command or alias it is a unique prefix of, then
 * aliases followed to their command. Undefined when npm would not run a command for it.
 */
export function npmCommand(word: string): string | undefined {
  const c = /[A-Z]/.test(word) ? word.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`) : word
  if (NPM_COMMANDS.includes(c)) return c
  if (Object.hasOwn(NPM_ALIASES, c)) return NPM_ALIASES[c]
  const names = [...NPM_COMMANDS, ...Object.keys(NPM_ALIASES)]
  const candidates = names.filter((name) => name.startsWith(c))
  let found = candidates.length === 1 ? candidates[0] : undefined
  while (found !== undefined && Object.hasOwn(NPM_ALIASES, found)) found = NPM_ALIASES[found]
  return found
}
