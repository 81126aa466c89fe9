import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { MODEL_IMAGE_TYPES, type ResultImage } from '../../shared/result-text'
import { workspaceSecrets } from '../secrets/workspace-secrets'
import { MAX_MODEL_BYTES } from '../tools/bash/rolling-buffer'
import type { ToolResult } from '../tools/tool'

/**
 * An MCP result as the model and the user get it: text as text; images as image blocks (and shown in the card);
 * audio, resource links, embedded resources and structured content written out readably; `isError` as an error
 * result (the loop adds the hint). Text over bash's cap reaches the model cut, the whole of it kept in the
 * session folder with its path named, as bash output is.
 */

/** Images sent with one result, together, at most (base64 characters); more are described, not sent. */
const MAX_IMAGE_CHARS = 5 * 1024 * 1024

export async function toToolResult(
  result: CallToolResult,
  ctx: { outputDir: string; callId: string; workspace: string },
  server: string,
): Promise<ToolResult> {
  const parts: string[] = []
  const images: ResultImage[] = []
  let imageChars = 0
  for (const block of result.content ?? []) {
    switch (block.type) {
      case 'text':
        parts.push(block.text)
        break
      case 'image': {
        const size = approxBytes(block.data)
        const sendable = (MODEL_IMAGE_TYPES as readonly string[]).includes(block.mimeType)
        if (sendable && imageChars + block.data.length <= MAX_IMAGE_CHARS) {
          images.push({ mediaType: block.mimeType, data: block.data })
          imageChars += block.data.length
          parts.push(`[Image ${images.length}: ${block.mimeType}, ${size}]`)
        } else {
          const why = sendable ? 'too large to send' : 'a type the model does not take'
          parts.push(`[An image (${block.mimeType}, ${size}) was left out: ${why}.]`)
        }
        break
      }
      case 'audio':
        parts.push(`[Audio: ${block.mimeType}, ${approxBytes(block.data)}; audio is not sent to the model.]`)
        break
      case 'resource_link': {
        const mime = block.mimeType ? ` (${block.mimeType})` : ''
        const about = block.description ? `: ${block.description}` : ''
        parts.push(`Resource link: ${block.name} <${block.uri}>${mime}${about}`)
        break
      }
      case 'resource': {
        const r = block.resource
        const mime = r.mimeType ? ` (${r.mimeType})` : ''
        if ('text' in r) parts.push(`Resource ${r.uri}${mime}:\n${r.text}`)
        else parts.push(`[Resource ${r.uri}${mime}: binary, ${approxBytes(r.blob)}; not shown.]`)
        break
      }
      default:
        parts.push(`[A ${(block as { type: string }).type} block this version of Lanes does not show.]`)
    }
  }
  const hasText = (result.content ?? []).some((b) => b.type === 'text')
  if (result.structuredContent !== undefined && !hasText) {
    parts.push(`Structured content:\n${JSON.stringify(result.structuredContent, null, 2)}`)
  }
  // Redacted before it is cut (a cut through a value would show its start) and before it is kept in the
  // session folder (stored output hides secrets too); the one redactor sees the result again after this.
  const full = workspaceSecrets(ctx.workspace).redactor().redactText(parts.join('\n\n'))
  const { output, savedTo, totalBytes } = await capped(full, ctx)
  const metadata: Record<string, unknown> = { server }
  if (images.length > 0) metadata.images = images
  if (savedTo) Object.assign(metadata, { truncated: true, outputPath: savedTo, totalBytes })
  return { output, isError: result.isError === true, metadata }
}

async function capped(
  text: string,
  ctx: { outputDir: string; callId: string },
): Promise<{ output: string; savedTo?: string; totalBytes?: number }> {
  const bytes = Buffer.byteLength(text)
  if (bytes <= MAX_MODEL_BYTES) return { output: text }
  const path = join(ctx.outputDir, `${ctx.callId.replace(/[^A-Za-z0-9_.-]/g, '_')}.mcp.txt`)
  await writeFile(path, text)
  const head = Buffer.from(text)
    .subarray(0, MAX_MODEL_BYTES)
    .toString('utf8')
    .replace(/\uFFFD$/, '')
  const note = `[The result was ${bytes} bytes; the first ${MAX_MODEL_BYTES} are above. The whole result is in ${path}: read it with read_file (offset and limit) for the rest.]`
  return { output: `${head}\n\n${note}`, savedTo: path, totalBytes: bytes }
}

function approxBytes(base64: string): string {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0
  const bytes = Math.floor((base64.length * 3) / 4) - padding
  return bytes >= 1024 * 1024
    ? `${(bytes / 1024 / 1024).toFixed(1)} MB`
    : bytes >= 1024
      ? `${Math.round(bytes / 1024)} KB`
      : `${bytes} bytes`
}
