import { bashTool } from './bash/bash'
import { editFileTool } from './edit-file'
import { globTool } from './glob'
import { grepTool } from './grep'
import { readFileTool } from './read-file'
import { ToolRegistry } from './registry'
import type { Tool } from './tool'
import { writeFileTool } from './write-file'

export { toolInputSchemas } from './schemas'
export type { ToolName } from './schemas'

/** The six tools in the order the model is told about them. */
export const allTools: readonly Tool[] = [
  readFileTool,
  grepTool,
  globTool,
  editFileTool,
  writeFileTool,
  bashTool,
] as Tool[]

export function createToolRegistry(): ToolRegistry {
  return new ToolRegistry(allTools)
}
