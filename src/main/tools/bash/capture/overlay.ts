import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SandboxLaunch } from '../sandbox/launch'
import { findProgram } from '../sandbox/support'

/**
 * Capture by construction (issue 20): an approved sandboxed command never writes the workspace. It runs with
 * the workspace as the lower layer of an overlay file system whose upper layer is a folder of Lanes' own, so
 * every change it makes, by whatever name or route, lands in that folder (and nowhere else: the sandbox
 * binds nothing else writable but its private /tmp). Lanes then reads the upper folder as the change set.
 *
 * bubblewrap 0.8 has no overlay option, but since Linux 5.11 an unprivileged user namespace may mount
 * overlayfs (with `userxattr`: whiteouts and opaque marks are kept as `user.overlay.*` attributes of the upper
 * folder, owned by the user). So the launch becomes
 *
 *   perl -e PROLOGUE ... WS LAYER STATUS bash WRAPPER  bwrap ...(the sandbox as before)... -- bash -c COMMAND
 *   (or, without perl: setpriv --pdeathsig KILL unshare -Urm bash -c WRAPPER WS LAYER STATUS - bwrap ...)
 *
 * where the overlay is mounted, in a user and mount namespace of the command's own, over the workspace's own path
 * (its lower layer is the workspace as it was, resolved before the mount): bubblewrap then sets up exactly the
 * sandbox it always did (the same masks and pins, on top of the overlay) without knowing. One mount, one
 * process more than the sandbox alone. `--uid/--gid` keep the command's
 * ids what they were (the middle namespace maps only root, to the user). PROLOGUE (perl's system calls) makes the
 * namespace and the mount in the program start that becomes the WRAPPER's bash; without it, unshare makes the
 * namespace and the WRAPPER runs `mount`: three program starts more, a few milliseconds of every captured call.
 *
 * After the command (also when it was stopped or timed out: the wrapper traps the signals, the sandbox dies
 * with bubblewrap, and the wrapper goes on), and while the overlay is still mounted, the wrapper writes the
 * folders of the upper layer that hide the lower one's entries (`opaque`: a folder removed and made again).
 * Node has no call to read extended attributes, so this is measured rather than read: a folder shows no entry
 * of the lower layer exactly when the merged folder holds as many entries as the upper one (whiteouts aside).
 * For a folder that is not opaque this can only be so when the lower layer has nothing the upper one does not
 * name, and then treating it as opaque removes nothing: the answer is right either way. Only folders the
 * workspace had are asked (a new folder hides nothing, and neither does anything in it, so the walk does not
 * go into one: 20,000 new files cost no test each): the wrapper keeps the workspace as it was open (a
 * descriptor bash picks, `$lower`) from before the mount, and reads it through /proc/$$/fd/$lower. That
 * descriptor is closed for the command (`{lower}<&-`): the sandbox never holds a way around the layer. Bash
 * builtins only (globs, tests): no process at all. (PROLOGUE opens it before its mount and names it to bash.)
 *
 * The overlay is unmounted when the last process of its namespace exits, and for a command that looked at many
 * files that is the dearest part of the call: the kernel lets go of an overlay inode and dentry per file (200-300
 * ms after `git status` on 100,000 files, more than the overlay cost the command itself). So the wrapper leaves a
 * holder behind: a forked shell that keeps the namespace until Lanes closes its end of the status descriptor
 * (when the run is finished, or when Lanes dies; at most a minute), holding no other descriptor (not the
 * terminal, whose end is the end of the command's output: the wrapper lets go of it as soon as the command ends,
 * nor any Lanes let slip to its children), and says on that descriptor that the layer is read (`statusEnd`). The wrapper's own exit then costs nothing, and the unmount happens in the holder, beside the
 * landing rather than before it. Nothing can reach the overlay meanwhile: the sandbox's processes are gone (its
 * PID namespace died with bubblewrap), the holder holds no descriptor into it and sits in `/`, and Lanes reads
 * and moves the layer's files through the real file system, not through the overlay.
 */

const WRAPPER = String.raw`
set -u
ws=$1 layer=$2 status=$3 lower=$4
shift 4
if [ "$lower" = - ]; then
  exec {lower}<"$ws" || exit 125
  mount -t overlay overlay -o "lowerdir=$ws,upperdir=$layer/upper,workdir=$layer/work,userxattr" "$ws" || exit 125
fi
trap : TERM INT HUP
"$@" {lower}<&-
rc=$?
trap '' TERM INT HUP
exec </dev/null >/dev/null 2>&1
shopt -s nullglob dotglob
LC_ALL=C
low=/proc/$$/fd/$lower
cd "$layer/upper" || exit $rc
walk() {
  local d e k n
  for d in "$1"*; do
    [ -d "$d" ] && ! [ -L "$d" ] && [ -d "$low/$d" ] && ! [ -L "$low/$d" ] || continue
    set -- "$ws/$d"/*
    k=$#
    set -- "$d"/*
    if [ "$k" -le $# ]; then
      n=0
      for e; do [ -c "$e" ] && ! [ -L "$e" ] || n=$((n+1)); done
      [ "$k" -eq "$n" ] && printf '%s\0' "$d"
    fi
    walk "$d/"
  done
}
{
  walk ''
  printf 'done\0'
} > "$layer/opaque" 2>/dev/null
cd /
(
  trap - TERM INT HUP
  cd /proc/$BASHPID/fd && for f in *; do
    [ "$f" -gt 2 ] && [ "$f" != "$status" ] && eval "exec $f>&-"
  done
  cd /
  read -r -t 60 _ <&"$status"
) &
printf '{"lanes-layer": "read"}\n' >&"$status" 2>/dev/null
exit $rc
`

/** What the wrapper writes on the status descriptor once the layer is read: after bubblewrap's own reports. */
const LAYER_READ = '"lanes-layer"'

/**
 * The one program start that does what `setpriv`, `unshare -Urm` and `mount` do in turn (a parent-death signal, a
 * user and mount namespace mapping root to the user, the overlay mounted) and then becomes the WRAPPER's bash,
 * with the workspace as it was already open (its descriptor is the WRAPPER's fourth argument). Three program starts
 * fewer per command, a few milliseconds of a captured call that changes nothing. perl because it is there (Debian's
 * and Ubuntu's perl-base is essential) and can make system calls; where it is missing, or the machine's system call
 * numbers are not known here, the three programs do it. Every step is checked: a parent-death signal set after Lanes
 * was already gone (the parent is no longer Lanes), a namespace or a mount refused, or a mount that is not there
 * after all (the workspace's device unchanged) ends it before the command starts.
 */
const PROLOGUE = String.raw`
my ($prctl, $unshare, $mount, $lanes, $ws, $layer, $status, $bash, $wrapper) = splice(@ARGV, 0, 9);
delete $ENV{PERL_BADLANG};
syscall($prctl, 1, 9) == 0 && getppid() == $lanes or exit 125;
my ($uid, $gid) = ($>, $) + 0);
syscall($unshare, 0x10000000 | 0x20000) == 0 or exit 125;
for (['setgroups', 'deny'], ['uid_map', "0 $uid 1"], ['gid_map', "0 $gid 1"]) {
  open(my $f, '>', "/proc/self/$_->[0]") or exit 125;
  print $f $_->[1] and close($f) or exit 125;
}
my ($none, $root, $type, $null) = ('none', '/', 'overlay', 0);
syscall($mount, $none, $root, $null, 0x4000 | 0x40000, $null) == 0 or exit 125;
$^F = 1 << 30;
open(my $lower, '<', $ws) or exit 125;
my $options = "lowerdir=$ws,upperdir=$layer/upper,workdir=$layer/work,userxattr";
syscall($mount, $type, $ws, $type, $null, $options) == 0 && (stat $ws)[0] != (stat $lower)[0] or exit 125;
exec { $bash } $bash, '-c', $wrapper, 'lanes-capture', $ws, $layer, $status, fileno($lower), @ARGV;
exit 125;
`

/**
 * What PROLOGUE's perl is started with beyond the command's environment, and takes away before the WRAPPER: a
 * locale that is named but not installed makes perl (unlike bash) print five lines of warnings, which would be
 * the command's output. (The sandbox's environment is an allowlist that never holds this name.)
 */
const PROLOGUE_ENV = { PERL_BADLANG: '0' }

/** prctl, unshare and mount by number, where Lanes knows them (a process's architecture is its kernel's ABI). */
const SYSTEM_CALLS: Partial<Record<NodeJS.Architecture, [prctl: number, unshare: number, mount: number]>> = {
  x64: [157, 272, 165],
  arm64: [167, 97, 40],
}

/** How commands' changes are seen on this machine, for Settings and the review. */
export type CaptureSupport = ({ mode: 'overlay' } & OverlayPrograms) | { mode: 'scan'; reason: string }

/** The programs that put a command on its layer (see overlayCommand). */
export interface OverlayPrograms {
  unshare: string
  bash: string
  /** util-linux's setpriv, to give the wrapper a parent-death signal (see overlayLaunch); absent: none. */
  setpriv?: string
  /** perl with this machine's system call numbers: PROLOGUE instead of setpriv, unshare and mount. */
  perl?: { program: string; calls: readonly [number, number, number] }
}

let support: CaptureSupport | null = null

/** Checked once (an overlay mounted in a throw-away namespace, a few milliseconds) and remembered. */
export function captureSupport(): CaptureSupport {
  support ??= probeCapture(process.platform, process.env.PATH ?? '')
  return support
}

/**
 * The first way that works here, each tried as a command would use it: PROLOGUE where there is perl, else the
 * three programs.
 */
export function probeCapture(
  platform: NodeJS.Platform,
  searchPath: string,
  arch: NodeJS.Architecture = process.arch,
): CaptureSupport {
  if (platform !== 'linux')
    return {
      mode: 'scan',
      reason:
        'This system has no copy-on-write layer Lanes can use, so a command’s changes are found by comparing the workspace before and after it and cannot be undone.',
    }
  const unshare = findProgram('unshare', searchPath)
  const bash = findProgram('bash', searchPath)
  if (!unshare || !bash)
    return {
      mode: 'scan',
      reason: `${unshare ? 'bash' : 'unshare (util-linux)'} is missing, so a command’s changes are found by comparing the workspace before and after it and cannot be undone.`,
    }
  const setpriv = findProgram('setpriv', searchPath)
  const programs: OverlayPrograms = { unshare, bash, ...(setpriv ? { setpriv } : {}) }
  const perl = findProgram('perl', searchPath)
  const calls = SYSTEM_CALLS[arch]
  if (perl && calls) {
    const withPerl = { ...programs, perl: { program: perl, calls } }
    if (tryOverlay(withPerl) === null) return { mode: 'overlay', ...withPerl }
  }
  const why = tryOverlay(programs)
  if (why === null) return { mode: 'overlay', ...programs }
  return {
    mode: 'scan',
    reason: `An overlay cannot be mounted here (${why}; it needs Linux 5.11 or later with unprivileged user namespaces), so a command’s changes are found by comparing the workspace before and after it and cannot be undone.`,
  }
}

/** Null when a write through `programs` lands in the upper layer and not in the folder itself; else why not. */
function tryOverlay(programs: OverlayPrograms): string | null {
  let dir: string | undefined
  try {
    dir = mkdtempSync(join(tmpdir(), 'lanes-capture-probe-'))
    for (const sub of ['ws', 'upper', 'work']) mkdirSync(join(dir, sub))
    // No status descriptor: standard input (/dev/null), so the holder it leaves behind ends at once.
    const [program, ...args] = overlayCommand(programs, join(dir, 'ws'), dir, 0, [
      'touch',
      join(dir, 'ws', 'probe'),
    ])
    const probe = spawnSync(program as string, args, {
      env: { ...process.env, ...(programs.perl ? PROLOGUE_ENV : {}) },
      encoding: 'utf8',
      timeout: 10_000,
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let upper = false
    try {
      upper = statSync(join(dir, 'upper', 'probe')).isFile() && !existsSync(join(dir, 'ws', 'probe'))
    } catch {
      upper = false
    }
    if (probe.status === 0 && upper) return null
    return (probe.stderr || probe.error?.message || `exit ${String(probe.status)}`).trim().slice(0, 300)
  } catch (error) {
    return `the check failed: ${(error as Error).message}`
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
}

/** The folders of one command's layer. */
export interface Layer {
  /** The layer's own folder: upper and work are in it. */
  dir: string
  upper: string
  /** What the wrapper wrote after the command (see WRAPPER); absent when it was killed before. */
  opaqueFile: string
}

/**
 * Where the layer lives: in the session's folder (`<outputs>/capture/<call>`), Lanes' own data that no tool
 * reads, never inside the workspace (where the command, grep or a watcher would see it). Landing a change is
 * a rename when the layer is on the workspace's file system, which the session folder usually is (the same
 * disk under the home folder); when it is not, landing copies, which is slower but the same. overlayfs needs
 * the upper and work folders on one file system (they are siblings here), and refuses `,` and `:` in the
 * paths of its options.
 */
/** Where a call's layer lives in the session's folder (and a held review waits in it, across a restart). */
export function layerDir(outputDir: string, callId: string): string {
  return join(outputDir, 'capture', callId.replace(/[^A-Za-z0-9_.-]/g, '_'))
}

export function makeLayer(outputDir: string, callId: string): Layer | { error: string } {
  const dir = layerDir(outputDir, callId)
  if (/[,:\\]/.test(dir))
    return { error: `the session folder’s path has a character an overlay cannot name (${dir})` }
  try {
    rmSync(dir, { recursive: true, force: true })
    for (const sub of ['upper', 'work']) mkdirSync(join(dir, sub), { recursive: true, mode: 0o700 })
    writeFileSync(join(dir, 'opaque'), '', { mode: 0o600 })
  } catch (error) {
    return { error: `the command’s change layer could not be made: ${(error as Error).message}` }
  }
  return { dir, upper: join(dir, 'upper'), opaqueFile: join(dir, 'opaque') }
}

/**
 * `command` run on the layer: PROLOGUE, or setpriv, unshare and the WRAPPER's own mount, then the WRAPPER around
 * it. `statusFd`: the descriptor the WRAPPER reports on (0: none).
 */
export function overlayCommand(
  programs: OverlayPrograms,
  workspace: string,
  layerDir: string,
  statusFd: number,
  command: string[],
): string[] {
  if (programs.perl) {
    const { program, calls } = programs.perl
    return [
      program,
      '-e',
      PROLOGUE,
      '--',
      ...calls.map(String),
      String(process.pid),
      workspace,
      layerDir,
      String(statusFd),
      programs.bash,
      WRAPPER,
      ...command,
    ]
  }
  // bubblewrap dies with its parent (--die-with-parent), which is now the wrapper, not Lanes: the wrapper must
  // die with Lanes in turn, or a SIGKILLed Lanes leaves the command running. It traps TERM, INT and HUP (to
  // read the change set of a stopped command), so it gets SIGKILL when its parent dies (PR_SET_PDEATHSIG, kept
  // across unshare's exec: entering a user namespace one owns does not reset it). PROLOGUE sets it itself.
  const deathSignal = programs.setpriv ? [programs.setpriv, '--pdeathsig', 'KILL'] : []
  return [
    ...deathSignal,
    programs.unshare,
    '-Urm',
    '--',
    programs.bash,
    '-c',
    WRAPPER,
    'lanes-capture',
    workspace,
    layerDir,
    String(statusFd),
    // No descriptor of the workspace yet: the WRAPPER opens it and mounts.
    '-',
    ...command,
  ]
}

/** The sandbox's launch, run on top of the layer (see WRAPPER). */
export function overlayLaunch(
  sandbox: SandboxLaunch,
  programs: OverlayPrograms,
  workspace: string,
  layer: Layer,
): SandboxLaunch {
  const ids = [String(process.getuid?.() ?? 0), String(process.getgid?.() ?? 0)]
  // bwrap's args end with `--`: the ids go before it (the middle namespace maps only root, to the user).
  const bwrap = sandbox.args.slice(0, -1)
  const [program, ...args] = overlayCommand(programs, workspace, layer.dir, sandbox.statusFd ?? 0, [
    sandbox.program,
    ...bwrap,
    '--uid',
    ids[0] as string,
    '--gid',
    ids[1] as string,
    '--',
  ])
  const env = programs.perl ? { ...sandbox.env, ...PROLOGUE_ENV } : sandbox.env
  return { ...sandbox, statusEnd: LAYER_READ, program: program as string, args, env }
}
