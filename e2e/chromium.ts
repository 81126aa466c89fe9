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

/**
 * Why the browser tests cannot run here, in one line, or null when a Chromium is at hand: the one on the PATH or
 * in $CHROMIUM_PATH, or Playwright's own download.
 */
export function missingChromium(playwrightChromium: string | undefined): string | null {
  if (chromiumExecutable() !== undefined) return null
  if (playwrightChromium !== undefined && existsSync(playwrightChromium)) return null
  return (
    'The browser tests need Chromium, and none was found: install it (Debian/Ubuntu: `sudo apt install chromium`; ' +
    'elsewhere: `npx playwright install chromium`), or set CHROMIUM_PATH to a Chromium binary.'
  )
}
