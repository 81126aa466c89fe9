import { runInPty } from '../../pty-runner'
import { prepareSandbox } from '../../sandbox/launch'
import { captureSupport, makeLayer, overlayLaunch } from '../overlay'

/**
 * Runs `command` on a layer in the sandbox, as an approved command runs (overlay.test.ts kills this process with
 * SIGKILL while the command runs), the way `way` says: `perl` (PROLOGUE) or `programs` (setpriv, unshare, mount).
 * What the command prints comes out on stdout.
 */
const [workspace, outputDir, way, command] = process.argv.slice(2) as [string, string, string, string]
const found = captureSupport()
if (found.mode !== 'overlay') throw new Error(found.reason)
const { perl, ...programs } = found
if (way === 'perl' && !perl) throw new Error('no perl here')
const sandbox = prepareSandbox({ mode: 'workspace-write', workspace, network: false })
if ('error' in sandbox) throw new Error(sandbox.error)
const layer = makeLayer(outputDir, 'killed')
if ('error' in layer) throw new Error(layer.error)
await runInPty({
  command,
  cwd: workspace,
  timeoutMs: 600_000,
  onData: (chunk) => void process.stdout.write(chunk),
  launch: overlayLaunch(sandbox, way === 'perl' ? found : programs, workspace, layer),
})
