import { z } from 'zod'

/**
 * What the tools' input schemas share (each schema sits at the top of its tool's file; DESIGN 2). Strict:
 * exact types, no coercion, unknown fields rejected. The model's JSON Schema is generated from the schemas
 * with `z.toJSONSchema`, so every `.describe()` is read by the model: it says what to pass, not how we
 * implement it.
 */

// A path or command that carries a control character is never what the model meant (a raw newline from a
// broken string, a NUL that would cut the name in C), and bidi overrides or invisible characters make what
// the user approves differ from what runs. Refused at the argument stage, before any tool runs. ZWJ/ZWNJ
// stay allowed: emoji and several scripts need them in file names.
// Also used by workspace confinement, so the argument and path layers agree on what a clean path is.
export const UNSAFE_CHARS =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|(?![\u200c\u200d])\p{Cf}|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/u
export const noControlChars = (value: string): boolean => !UNSAFE_CHARS.test(value)
export const CONTROL_CHAR_MESSAGE =
  'must not contain control or invisible characters (newline, tab, NUL, bidi overrides, zero-width spaces)'

/** A tool's input: strict (unknown fields rejected), with what the tool does said to the model. */
export const toolInput = <Shape extends z.ZodRawShape>(description: string, shape: Shape) =>
  z.object(shape).strict().describe(description)

/** A non-empty string free of control and invisible characters (a path, a pattern, a command). */
export const cleanText = (description: string, message = CONTROL_CHAR_MESSAGE) =>
  z.string().min(1, 'must not be empty').refine(noControlChars, message).describe(description)

export const pathField = (description: string) => cleanText(description)

/** An optional whole number from 1 (a line number, a line count, seconds); omitted, the tool's default. */
export const countField = (description: string, max?: number) =>
  (max === undefined ? z.int().min(1) : z.int().min(1).max(max)).optional().describe(description)
