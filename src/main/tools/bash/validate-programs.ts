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
import { checkSed } from './validate-sed'

/**
 * What a syntactically simple command may run. Programs are matched case-insensitively (macOS and Windows
 * file systems are), with a Windows executable extension stripped, and also by their family name
 * (`mkfs.ext4` -> `mkfs`, `python3.12` -> `python3`, `pip3` -> `pip`), so spelling variants of a denied
 * program stay denied. Unknown programs are allowed here: they go to human approval.
 */

interface DenyClass {
  /** Why the program is refused, completing "`x` is not allowed: ...". */
  why: string
  names: readonly string[]
}

const ASK_USER = 'ask the user to run it themselves'

const DENY_CLASSES: readonly DenyClass[] = [
  {
    why: `it deletes or overwrites data irreversibly; ${ASK_USER} (to change a file, use write_file or edit_file)`,
    names: [
      'rm',
      'rmdir',
      'unlink',
      'shred',
      'wipe',
      'srm',
      'dd',
      'truncate',
      'fdisk',
      'sfdisk',
      'cfdisk',
      'gdisk',
      'sgdisk',
      'parted',
      'partprobe',
      'wipefs',
      'blkdiscard',
      'mkswap',
      'swapon',
      'swapoff',
      'losetup',
      'cryptsetup',
      'mdadm',
      'dmsetup',
      'lvremove',
      'vgremove',
      'pvremove',
      'lvcreate',
      'vgcreate',
      'pvcreate',
      'hdparm',
      'debugfs',
      'tune2fs',
      'e2fsck',
      'badblocks',
      'zerofree',
      'mke2fs',
      'diskutil',
      'zpool',
      'zfs',
      'btrfs',
      'format',
      'del',
      'erase',
      'rd',
      'deltree',
    ],
  },
  {
    why: `it changes the state of the whole machine (power, services, kernel, boot); ${ASK_USER}`,
    names: [
      'shutdown',
      'reboot',
      'halt',
      'poweroff',
      'init',
      'telinit',
      'systemctl',
      'service',
      'rc-service',
      'rc-update',
      'update-rc.d',
      'chkconfig',
      'launchctl',
      'loginctl',
      'sysctl',
      'modprobe',
      'insmod',
      'rmmod',
      'kexec',
      'hostnamectl',
      'timedatectl',
      'hwclock',
      'grub-install',
      'update-grub',
      'efibootmgr',
      'wall',
      'update-alternatives',
    ],
  },
  {
    why: `it runs commands with other privileges or as another user; ${ASK_USER}`,
    names: [
      'sudo',
      'su',
      'doas',
      'pkexec',
      'runuser',
      'sg',
      'newgrp',
      'setpriv',
      'capsh',
      'setcap',
      'visudo',
      'sudoedit',
      'gosu',
      'su-exec',
      'chroot',
      'login',
      'runas',
    ],
  },
  {
    why: `it changes ownership, permissions or attributes of files; ${ASK_USER}`,
    names: [
      'chown',
      'chmod',
      'chgrp',
      'chattr',
      'setfacl',
      'chcon',
      'chflags',
      'lchown',
      'icacls',
      'takeown',
      'attrib',
    ],
  },
  {
    why: `it signals or kills processes; ${ASK_USER} (a bash call that times out is stopped with everything it started)`,
    names: ['kill', 'killall', 'killall5', 'pkill', 'skill', 'slay', 'xkill', 'renice', 'fuser', 'taskkill'],
  },
  {
    why: 'it reaches the network (downloads, uploads, remote shells, scans) outside what the user approved; ask the user to fetch what you need',
    names: [
      'curl',
      'wget',
      'ssh',
      'scp',
      'sftp',
      'rsync',
      'nc',
      'ncat',
      'netcat',
      'socat',
      'telnet',
      'ftp',
      'tftp',
      'lftp',
      'aria2c',
      'axel',
      'http',
      'https',
      'httpie',
      'xh',
      'ssh-keygen',
      'ssh-copy-id',
      'ssh-add',
      'ssh-agent',
      'ssh-keyscan',
      'sshpass',
      'sshfs',
      'mosh',
      'nmap',
      'masscan',
      'ping',
      'ping6',
      'dig',
      'nslookup',
      'host',
      'traceroute',
      'tracepath',
      'mtr',
      'whois',
      'tcpdump',
      'tshark',
      'iptables',
      'ip6tables',
      'nft',
      'ufw',
      'firewall-cmd',
      'ip',
      'ifconfig',
      'route',
      'iwconfig',
      'nmcli',
      'openssl',
      'gh',
      'glab',
      'hub',
      'aws',
      'gcloud',
      'gsutil',
      'az',
      'doctl',
      'heroku',
      'flyctl',
      'fly',
      'vercel',
      'netlify',
      'firebase',
      'wrangler',
      'rclone',
      's3cmd',
      'smbclient',
      'sendmail',
      'mail',
      'mailx',
      'mutt',
      'ngrok',
      'cloudflared',
      'tailscale',
      'wg',
      'wg-quick',
      'openvpn',
      'lynx',
      'links',
      'w3m',
      'bitsadmin',
      'certutil',
      'invoke-webrequest',
      'iwr',
    ],
  },
  {
    why: `it schedules commands to run later; ${ASK_USER}`,
    names: ['crontab', 'at', 'batch', 'atrm', 'anacron', 'systemd-run', 'schtasks'],
  },
  {
    why: `it mounts or unmounts file systems; ${ASK_USER}`,
    names: ['mount', 'umount', 'fusermount', 'fusermount3'],
  },
  {
    why: `it manages users, groups, passwords or secrets; ${ASK_USER}`,
    names: [
      'useradd',
      'userdel',
      'usermod',
      'adduser',
      'deluser',
      'groupadd',
      'groupdel',
      'groupmod',
      'addgroup',
      'delgroup',
      'passwd',
      'chpasswd',
      'chsh',
      'chfn',
      'gpasswd',
      'vipw',
      'vigr',
      'chage',
      'newusers',
      'gpg',
      'gpg2',
      'security',
      'secret-tool',
      'keyctl',
      'pass',
      'gopass',
      'op',
      'bw',
      'lpass',
      'vault',
    ],
  },
  {
    why: 'it runs another command given as its arguments, which the checker cannot vet; run the command directly',
    names: [
      'env',
      'nice',
      'ionice',
      'timeout',
      'xargs',
      'nohup',
      'eval',
      'exec',
      'command',
      'builtin',
      'time',
      'times',
      'watch',
      'strace',
      'ltrace',
      'gdb',
      'lldb',
      'valgrind',
      'perf',
      'setsid',
      'stdbuf',
      'script',
      'unbuffer',
      'expect',
      'parallel',
      'flock',
      'chrt',
      'taskset',
      'prlimit',
      'numactl',
      'cgexec',
      'firejail',
      'bwrap',
      'proot',
      'fakeroot',
      'fakechroot',
      'unshare',
      'nsenter',
      'runcon',
      'xvfb-run',
      'dbus-run-session',
      'dbus-launch',
      'entr',
      'nodemon',
      'run-parts',
      'rlwrap',
      'torsocks',
      'torify',
      'proxychains',
      'proxychains4',
      'tsocks',
      'direnv',
      'dotenv',
      'envdir',
      'chpst',
      'daemonize',
      'start-stop-daemon',
      'screen',
      'tmux',
      'byobu',
      'dtach',
      'abduco',
      'coproc',
      'caffeinate',
      'catchsegv',
      'sem',
      'trap',
      'fc',
      'bind',
      'complete',
      'compgen',
      'enable',
      'mapfile',
      'readarray',
      'xdotool',
      'start',
      'open',
      'xdg-open',
      'gio',
      'kde-open',
      'gnome-open',
      'explorer',
      'sensible-browser',
      'x-www-browser',
      'www-browser',
      'rundll32',
      'regsvr32',
      'mshta',
      'cscript',
      'wscript',
      'osascript',
      'jrunscript',
      'nix-shell',
      'nix',
      'ld.so',
    ],
  },
  {
    why: 'it is a shell, which runs whatever code it is given; run the command itself directly',
    names: [
      'sh',
      'bash',
      'zsh',
      'dash',
      'ksh',
      'mksh',
      'pdksh',
      'oksh',
      'yash',
      'fish',
      'csh',
      'tcsh',
      'ash',
      'rbash',
      'rc',
      'es',
      'elvish',
      'nu',
      'nushell',
      'xonsh',
      'pwsh',
      'powershell',
      'cmd',
      'osh',
      'ysh',
      'posh',
      'hush',
      'busybox',
      'toybox',
    ],
  },
  {
    why: 'its program text is code (awk can run commands with system() and pipes, and write files); use the grep tool to search, or read_file',
    names: ['awk', 'gawk', 'mawk', 'nawk', 'goawk', 'frawk', 'm4', 'dc', 'gnuplot'],
  },
  {
    why: 'it is interactive (an editor, pager or full-screen program) and can run shell commands from inside; there is no terminal input here. Use read_file, edit_file or write_file',
    names: [
      'less',
      'more',
      'most',
      'pg',
      'vi',
      'vim',
      'nvim',
      'view',
      'vimdiff',
      'gvim',
      'ex',
      'ed',
      'red',
      'nano',
      'pico',
      'emacs',
      'emacsclient',
      'joe',
      'jed',
      'mcedit',
      'micro',
      'hx',
      'helix',
      'kak',
      'man',
      'info',
      'pinfo',
      'top',
      'htop',
      'btop',
      'atop',
      'iotop',
      'nmtui',
      'mc',
      'ranger',
      'nnn',
      'lf',
      'vifm',
      'fzf',
      'dialog',
      'whiptail',
      'tig',
      'lazygit',
      'sqlite3',
      'mysql',
      'mariadb',
      'psql',
      'mongo',
      'mongosh',
      'redis-cli',
      'sqlcmd',
      'code',
      'subl',
      'notepad',
    ],
  },
  {
    why: `it controls containers, virtual machines or remote infrastructure, which reach outside the workspace; ${ASK_USER}`,
    names: [
      'docker',
      'docker-compose',
      'podman',
      'podman-compose',
      'nerdctl',
      'ctr',
      'crictl',
      'kubectl',
      'helm',
      'minikube',
      'kind',
      'k3s',
      'lxc',
      'lxd',
      'systemd-nspawn',
      'virsh',
      'vagrant',
      'multipass',
      'terraform',
      'tofu',
      'pulumi',
      'ansible',
      'ansible-playbook',
      'salt',
      'puppet',
      'chef',
    ],
  },
  {
    why: `it installs or removes system packages outside the workspace; ${ASK_USER}`,
    names: [
      'apt',
      'apt-get',
      'aptitude',
      'dpkg',
      'yum',
      'dnf',
      'rpm',
      'pacman',
      'yay',
      'paru',
      'zypper',
      'apk',
      'emerge',
      'brew',
      'port',
      'snap',
      'flatpak',
      'nix-env',
      'guix',
      'choco',
      'winget',
      'scoop',
      'pkg',
      'pkgin',
      'installer',
      'softwareupdate',
    ],
  },
  {
    why: 'it downloads and runs code in one step; add the dependency to the project and use a package script (`npm run <script>`)',
    names: ['npx', 'pnpx', 'bunx', 'uvx', 'pipx'],
  },
  {
    why: 'it is a shell builtin that defines, evaluates or inspects shell state (names it is given can run code through array subscripts), and nothing it sets outlives this call; write values literally',
    names: [
      'source',
      'alias',
      'unalias',
      'let',
      'declare',
      'typeset',
      'local',
      'export',
      'readonly',
      'unset',
      'read',
      'getopts',
      'wait',
      'test',
      'hash',
      'history',
      'shopt',
      'set',
      'disown',
      'suspend',
      'logout',
      'ulimit',
      'umask',
      'jobs',
      'fg',
      'bg',
      'caller',
      'function',
      'select',
      'if',
      'then',
      'else',
      'elif',
      'fi',
      'case',
      'esac',
      'for',
      'while',
      'until',
      'do',
      'done',
      'in',
    ],
  },
]

const DENIED: ReadonlyMap<string, string> = new Map(
  DENY_CLASSES.flatMap((c) => c.names.map((name) => [name, c.why] as const)),
)

/** Families matched by prefix: every variant of these is the same danger. */
const DENIED_PREFIXES: readonly [prefix: string, why: string][] = [
  ['mkfs', DENIED.get('rm') as string],
  ['fsck', DENIED.get('rm') as string],
  ['qemu', DENIED.get('docker') as string],
  ['ld-linux', DENIED.get('env') as string],
  [
    'git-',
    'git helper programs are not run directly (some run shells or servers); use `git <subcommand>` with a built-in subcommand',
  ],
]

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
    const rule = RULES[key]
    if (rule !== undefined) return rule(args, name)
  }
  return ALLOW
}

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

/** npm/pnpm/yarn/bun: package scripts are fine (human approval); downloading-and-running is not. */
const PACKAGE_MANAGER_DENIED: Record<string, readonly string[]> = {
  npm: [
    'exec',
    'x',
    'explore',
    'edit',
    'create',
    'publish',
    'unpublish',
    'deprecate',
    'owner',
    'access',
    'token',
    'adduser',
    'login',
    'logout',
    'team',
    'org',
    'hook',
    'profile',
  ],
  pnpm: ['dlx', 'exec', 'create', 'x', 'publish', 'env'],
  yarn: ['dlx', 'exec', 'create', 'node', 'publish', 'npm'],
  bun: ['x', 'create', 'repl', 'publish', 'upgrade'],
}

const SCRIPT_RUNNERS = new Set([
  'run',
  'run-script',
  'rum',
  'urn',
  'test',
  't',
  'tst',
  'start',
  'stop',
  'restart',
])

/** Options that choose the shell or the node runtime flags that package scripts run with. */
const PACKAGE_MANAGER_OPTIONS = [
  '--script-shell',
  '--shell',
  '--shell-emulator',
  '--node-options',
  '--editor',
  '--browser',
  '--call',
  '--userconfig',
  '--globalconfig',
  '--init-module',
  '--eval',
  '--print',
]

function checkNodePackageManager(name: string, args: readonly string[]): Verdict {
  const tool = programKeys(name).find((key) => key in PACKAGE_MANAGER_DENIED) ?? 'npm'
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
  for (const arg of positional) {
    if (SCRIPT_RUNNERS.has(arg)) break
    if (PACKAGE_MANAGER_DENIED[tool]?.includes(arg))
      return deny(
        `\`${tool} ${arg}\` is not allowed: it downloads and runs code, opens an interactive program, or publishes; use a package script (\`${tool} run <script>\`) or ${ASK_USER}`,
      )
  }
  const [sub, ...rest] = positional
  // `npm init <initializer>` is `npm exec create-<initializer>`: a download-and-run.
  if ((sub === 'init' || sub === 'innit') && rest.length > 0)
    return deny(`\`${tool} init <initializer>\` downloads and runs a package; ${ASK_USER}`)
  const configWrite =
    sub === 'set' ||
    ((sub === 'config' || sub === 'c') && ['set', 'edit', 'delete', 'rm', 'fix'].includes(rest[0] ?? ''))
  if (configWrite)
    return deny(
      `\`${tool} config set/edit/delete\` changes settings for later commands; ask the user to change them`,
    )
  return ALLOW
}
