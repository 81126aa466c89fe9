import { parseArgs, type ParseArgsConfig } from 'node:util'

/** A mistake on the command line: `main` prints its message with a pointer to `lanes --help` and exits 2. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>
type Strict<T extends Options> = { args: string[]; options: T; strict: true; allowPositionals: false }

/** A subcommand's options, strictly (an unknown option or a missing value is a usage error). */
export function parseOptions<T extends Options>(
  argv: string[],
  options: T,
): ReturnType<typeof parseArgs<Strict<T>>>['values'] {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
}
