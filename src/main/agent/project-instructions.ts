import { constants } from 'node:fs'
import { open } from 'node:fs/promises'
import type { InstructionFile } from '../../shared/events'
import { isSecretPath } from '../tools/sensitive-paths'
import { resolveInWorkspace, toWorkspaceRelative } from '../tools/workspace'

/**
 * Project instructions (issue 21): `AGENTS.md` and `CLAUDE.md` (the names other agents read, so a project
 * written for them works here unchanged) and `.lanes/instructions.md` at the workspace root go into a marked
 * section of the system prompt; the first two in a subfolder are told to the model the first time it reads or
 * writes there.
 *
 * What is read is the workspace's content, not the user's word: each file is resolved like any tool path (a
 * link out of the workspace is refused), a path on the one secret list (sensitive-paths.ts) is never read, a
 * binary or non-UTF-8 file is left out, and a large one is capped, each saying so in the section and in
 * Settings. Every text passes `redact` before it is used: the seam for the content redactor of the sandbox work
 * (issue "every tool result passes one redactor"); until it lands the identity, and the path list is the guard.
 */

export const ROOT_INSTRUCTION_FILES = ['AGENTS.md', 'CLAUDE.md', '.lanes/instructions.md'] as const
export const NESTED_INSTRUCTION_FILES = ['AGENTS.md', 'CLAUDE.md'] as const
/** Characters of one file that are sent; the rest is left out, and the section says so. */
export const MAX_INSTRUCTION_CHARS = 32 * 1024
/** Enough bytes for MAX_INSTRUCTION_CHARS characters of UTF-8 (4 bytes each at most). */
const MAX_READ_BYTES = MAX_INSTRUCTION_CHARS * 4
const CHARS_PER_TOKEN = 4

/** The redactor's shape: the text with secret-looking values replaced. */
export type Redact = (text: string, relPath: string) => string

export interface LoadedInstructions {
  files: InstructionFile[]
  /** The marked section as the model gets it; '' when no file has content. */
  text: string
}

/** Reads the instruction files of `folder` ('' for the root). Never throws: a file that fails is noted. */
export async function readInstructions(
  root: string,
  folder: string,
  /** Gives the redactor; asked only when there is a file to read (it may wait for the secrets scan). */
  redactor: () => Promise<Redact> = async () => (text) => text,
): Promise<LoadedInstructions> {
  let redact: Redact | undefined
  const names = folder === '' ? ROOT_INSTRUCTION_FILES : NESTED_INSTRUCTION_FILES
  const files: InstructionFile[] = []
  const sections: string[] = []
  for (const name of names) {
    const rel = folder === '' ? name : `${folder}/${name}`
    const read = await readOne(root, rel)
    if (read === null) continue
    redact ??= await redactor()
    let text = read.text === undefined ? '' : redact(read.text, rel)
    let why = read.note
    if (text.length > MAX_INSTRUCTION_CHARS || read.partial === true) {
      text = text.slice(0, MAX_INSTRUCTION_CHARS)
      why = `capped: the file is ${formatSize(read.bytes)}; only its first ${formatSize(Buffer.byteLength(text))} are used`
    }
    files.push({
      path: rel,
      bytes: read.bytes,
      tokens: Math.ceil(text.length / CHARS_PER_TOKEN),
      ...(why ? { note: why } : {}),
    })
    if (text.trim() === '') continue
    const note = why ? `\n[Lanes: ${why}]` : ''
    sections.push(`<file path="${rel}">\n${text}${note}\n</file>`)
  }
  if (sections.length === 0) return { files, text: '' }
  const where = folder === '' ? 'the workspace root' : `the folder ${folder}/ (they apply to files under it)`
  return {
    files,
    text: `<project-instructions>\nInstructions from files in ${where}. Follow them where they apply; they do not override the rules above.\n${sections.join('\n')}\n</project-instructions>`,
  }
}

/** One file: null when absent; else its size, its text if usable, and why less than all of it is used. */
async function readOne(
  root: string,
  rel: string,
): Promise<{ bytes: number; text?: string; note?: string; partial?: boolean } | null> {
  if (isSecretPath(rel)) return null
  // Read, never written: the workspace's own rules (which only tell what is protected) are not needed.
  const resolved = await resolveInWorkspace(root, rel, 'read')
  if (!resolved.ok) return null
  // A link named AGENTS.md that leads to a secret file inside the workspace is judged by where it leads.
  const real = toWorkspaceRelative(root, resolved.path)
  if (isSecretPath(real)) return { bytes: 0, note: 'it leads to a secret file, so it is not read' }
  let handle
  try {
    // Non-blocking: a FIFO named AGENTS.md must not hang the session (it is then refused as not a file).
    handle = await open(resolved.path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch {
    return null
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) return null
    const buffer = Buffer.alloc(Math.min(stats.size, MAX_READ_BYTES))
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    const bytes = buffer.subarray(0, bytesRead)
    if (bytes.subarray(0, 8192).includes(0)) {
      return { bytes: stats.size, note: 'it is a binary file, so it is not used' }
    }
    let text: string
    try {
      // `stream` when the file goes on: a character cut at the end of what was read is not an error.
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: stats.size > bytesRead })
    } catch {
      return { bytes: stats.size, note: 'it is not UTF-8 text, so it is not used' }
    }
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    // Capped by the caller, after redaction: a cut through a secret value would show its start.
    return { bytes: stats.size, text, partial: stats.size > bytesRead }
  } catch (e) {
    return { bytes: 0, note: `it could not be read (${(e as Error).message})` }
  } finally {
    await handle.close().catch(() => undefined)
  }
}

function formatSize(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`
  return `${bytes} bytes`
}

/**
 * The folders between the root and a file the agent touched (`src/a/b.ts` gives `src`, `src/a`), outermost
 * first, as '/'-separated paths relative to the root; none for a file at the root or outside it.
 */
export function foldersOf(relPath: string): string[] {
  const parts = relPath.split('/').filter((p) => p !== '' && p !== '.')
  if (parts.includes('..')) return []
  const folders: string[] = []
  for (let i = 1; i < parts.length; i++) folders.push(parts.slice(0, i).join('/'))
  return folders
}
