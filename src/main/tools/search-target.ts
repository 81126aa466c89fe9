import { promises as fs } from 'node:fs'
import { fail, type ToolContext, type ToolResult } from './tool'
import { resolveInWorkspace } from './workspace'

/**
 * Where glob and grep look (their `path`, the workspace root by default): not started when the call was
 * already cancelled, resolved inside the workspace for reading, and found on disk. Each tool words its own
 * failures; what it does with a file rather than a folder is its own too.
 */
export async function searchTarget(
  ctx: ToolContext,
  where: string,
  title: string,
  words: { cancelled: string; missing: string; cannot: string },
): Promise<{ ok: true; path: string; isDirectory: boolean } | { ok: false; result: ToolResult }> {
  if (ctx.signal.aborted)
    return { ok: false, result: fail(words.cancelled, { title, metadata: { cancelled: true } }) }
  const resolved = await resolveInWorkspace(ctx.workspace, where, 'read')
  if (!resolved.ok) return { ok: false, result: fail(resolved.reason, { title }) }
  try {
    return { ok: true, path: resolved.path, isDirectory: (await fs.stat(resolved.path)).isDirectory() }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return {
      ok: false,
      result: fail(
        code === 'ENOENT'
          ? `Path ${JSON.stringify(where)} does not exist.${words.missing}`
          : `Cannot ${words.cannot} ${JSON.stringify(where)}: ${(error as Error).message}`,
        { title },
      ),
    }
  }
}
