/**
 * Small helpers the per-program rules of the bash validator share: the verdict type and how command-line
 * options are recognised the way getopt-style parsers read them (long options may be abbreviated, short
 * options may be clustered), so that `--to-com=...` or `-xIcmd` cannot slip past a rule written for
 * `--to-command` or `-I`.
 */

export type Verdict = { ok: true } | { ok: false; reason: string }

export const ALLOW: Verdict = { ok: true }

export function deny(reason: string): Verdict {
  return { ok: false, reason }
}

/** The option name of a `--long` or `--long=value` argument, or null when the argument is not one. */
export function longName(arg: string): string | null {
  if (!arg.startsWith('--') || arg.length === 2) return null
  const eq = arg.indexOf('=')
  return eq === -1 ? arg : arg.slice(0, eq)
}

/**
 * True when `arg` names one of `options` the way GNU getopt_long and git's parse-options accept it: exactly,
 * with `=value`, or as an abbreviation (any prefix of the option: the program would reject an ambiguous one,
 * which costs us nothing, and accept an unambiguous one, which must not get through). An exact match of
 * another real option wins over abbreviation in getopt_long, hence `ownOptions`.
 */
export function matchesLong(
  arg: string,
  options: readonly string[],
  /** Harmless options of the same program that are prefixes of dangerous ones (tar `--checkpoint`). */
  ownOptions: readonly string[] = [],
): string | null {
  const name = longName(arg)
  if (name === null || ownOptions.includes(name)) return null
  return options.find((option) => option.startsWith(name)) ?? null
}

/** The letters of a short-option cluster (`-xvf` gives `xvf`), or null when `arg` is not one. */
export function shortCluster(arg: string): string | null {
  if (arg.length < 2 || arg[0] !== '-' || arg[1] === '-') return null
  return arg.slice(1)
}

/** True when `arg` is a short-option cluster containing any of `letters` (case-sensitive). */
export function clusterHas(arg: string, letters: string): boolean {
  const cluster = shortCluster(arg)
  return cluster !== null && [...letters].some((letter) => cluster.includes(letter))
}
