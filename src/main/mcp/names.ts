import { createHash } from 'node:crypto'

/**
 * The names MCP tools are offered under: `mcp__<server>__<tool>`, within the API's `^[a-zA-Z0-9_-]{1,64}$`.
 * Every other character becomes `_`; a name too long keeps its start and ends with a hash of the full name, so
 * two long names that share a start stay apart. Names equal after that are told apart by a suffix given in a
 * fixed order (server, then tool, by their original spelling), so the same servers always give the same names,
 * and each renaming is reported.
 */

export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/
const MAX = 64

export function sanitizePart(part: string): string {
  const cleaned = part.replace(/[^a-zA-Z0-9_-]/g, '_')
  return cleaned === '' ? '_' : cleaned
}

function fit(name: string, full: string, reserve = 0): string {
  if (name.length + reserve <= MAX) return name
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8)
  return `${name.slice(0, MAX - reserve - 9)}_${hash}`
}

export interface NamedTool {
  server: string
  tool: string
}

export interface NameAssignment {
  /** `server\0tool` → the name offered to the model. */
  names: Map<string, string>
  /** One sentence per tool whose name had to change beyond sanitizing. */
  renamed: (NamedTool & { message: string })[]
}

export function toolKey(t: NamedTool): string {
  return `${t.server}\0${t.tool}`
}

export function assignToolNames(tools: readonly NamedTool[], reserved: ReadonlySet<string>): NameAssignment {
  const sorted = [...tools].sort((a, b) =>
    a.server === b.server ? compare(a.tool, b.tool) : compare(a.server, b.server),
  )
  const names = new Map<string, string>()
  const used = new Set(reserved)
  const renamed: NameAssignment['renamed'] = []
  for (const t of sorted) {
    const full = `mcp__${sanitizePart(t.server)}__${sanitizePart(t.tool)}`
    const base = fit(full, `${t.server}\0${t.tool}`)
    let name = base
    for (let n = 2; used.has(name); n++) {
      const suffix = `_${n}`
      name = fit(full, `${t.server}\0${t.tool}`, suffix.length) + suffix
    }
    if (name !== base)
      renamed.push({
        server: t.server,
        tool: t.tool,
        message: `the tool "${t.tool}" is offered as ${name}: ${base} was taken by another tool`,
      })
    used.add(name)
    names.set(toolKey(t), name)
  }
  return { names, renamed }
}

/** Code-unit order, never the locale's: the same on every machine. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
