import { spawn } from 'node:child_process'

/**
 * `lanes web --open` (what `npm run web` uses) opens the app in the user's browser. Never under CI or a test
 * run, and never where no browser could show (no display on Linux); the URL is printed either way.
 */

export type BrowserLaunch = { command: string; args: string[] } | { skipped: string }

export function browserLaunch(url: string, env: NodeJS.ProcessEnv, platform: NodeJS.Platform): BrowserLaunch {
  if (env.CI || env.VITEST || env.LANES_NO_BROWSER)
    return { skipped: 'not opening a browser in a CI or test run' }
  switch (platform) {
    case 'darwin':
      return { command: 'open', args: [url] }
    case 'win32':
      // Not `cmd /c start`: cmd would read the URL's `&` as a command separator.
      return { command: 'rundll32', args: ['url.dll,FileProtocolHandler', url] }
    default:
      if (!env.DISPLAY && !env.WAYLAND_DISPLAY)
        return { skipped: 'there is no display here to show a browser' }
      return { command: 'xdg-open', args: [url] }
  }
}

/** Starts the browser without waiting for it; says why not when it did not try (a failed start is silent). */
export function openInBrowser(url: string): string | null {
  const launch = browserLaunch(url, process.env, process.platform)
  if ('skipped' in launch) return launch.skipped
  const child = spawn(launch.command, launch.args, { detached: true, stdio: 'ignore' })
  child.on('error', () => undefined)
  child.unref()
  return null
}
