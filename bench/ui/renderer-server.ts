import react from '@vitejs/plugin-react'
import { execFileSync } from 'node:child_process'
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { extname, join, normalize, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'vite'
import { QUICK } from '../harness'

const repo = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Builds the renderer exactly as the app ships it (same root, plugin and minification as electron-vite's renderer
 * build, without the web preload: the bench installs its own `window.api`) and serves it on 127.0.0.1.
 */
export async function buildRenderer(outDir: string): Promise<void> {
  await build({
    root: resolve(repo, 'src/renderer'),
    base: './',
    plugins: [react()],
    logLevel: 'warn',
    build: { outDir, emptyOutDir: true, minify: true },
  })
}

/** The newest modification time of any file below `dir` (0 if it does not exist). */
function newestBelow(dir: string): number {
  if (!existsSync(dir)) return 0
  let newest = 0
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs)
  return newest
}

/**
 * The app's own renderer build (`npm run build`, out/renderer) when it is newer than every source it is built from,
 * else null. Its index.html loads no preload (the web host injects one), so the bench's `window.api` works with it.
 */
function freshAppRenderer(): string | null {
  const out = resolve(repo, 'out/renderer')
  const index = join(out, 'index.html')
  if (!existsSync(index)) return null
  const sources = ['src/renderer', 'src/shared', 'src/preload'].map((dir) => newestBelow(resolve(repo, dir)))
  return statSync(index).mtimeMs > Math.max(...sources) ? out : null
}

/**
 * The renderer a benchmark serves: built into `<cacheDir>/renderer` on every run (the figures must be of the renderer
 * as it is now). Quick mode takes the app's own build when it is up to date instead: `npm test` builds just before it
 * runs the benchmarks, and a build takes a minute on two busy cores.
 */
export async function benchRenderer(cacheDir: string): Promise<string> {
  const fresh = QUICK ? freshAppRenderer() : null
  if (fresh !== null) return fresh
  const outDir = join(cacheDir, 'renderer')
  await buildRenderer(outDir)
  return outDir
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
}

export async function serveDir(dir: string): Promise<{ url: string; close(): Promise<void> }> {
  const root = resolve(dir)
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)
    const file = normalize(join(root, path === '/' ? 'index.html' : path))
    if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' })
    createReadStream(file).pipe(res)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise((r) => server.close(() => r())),
  }
}

/**
 * The Chromium the e2e tests use (e2e/chromium.ts, which the bench's TypeScript project cannot include):
 * $CHROMIUM_PATH, then `chromium` on the PATH, else Playwright's own download.
 */
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
