import { isUtf8 } from 'node:buffer'
import { createHash } from 'node:crypto'
import {
  countLines,
  IMAGE_PREVIEW_MAX_BYTES,
  isBinary,
  isPreviewableImage,
  sniffType,
  type ContentFacts,
} from '../../shared/file-content'

/**
 * One side of a change as the review shows it (shared/file-content.ts): size, lines, type, hash, and an image's
 * bytes when small enough to preview. A module of its own, so a command's capture (bash/capture/land.ts) and the
 * file tools (file-change.ts) describe contents alike without importing each other.
 */
export function contentFacts(bytes: Buffer, text?: string, opts: { image?: boolean } = {}): ContentFacts {
  const binary = isBinary(bytes, isUtf8)
  const mime = sniffType(bytes)
  return {
    bytes: bytes.length,
    binary,
    ...(!binary ? { lines: countLines(text ?? bytes) } : {}),
    ...(mime ? { mime } : {}),
    sha256: createHash('sha256').update(bytes).digest('hex'),
    ...(opts.image !== false && isPreviewableImage(mime) && bytes.length <= IMAGE_PREVIEW_MAX_BYTES
      ? { image: bytes.toString('base64') }
      : {}),
  }
}
