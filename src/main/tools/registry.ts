import { z } from 'zod'
import type { Tool } from './tool'

/** A tool as the model is told about it. */
export interface ToolDefinition {
  name: string
  description: string
  input_schema: { type: 'object'; [key: string]: unknown }
}

export class ToolRegistry {
  private readonly byName = new Map<string, Tool>()
  private cachedDefinitions: ToolDefinition[] | null = null

  constructor(tools: readonly Tool[]) {
    for (const tool of tools) {
      if (this.byName.has(tool.name)) throw new Error(`Two tools are named ${tool.name}`)
      this.byName.set(tool.name, tool)
    }
  }

  /** Looked up by own name only: a model asking for `__proto__` or `toString` finds nothing. */
  get(name: string): Tool | undefined {
    return this.byName.get(name)
  }

  names(): string[] {
    return [...this.byName.keys()]
  }

  /** JSON Schema generated from each tool's zod schema, so the model and the validator cannot disagree. */
  definitions(): ToolDefinition[] {
    this.cachedDefinitions ??= [...this.byName.values()].map((tool) => {
      const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, { io: 'input' }) as Record<
        string,
        unknown
      >
      return {
        name: tool.name,
        description: tool.description,
        input_schema: { ...schema, type: 'object' },
      }
    })
    return this.cachedDefinitions
  }
}
