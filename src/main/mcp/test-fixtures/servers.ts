import { fileURLToPath } from 'node:url'
import { defaultPermissions, type McpServerConfig } from '../config'

/** The test server of this folder (test-server.mjs), and a user's server entry that runs it or another program. */
export const TEST_SERVER = fileURLToPath(new URL('./test-server.mjs', import.meta.url))

export function stdioServer(
  name: string,
  opts: { args?: string[]; timeoutSec?: number; source?: string } = {},
): McpServerConfig {
  const permissions = defaultPermissions('user')
  return {
    name,
    origin: 'user',
    source: opts.source ?? 'test',
    permissions:
      opts.timeoutSec !== undefined ? { ...permissions, timeoutSec: opts.timeoutSec } : permissions,
    kind: 'stdio',
    command: process.execPath,
    args: opts.args ?? [TEST_SERVER],
    env: {},
  }
}
