import { homedir } from 'node:os'
import { join } from 'node:path'

/**
 * Where Lanes keeps its data (sessions, always-allow rules, settings). The desktop app, `lanes web` and
 * `lanes run` share it, so a session started in one shows up in the others. LANES_DATA_DIR overrides it.
 */
export function defaultDataDir(): string {
  const override = process.env.LANES_DATA_DIR
  if (override) return override
  switch (process.platform) {
    case 'darwin':
      return join(homedir(), 'Library', 'Application Support', 'Lanes')
    case 'win32':
      return join(process.env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'), 'Lanes')
    default:
      return join(process.env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'lanes')
  }
}

export function defaultSessionsDir(): string {
  return join(defaultDataDir(), 'sessions')
}

/** The app's settings (model, base URL, the user's MCP servers): one file per data folder, shared by every host. */
export function settingsFileOf(sessionsDir: string): string {
  return join(sessionsDir, 'settings.json')
}
