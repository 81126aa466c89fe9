// `npm start`: builds Lanes and opens the desktop app. The Electron binary is not downloaded by `npm install`
// (package.json allowScripts denies it), so the first start fetches it with Electron's own installer.
import { spawn, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = fileURLToPath(new URL('..', import.meta.url))

function electronBinary() {
  try {
    // The electron package exports the binary's path, and throws when the binary was never installed.
    return require('electron')
  } catch {
    return null
  }
}

function run(command, args) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' })
  return result.status === 0
}

/**
 * Electron's installer, quietly: its output is a stack trace when the download fails, which says nothing a
 * person can act on. The reason's first line (e.g. "fetch failed") is kept for the message below.
 */
function installElectron() {
  const result = spawnSync(process.execPath, [require.resolve('electron/install.js')], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  if (result.status === 0) return { ok: true }
  const reason = `${result.stderr ?? ''}\n${result.stdout ?? ''}`
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '' && !line.startsWith('at '))
  return { ok: false, reason: reason?.replace(/^\w*Error:\s*/, '') }
}

let binary = electronBinary()
if (!binary) {
  console.log('Lanes: the Electron runtime is not installed yet; fetching it once (about 100 MB)...')
  const installed = installElectron()
  binary = installed.ok ? electronBinary() : null
  if (!binary) {
    console.error(
      [
        '',
        `Lanes could not download the Electron runtime${installed.reason ? ` (${installed.reason})` : ''}: no network access to its download site?`,
        'You can still use Lanes in your browser:',
        '',
        '    npm run web',
        '',
        'or try `npm start` again once the network is available.',
      ].join('\n'),
    )
    process.exit(1)
  }
}

if (!run(process.execPath, [join(root, 'node_modules', 'electron-vite', 'bin', 'electron-vite.js'), 'build']))
  process.exit(1)

const args = ['.', ...process.argv.slice(2)]
// Chromium's sandbox refuses to start as root (containers, CI); everywhere else it stays on.
if (process.getuid?.() === 0) args.push('--no-sandbox')
const child = spawn(binary, args, { cwd: root, stdio: 'inherit' })
child.on('exit', (code) => process.exit(code ?? 0))
