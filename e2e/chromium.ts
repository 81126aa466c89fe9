import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'

/** The Chromium to test with; undefined lets Playwright use its own download, if one was installed. */
export function chromiumExecutable(): string | undefined {
  const fromEnv = process.env.CHROMIUM_PATH
  if (fromEnv && existsSync(fromEnv)) return fromEnv
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      const found = execFileSync('which', [name], { encoding: 'utf8' }).trim()
      if (found) return found
    } catch {
      // not on the PATH
    }
  }
  return undefined
}
