import { jsonrepair } from 'jsonrepair'
import { z } from 'zod'
import { formatBytes } from '../../shared/file-content'
import { sameScalars, scanJson } from './args-scan'
import { toolInputSchemas } from './index'

/**
 * Parsing a tool call's JSON arguments (DESIGN 3.1). `JSON.parse` first; only when it fails, `jsonrepair`,
 * and the repair is used only when it is provably harmless: the text is lexed a second time by our own
 * lenient scanner (args-scan.ts), independent of jsonrepair, and every key and scalar value it reads must come out
 * of the repair unchanged and in the same order. A repair that would rewrite a string (`'it's'` becoming
 * `it"s`, `"\d"` becoming `d`), drop or invent a value, or guess where a cut-off call ended is refused: the
 * model gets an error it can act on and sends the call again. Nothing here throws.
 */

export type ParsedArgs =
  | { ok: true; value: unknown; repaired: boolean }
  /** `wellFormed`: the text itself is a complete JSON object (the problem is its content): nothing more is
   * coming, so the call can be answered at once; otherwise it may have been cut off mid-way. */
  | { ok: false; error: string; wellFormed?: boolean }

export interface ParseArgsOptions {
  /** The turn stopped on max_tokens while this call was being written: it is never run (DESIGN 4). */
  truncated?: boolean
  /** Name used in error messages; found from `toolInputSchemas` when omitted. */
  toolName?: string
}

export const MAX_ARGS_BYTES = 1024 * 1024

function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return value === '' ? 'an empty string' : 'a string'
  if (typeof value === 'object') return 'an object'
  if (typeof value === 'number') return Number.isInteger(value) ? 'a number' : 'a fractional number'
  return `a ${typeof value}`
}

/** A key or string for a message, cut so a 500 KB key cannot flood the model's context. */
function shortJson(text: string): string {
  return text.length > 60 ? JSON.stringify(text.slice(0, 60)).slice(0, -1) + '…"' : JSON.stringify(text)
}

/** A short, safe rendering of what the model sent (never a deep JSON.stringify of untrusted structure). */
function describeValue(value: unknown): string {
  if (typeof value === 'string') return `${shortJson(value)}, ${kindOf(value)}`
  if (typeof value === 'number' || typeof value === 'boolean') return `${String(value)}, ${kindOf(value)}`
  return kindOf(value)
}

type JsonSchemaProperty = {
  type?: string
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
}

/** "an integer >= 1", "an integer from 1 to 600", "a non-empty string": what the field accepts, in words. */
function expectedOf(property: JsonSchemaProperty | undefined): string {
  if (property === undefined) return 'a valid value'
  const max =
    property.maximum !== undefined && property.maximum < Number.MAX_SAFE_INTEGER
      ? property.maximum
      : undefined
  switch (property.type) {
    case 'integer':
    case 'number': {
      const noun = property.type === 'integer' ? 'an integer' : 'a number'
      if (property.minimum !== undefined && max !== undefined)
        return `${noun} from ${property.minimum} to ${max}`
      if (property.minimum !== undefined) return `${noun} >= ${property.minimum}`
      if (max !== undefined) return `${noun} <= ${max}`
      return noun
    }
    case 'string': {
      const base = (property.minLength ?? 0) > 0 ? 'a non-empty string' : 'a string'
      return property.maxLength !== undefined ? `${base} of at most ${property.maxLength} characters` : base
    }
    case 'boolean':
      return 'true or false (a JSON boolean)'
    default:
      return 'a valid value'
  }
}

const jsonSchemaCache = new WeakMap<z.ZodType, Record<string, JsonSchemaProperty>>()

function propertiesOf(schema: z.ZodType): Record<string, JsonSchemaProperty> {
  const cached = jsonSchemaCache.get(schema)
  if (cached) return cached
  let properties: Record<string, JsonSchemaProperty> = {}
  try {
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as {
      properties?: Record<string, JsonSchemaProperty>
    }
    properties = json.properties ?? {}
  } catch {
    // A schema JSON Schema cannot express: fall back to zod's own messages.
  }
  jsonSchemaCache.set(schema, properties)
  return properties
}

/** `cmd` → `command`, `file_path` → `path`: a hint when an unknown field is close to a valid one. */
function closestField(unknown: string, valid: string[]): string | undefined {
  const key = unknown.toLowerCase().replace(/[-_\s]/g, '')
  const isSubsequence = (short: string, long: string): boolean => {
    let at = 0
    for (const c of long) if (c === short[at]) at += 1
    return at === short.length
  }
  return valid.find((field) => {
    const name = field.toLowerCase().replace(/_/g, '')
    return key.includes(name) || name.includes(key) || (key.length >= 2 && isSubsequence(key, name))
  })
}

const MAX_MESSAGES = 8
const DEFAULT_ZOD_MESSAGE = /^(?:Invalid|Too small|Too big|Unrecognized|Expected)/

function formatIssues(issues: z.core.$ZodIssue[], schema: z.ZodType, value: unknown): string {
  const properties = propertiesOf(schema)
  const validFields = Object.keys(properties)
  const record = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {}
  const messages: string[] = []
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const hint = closestField(key, validFields)
        messages.push(
          `unknown field ${shortJson(key)}` +
            (validFields.length > 0 ? ` — valid fields: ${validFields.join(', ')}` : '') +
            (hint ? ` (did you mean "${hint}"?)` : ''),
        )
      }
      continue
    }
    const field = issue.path.map(String).join('.')
    if (issue.path.length !== 1) {
      messages.push(field === '' ? issue.message : `"${field}": ${issue.message}`)
      continue
    }
    const expected = expectedOf(properties[field])
    const given = record[field]
    if (given === undefined && issue.code === 'invalid_type') {
      messages.push(`missing required field "${field}" (${expected})`)
    } else if (!DEFAULT_ZOD_MESSAGE.test(issue.message)) {
      messages.push(`"${field}" ${issue.message} (got ${describeValue(given)})`)
    } else {
      messages.push(`"${field}" must be ${expected} (got ${describeValue(given)})`)
    }
  }
  // Thousands of unknown keys must not turn into a message the size of the arguments.
  const shown = messages.slice(0, MAX_MESSAGES)
  if (messages.length > MAX_MESSAGES) shown.push(`and ${messages.length - MAX_MESSAGES} more problems`)
  return shown.join('; ')
}

function toolNameOf(schema: z.ZodType, options: ParseArgsOptions): string {
  if (options.toolName) return options.toolName
  const entry = Object.entries(toolInputSchemas).find(([, candidate]) => candidate === schema)
  return entry?.[0] ?? 'this tool'
}

/** The refusal of a call whose input is over MAX_ARGS_BYTES, for the model and the user alike. */
export function tooLargeToReview(bytes: number): string {
  return (
    `Not run: this call's input is ${formatBytes(bytes)}, more than one call may carry (1 MiB), which is too ` +
    'large for the user to review. Send smaller calls: for a large file, write a first ' +
    'part with write_file and add the rest with edit_file.'
  )
}

export function parseToolArgs(raw: string, schema: z.ZodType, opts: ParseArgsOptions = {}): ParsedArgs {
  let toolName = 'this tool'
  try {
    toolName = toolNameOf(schema, opts)
    let wellFormed = false
    const invalid = (problem: string): ParsedArgs => ({
      ok: false,
      error: `Invalid arguments for ${toolName}: ${problem}`,
      ...(wellFormed ? { wellFormed } : {}),
    })

    if (opts.truncated)
      return invalid(
        'the response was cut off (max_tokens) while these arguments were being written, so the call was not run. ' +
          'Issue it again; if it carried a large content, split the work into smaller calls.',
      )
    if (typeof raw !== 'string') return invalid('the arguments are not text')
    // A string's UTF-8 size is at least its length in UTF-16 units, so the cheap test settles most cases.
    if (raw.length > MAX_ARGS_BYTES || Buffer.byteLength(raw, 'utf8') > MAX_ARGS_BYTES)
      // Said without the tool's name: the user reads this sentence on the call's card too.
      return { ok: false, error: tooLargeToReview(Buffer.byteLength(raw, 'utf8')) }
    if (raw.trim() === '')
      return invalid('no arguments were given; send a JSON object with the fields of the tool')

    const scan = scanJson(raw)
    let value: unknown
    let repaired = false
    let parseError = ''
    try {
      value = JSON.parse(raw)
      wellFormed = typeof value === 'object' && value !== null && !Array.isArray(value)
    } catch (error) {
      parseError = error instanceof Error ? error.message : String(error)
    }

    if (parseError !== '') {
      if (scan.problem !== null)
        return invalid(
          `the arguments are not valid JSON (${parseError}) and cannot be repaired safely: ${scan.problem}. ` +
            'Send one complete JSON object with double-quoted keys and strings.',
        )
      let repairedText: string
      try {
        repairedText = jsonrepair(raw)
        value = JSON.parse(repairedText)
      } catch {
        return invalid(
          `the arguments are not valid JSON (${parseError}). Send one JSON object with double-quoted keys and strings.`,
        )
      }
      const check = scanJson(repairedText)
      if (check.problem !== null || !sameScalars(scan.scalars, check.scalars))
        return invalid(
          `the arguments are not valid JSON (${parseError}), and repairing them would change a key or the text of a ` +
            'string (for example an unescaped quote or backslash). Send valid JSON: double-quoted strings, with " ' +
            'written as \\" and a backslash as \\\\.',
        )
      repaired = true
    }

    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      const hint = typeof value === 'string' ? ' (JSON encoded twice?)' : ''
      return invalid(`the arguments must be a JSON object like {"field": value}, not ${kindOf(value)}${hint}`)
    }
    // JSON.parse passed the depth of a valid text; our scan caps it before zod walks it.
    if (scan.problem !== null && !repaired) return invalid(scan.problem)
    if (scan.forbiddenKey !== null) return invalid(`the key ${shortJson(scan.forbiddenKey)} is not allowed`)
    if (scan.duplicateKey !== null)
      return invalid(
        `the field ${shortJson(scan.duplicateKey)} appears more than once; give each field exactly once`,
      )

    const result = schema.safeParse(value)
    if (!result.success) return invalid(formatIssues(result.error.issues, schema, value))
    return { ok: true, value: result.data, repaired }
  } catch (error) {
    // Defensive: the contract is "never throws"; an unexpected failure rejects the call, never runs it.
    return {
      ok: false,
      error: `Invalid arguments for ${toolName}: they could not be checked (${error instanceof Error ? error.message : String(error)})`,
    }
  }
}
