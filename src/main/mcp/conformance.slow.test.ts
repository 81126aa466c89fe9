import { execFile } from 'node:child_process'
import { readdir, readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { useTempDir } from '../test-fixtures/temp-dir'

/**
 * The MCP conformance suite's client scenarios against Lanes' client wiring (McpConnection over streamable
 * HTTP, through test-fixtures/conformance-client.ts): the suite starts each scenario's server on localhost,
 * runs our client against it and judges what went over the wire. The auth scenarios sign in as the app does
 * (mcp/oauth.ts: the SDK's client auth, a loopback redirect) with a "browser" that follows the authorization URL.
 * Not run: the elicitation scenario (Lanes declares no elicitation capability), `auth/basic-cimd` (Lanes has no
 * https client-metadata URL to offer), `auth/pre-registration` (no place to enter pre-registered credentials) and
 * the `client_credentials` scenarios (machine-to-machine, no user to sign in).
 */

const AUTH_SCENARIOS = [
  'metadata-default',
  'metadata-var1',
  'metadata-var2',
  'metadata-var3',
  'scope-from-www-authenticate',
  'scope-from-scopes-supported',
  'scope-omitted-when-undefined',
  'scope-step-up',
  'scope-retry-limit',
  'token-endpoint-auth-basic',
  'token-endpoint-auth-post',
  'token-endpoint-auth-none',
  'resource-mismatch',
  '2025-03-26-oauth-metadata-backcompat',
  '2025-03-26-oauth-endpoint-fallback',
].map((name) => `auth/${name}`)

const require = createRequire(import.meta.url)
const SUITE = join(
  require.resolve('@modelcontextprotocol/conformance/package.json'),
  '..',
  'dist',
  'index.js',
)
const TSX = join(require.resolve('tsx/package.json'), '..', 'dist', 'cli.mjs')
const CLIENT = fileURLToPath(new URL('./test-fixtures/conformance-client.ts', import.meta.url))

/** The suite's checks.json under `dir` (its layout differs between versions). */
async function findChecks(dir: string): Promise<string> {
  for (const entry of await readdir(dir, { recursive: true })) {
    if (entry.endsWith('checks.json')) return join(dir, entry)
  }
  throw new Error(`no checks.json under ${dir}`)
}

describe('MCP conformance, client scenarios', () => {
  const dir = useTempDir('lanes-mcp-conformance-')

  it.each(['initialize', 'tools_call', 'sse-retry', ...AUTH_SCENARIOS])('passes %s', async (scenario) => {
    const command = [process.execPath, TSX, CLIENT].map((p) => JSON.stringify(p)).join(' ')
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [
        SUITE,
        'client',
        '--command',
        command,
        '--scenario',
        scenario,
        '--timeout',
        '60000',
        '-o',
        join(dir(), 'results'),
      ],
      { cwd: dir(), maxBuffer: 16 * 1024 * 1024 },
    )
    // It reports on stderr (its exit code says nothing of the checks).
    expect(stdout + stderr).toContain('OVERALL: PASSED')
    // The suite's own record: every check it made, none failed, and the checks the scenario is about passed.
    const checks = JSON.parse(await readFile(await findChecks(join(dir(), 'results')), 'utf8')) as {
      id: string
      status: string
    }[]
    expect(checks.filter((c) => c.status === 'FAILURE')).toEqual([])
    expect(checks.filter((c) => c.status === 'SUCCESS').length).toBeGreaterThan(0)
  })
})
