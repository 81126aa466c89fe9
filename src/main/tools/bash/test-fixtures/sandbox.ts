import { sandboxSupport } from '../sandbox/launch'

/**
 * Why tests that run the sandbox for real cannot run here, or null when they can. CI installs bubblewrap and must
 * not skip them (.ci/run sets LANES_REQUIRE_SANDBOX; CI providers set CI): a missing sandbox throws there. A
 * developer machine without it skips them, saying why (`what` names them).
 */
export function sandboxMissing(what: string): string | null {
  const support = sandboxSupport()
  if (support.available) return null
  if (process.env.CI || process.env.LANES_REQUIRE_SANDBOX)
    throw new Error(`${what} need bubblewrap on CI: ${support.reason}`)
  console.warn(`Skipping ${what}: ${support.reason}`)
  return support.reason
}
