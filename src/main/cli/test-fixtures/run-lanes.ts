import { vi } from 'vitest'
import type { SessionEvent } from '../../../shared/events'
import { main } from '../cli'

/**
 * Runs `lanes ...args` in this process, as bin/lanes.js would, and returns its exit code, the events it printed
 * (one JSON line each on stdout) and its stderr.
 */
export async function runLanes(
  args: string[],
): Promise<{ code: number; events: SessionEvent[]; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk)
    return true
  })
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk)
    return true
  })
  try {
    const code = await main(args)
    const events = stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as SessionEvent)
    return { code, events, stderr }
  } finally {
    out.mockRestore()
    err.mockRestore()
  }
}
