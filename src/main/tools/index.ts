import { BashInput, bashTool } from './bash/bash'
import { EditFileInput, editFileTool } from './edit-file'
import { GlobInput, globTool } from './glob'
import { GrepInput, grepTool } from './grep'
import { ReadFileInput, readFileTool } from './read-file'
import { ToolRegistry } from './registry'
import type { Tool } from './tool'
import { WriteFileInput, writeFileTool } from './write-file'

/** The six tools' input schemas by tool name (DESIGN 10: a contract module); each is defined in its tool's file. */
export const toolInputSchemas = {
  read_file: ReadFileInput,
  write_file: WriteFileInput,
  edit_file: EditFileInput,
  grep: GrepInput,
  glob: GlobInput,
  bash: BashInput,
} as const

export type ToolName = keyof typeof toolInputSchemas

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
