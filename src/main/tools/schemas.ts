import { z } from 'zod'

/**
 * The six tools' input schemas (DESIGN 2). Strict: exact types, no coercion, unknown fields rejected. The
 * model's JSON Schema is generated from these with `z.toJSONSchema`, so every `.describe()` is read by the
 * model: it says what to pass, not how we implement it.
 */

// A path or command that carries a control character is never what the model meant (a raw newline from a
// broken string, a NUL that would cut the name in C), and bidi overrides or invisible characters make what
// the user approves differ from what runs. Refused at the argument stage, before any tool runs. ZWJ/ZWNJ
// stay allowed: emoji and several scripts need them in file names.
// Also used by workspace confinement, so the argument and path layers agree on what a clean path is.
export const UNSAFE_CHARS =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|(?![\u200c\u200d])\p{Cf}|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/u
const noControlChars = (value: string): boolean => !UNSAFE_CHARS.test(value)
const CONTROL_CHAR_MESSAGE =
  'must not contain control or invisible characters (newline, tab, NUL, bidi overrides, zero-width spaces)'

const pathField = (description: string) =>
  z.string().min(1, 'must not be empty').refine(noControlChars, CONTROL_CHAR_MESSAGE).describe(description)

export const ReadFileInput = z
  .object({
    path: pathField(
      'Path of the file to read, relative to the workspace root (absolute paths inside it also work).',
    ),
    offset: z
      .int()
      .min(1)
      .optional()
      .describe('1-based line number to start reading from. Omit to start at the first line.'),
    limit: z
      .int()
      .min(1)
      .optional()
      .describe('Maximum number of lines to return. Omit for the default (2000 lines).'),
  })
  .strict()
  .describe('Read a text file; each line is prefixed with its line number.')
export type ReadFileInput = z.infer<typeof ReadFileInput>

export const WriteFileInput = z
  .object({
    path: pathField(
      'Path of the file to create or overwrite, relative to the workspace root. Missing parent folders are created.',
    ),
    content: z.string().describe('The complete new content of the file.'),
  })
  .strict()
  .describe('Create a file or replace its whole content. An existing file must have been read first.')
export type WriteFileInput = z.infer<typeof WriteFileInput>

export const EditFileInput = z
  .object({
    path: pathField('Path of the file to edit, relative to the workspace root.'),
    old_string: z
      .string()
      .min(1, 'must not be empty: quote the exact text to replace (use write_file to create a file)')
      .describe(
        'Exact text to replace, including whitespace and indentation. Must occur exactly once unless replace_all is true.',
      ),
    new_string: z.string().describe('Text to put in its place (may be empty to delete old_string).'),
    replace_all: z
      .boolean()
      .optional()
      .describe('Replace every occurrence of old_string instead of requiring exactly one. Default false.'),
  })
  .strict()
  .describe('Replace exact text in a file that was read before.')
export type EditFileInput = z.infer<typeof EditFileInput>

export const GrepInput = z
  .object({
    pattern: z
      .string()
      .min(1, 'must not be empty')
      .refine(
        noControlChars,
        'must not contain raw control or invisible characters; write them as regex escapes (\\t, \\n, \\x{202E})',
      )
      .describe('Regular expression to search for (ripgrep/Rust syntax).'),
    path: pathField(
      'File or folder to search in, relative to the workspace root. Omit to search the whole workspace.',
    ).optional(),
    include: z
      .string()
      .min(1, 'must not be empty')
      .refine(noControlChars, CONTROL_CHAR_MESSAGE)
      .optional()
      .describe('Only search files whose path matches this glob, e.g. "*.ts" or "src/**/*.{ts,tsx}".'),
    case_insensitive: z.boolean().optional().describe('Match regardless of letter case. Default false.'),
  })
  .strict()
  .describe('Search file contents with a regular expression; returns matching lines with their line numbers.')
export type GrepInput = z.infer<typeof GrepInput>

export const GlobInput = z
  .object({
    pattern: z
      .string()
      .min(1, 'must not be empty')
      .refine(noControlChars, CONTROL_CHAR_MESSAGE)
      .describe('Glob pattern for file paths, e.g. "**/*.ts" or "src/**/index.{js,ts}".'),
    path: pathField(
      'Folder to search in, relative to the workspace root. Omit for the workspace root.',
    ).optional(),
  })
  .strict()
  .describe('Find files by name pattern.')
export type GlobInput = z.infer<typeof GlobInput>

/** A bash call's timeout when neither the call nor the user's settings give one. */
export const DEFAULT_BASH_TIMEOUT_SEC = 180

export const BashInput = z
  .object({
    command: z
      .string()
      .min(1, 'must not be empty')
      .refine(noControlChars, `${CONTROL_CHAR_MESSAGE}: run one single-line command per call`)
      .describe('One simple command to run in the workspace folder (no pipes, redirects, ; or &&).'),
    timeout: z
      .int()
      .min(1)
      .max(600)
      .optional()
      .describe(`Timeout in seconds, 1 to 600. Omit for the default (${DEFAULT_BASH_TIMEOUT_SEC} seconds).`),
    description: z
      .string()
      .max(1000)
      .refine(noControlChars, CONTROL_CHAR_MESSAGE)
      .optional()
      .describe('A few words saying what the command is for, shown to the user.'),
  })
  .strict()
  .describe('Run one shell command in the workspace.')
export type BashInput = z.infer<typeof BashInput>

export const toolInputSchemas = {
  read_file: ReadFileInput,
  write_file: WriteFileInput,
  edit_file: EditFileInput,
  grep: GrepInput,
  glob: GlobInput,
  bash: BashInput,
} as const

export type ToolName = keyof typeof toolInputSchemas
