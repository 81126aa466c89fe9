import { z } from 'zod'
import type { Tool } from './tool'

/** A tool as the model is told about it. */
export interface ToolDefinition {
  name: string
  description: string
  input_schema: { type: 'object'; [key: string]: unknown }
}

/**
 * Tools that arrive while a session runs (MCP servers starting, restarting, changing their list): the
 * registry asks it on every lookup, and `version()` changes whenever `tools()` does.
 */
export interface ToolSource {
  tools(): readonly Tool[]
  version(): number
  /**
   * A tool the source does not list yet but may soon (its server still starting): a call resumed from the log,
   * or one the model knew from before, waits for it instead of failing as unknown.
   */
  pending?(name: string): Tool | undefined
  /**
   * A model request is on the wire: work the source held back so as not to delay it (MCP servers' start) may
   * begin. Called for every request; cheap after the first.
   */
  requestSent?(): void
}

export class ToolRegistry {
  private readonly byName = new Map<string, Tool>()
  private cachedDefinitions: { key: string; definitions: ToolDefinition[] } | null = null
  private cachedDynamic: { key: string; byName: Map<string, Tool> } | null = null
  /** Lanes' own tools' definitions, made once and shared with the registries `withSource` derives from this one. */
  private own: { definitions: ToolDefinition[] | null } = { definitions: null }

  constructor(
    tools: readonly Tool[],
    private readonly sources: readonly ToolSource[] = [],
  ) {
    for (const tool of tools) {
      if (this.byName.has(tool.name)) throw new Error(`Two tools are named ${tool.name}`)
      this.byName.set(tool.name, tool)
    }
  }

  /** The same tools and `source`'s too (a session's MCP servers): the shared registry stays as it was. */
  withSource(source: ToolSource): ToolRegistry {
    const derived = new ToolRegistry([...this.byName.values()], [...this.sources, source])
    derived.own = this.own
    return derived
  }

  /** Looked up by own name only: a model asking for `__proto__` or `toString` finds nothing. */
  get(name: string): Tool | undefined {
    const found = this.byName.get(name) ?? this.dynamic().get(name)
    if (found) return found
    for (const source of this.sources) {
      const pending = source.pending?.(name)
      if (pending) return pending
    }
    return undefined
  }

  /** A model request is on the wire (see `ToolSource.requestSent`). */
  requestSent(): void {
    for (const source of this.sources) source.requestSent?.()
  }

  names(): string[] {
    return [...this.byName.keys(), ...this.dynamic().keys()]
  }

  /**
   * JSON Schema generated from each tool's zod schema, so the model and the validator cannot disagree (a tool
   * with a schema of its own, an MCP tool, is checked against that same schema).
   */
  definitions(): ToolDefinition[] {
    const key = this.key()
    if (this.cachedDefinitions?.key === key) return this.cachedDefinitions.definitions
    this.own.definitions ??= [...this.byName.values()].map(definitionOf)
    const definitions = [...this.own.definitions, ...[...this.dynamic().values()].map(definitionOf)]
    this.cachedDefinitions = { key, definitions }
    return definitions
  }

  private key(): string {
    return this.sources.map((s) => s.version()).join(',')
  }

  /** The sources' tools by name; a name a built-in tool has is never taken by one of them. */
  private dynamic(): Map<string, Tool> {
    if (this.sources.length === 0) return EMPTY
    const key = this.key()
    if (this.cachedDynamic?.key === key) return this.cachedDynamic.byName
    const byName = new Map<string, Tool>()
    for (const source of this.sources)
      for (const tool of source.tools())
        if (!this.byName.has(tool.name) && !byName.has(tool.name)) byName.set(tool.name, tool)
    this.cachedDynamic = { key, byName }
    return byName
  }
}

const EMPTY: Map<string, Tool> = new Map()

function definitionOf(tool: Tool): ToolDefinition {
  if (tool.inputJsonSchema)
    return { name: tool.name, description: tool.description, input_schema: tool.inputJsonSchema }
  const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, { io: 'input' }) as Record<
    string,
    unknown
  >
  return {
    name: tool.name,
    description: tool.description,
    input_schema: { ...schema, type: 'object' as const },
  }
}
