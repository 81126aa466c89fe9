import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runInPty } from '../pty-runner'
import { prepareSandbox, sandboxSupport, type SandboxLaunch } from '../sandbox/launch'
import { captureSupport, makeLayer, overlayLaunch, probeCapture, type OverlayPrograms } from './overlay'

/**
 * The two ways a command is put on its layer (issue 20): PROLOGUE, one perl start that makes the namespace and the
 * mount, and setpriv + unshare + the WRAPPER's `mount` where there is no perl. Each on a real sandbox: the
 * command's changes go to the layer and nowhere else, and a Lanes killed with SIGKILL leaves nothing running.
 */
const found = captureSupport()
const overlay = sandboxSupport().available && found.mode === 'overlay'
if (!overlay) console.warn(`Skipping the overlay tests: ${JSON.stringify(found)}`)
const ways: [string, OverlayPrograms][] = []
if (found.mode === 'overlay') {
  const { perl, ...programs } = found
  if (perl) ways.push(['perl', found])
  else console.warn('Only the setpriv and unshare way is tested: perl cannot mount the layer here')
  ways.push(['programs', programs])
}
const child = fileURLToPath(new URL('./test-fixtures/overlay-child.ts', import.meta.url))
const root = fileURLToPath(new URL('../../../../../', import.meta.url))

let base: string
let n = 0
beforeAll(async () => {
  // Not under /tmp: the sandbox has a private tmpfs there.
  const cache = join(process.cwd(), 'node_modules', '.cache')
  await mkdir(cache, { recursive: true })
  base = await realpath(await mkdtemp(join(cache, 'lanes-overlay-test-')))
})
afterAll(async () => {
  await rm(base, { recursive: true, force: true })
})

async function setup() {
  const dir = join(base, `case-${++n}`)
  const workspace = join(dir, 'ws')
  const outputDir = join(dir, 'out')
  await mkdir(join(workspace, 'd'), { recursive: true })
  await mkdir(outputDir)
  await writeFile(join(workspace, 'a.txt'), 'a\n')
  await writeFile(join(workspace, 'd', 'old.txt'), 'old\n')
  const sandbox = prepareSandbox({ mode: 'workspace-write', workspace, network: false })
  if ('error' in sandbox) throw new Error(sandbox.error)
  const layer = makeLayer(outputDir, 'c1')
  if ('error' in layer) throw new Error(layer.error)
  return { workspace, outputDir, sandbox, layer }
}

/** Processes whose command line holds `text`. */
async function processesWith(text: string): Promise<string[]> {
  const found: string[] = []
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
    if (cmdline.includes(text)) found.push(pid)
  }
  return found
}

describe.skipIf(!overlay)('a command on its layer', () => {
  it('finds perl’s way only where it knows the system calls, and the programs’ way works without it', () => {
    const elsewhere = probeCapture('linux', process.env.PATH ?? '', 'ia32')
    expect(elsewhere.mode).toBe('overlay')
    expect(elsewhere.mode === 'overlay' && elsewhere.perl).toBeFalsy()
  })

  for (const [way, programs] of ways) {
    it(`${way}: puts every change in the layer, none in the workspace, and passes the exit code on`, async () => {
      const { workspace, sandbox, layer } = await setup()
      let output = ''
      const run = await runInPty({
        command: 'echo b > a.txt && rm -r d && mkdir d && echo new > d/new.txt && echo done && exit 3',
        cwd: workspace,
        timeoutMs: 30_000,
        onData: (chunk) => void (output += chunk.toString()),
        launch: overlayLaunch(sandbox, programs, workspace, layer),
      })
      expect(output).toBe('done\n')
      expect(run.exitCode).toBe(3)
      expect(run.status).toContain('"lanes-layer"')
      // The workspace is as it was; the layer has the changes, and `d` as a folder removed and made again.
      expect(await readFile(join(workspace, 'a.txt'), 'utf8')).toBe('a\n')
      expect(await readdir(join(workspace, 'd'))).toEqual(['old.txt'])
      expect(await readFile(join(layer.upper, 'a.txt'), 'utf8')).toBe('b\n')
      expect(await readFile(join(layer.upper, 'd', 'new.txt'), 'utf8')).toBe('new\n')
      expect(await readFile(layer.opaqueFile, 'utf8')).toBe('d\0done\0')
    })

    it(`${way}: prints nothing of its own and gives the command the sandbox's environment as it is`, async () => {
      const { workspace, sandbox: prepared, layer } = await setup()
      // A locale that is named but not installed (perl warns about one).
      const sandbox = { ...prepared, env: { ...prepared.env, LANG: 'xx_YY.UTF-8' } }
      const envOf = async (launch: SandboxLaunch) => {
        let output = ''
        const run = await runInPty({
          command: 'env | sort',
          cwd: workspace,
          timeoutMs: 30_000,
          onData: (chunk) => void (output += chunk.toString()),
          launch,
        })
        expect(run.exitCode).toBe(0)
        // The wrapper is a shell too: the command's shell counts one level more.
        return output.replace(/^SHLVL=\d+\n/m, '')
      }
      const plain = await envOf(sandbox)
      expect(plain).toContain('LANG=xx_YY.UTF-8\n')
      expect(await envOf(overlayLaunch(sandbox, programs, workspace, layer))).toBe(plain)
    })

    it(`${way}: leaves nothing running when Lanes is killed with SIGKILL during the command`, async () => {
      const { workspace, outputDir } = await setup()
      // A command line no other process has: the command's own `sleep`, seen from outside its PID namespace.
      const marker = `3599.${randomBytes(4).readUInt32BE(0)}`
      const proc = spawn(
        process.execPath,
        ['--import', 'tsx', child, workspace, outputDir, way, `echo started; sleep ${marker}`],
        { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
      )
      const exited = new Promise((resolve) => proc.once('exit', resolve))
      await new Promise<void>((resolve, reject) => {
        let text = ''
        proc.stdout!.on('data', (chunk: Buffer) => {
          text += chunk.toString()
          if (text.includes('started')) resolve()
        })
        proc.once('exit', (code) => reject(new Error(`the run ended (${code}) before the command started`)))
      })
      expect(await processesWith(marker)).not.toEqual([])
      proc.kill('SIGKILL')
      await exited
      let left = await processesWith(marker)
      for (let i = 0; i < 100 && left.length > 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        left = await processesWith(marker)
      }
      expect(left).toEqual([])
      // Nor the wrapper, nor the holder of its namespace (both name the layer's folder).
      expect(await processesWith(join(outputDir, 'capture'))).toEqual([])
    })
  }
})
