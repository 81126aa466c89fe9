import { randomBytes, timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { extname, join, normalize, sep } from 'node:path'
import { WebSocketServer, type WebSocket } from 'ws'
import { WireRequest, type WireMessage } from '../../shared/ipc'
import { dispatchRequest, err, type AppApi } from './app-api'

/**
 * Browser mode: serves the built renderer and the app API over a WebSocket, on 127.0.0.1 only.
 * Anyone on the machine can reach a loopback port, and any web page can make the browser send requests to
 * one, so every HTTP request and every socket needs the per-start token (query or cookie), and the Host and
 * Origin headers must name this server (DNS rebinding and cross-site pages are refused).
 */

export interface WebHostOptions {
  api: AppApi
  /** Folder with the built renderer (index.html, assets/, web-preload.js). */
  rendererDir: string
  /** 0 picks a free port. */
  port?: number
  /** Fixed token for tests; random per start otherwise. */
  token?: string
}

export interface WebHost {
  /** The URL to open, with its token. */
  url: string
  port: number
  token: string
  close(): Promise<void>
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.map': 'application/json',
}

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** Frames a message up to this size; a larger one is refused rather than parsed. */
const MAX_MESSAGE_BYTES = 8 * 1024 * 1024

export async function startWebHost(opts: WebHostOptions): Promise<WebHost> {
  const token = opts.token ?? randomBytes(24).toString('base64url')
  const tokenBytes = Buffer.from(token)
  let port = 0
  const cookieName = (): string => `lanes_token_${port}`

  const tokenMatches = (candidate: string | null | undefined): boolean => {
    if (!candidate) return false
    const bytes = Buffer.from(candidate)
    return bytes.length === tokenBytes.length && timingSafeEqual(bytes, tokenBytes)
  }

  const hostAllowed = (host: string | undefined): boolean =>
    host === `127.0.0.1:${port}` || host === `localhost:${port}`

  const originAllowed = (origin: string | undefined): boolean =>
    origin === `http://127.0.0.1:${port}` || origin === `http://localhost:${port}`

  const authorized = (req: IncomingMessage, url: URL): boolean => {
    if (tokenMatches(url.searchParams.get('token'))) return true
    return tokenMatches(readCookie(req.headers.cookie, cookieName()))
  }

  const server = createServer((req, res) => {
    void serveHttp(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end('Internal error')
    })
  })

  async function serveHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`)
    if (!hostAllowed(req.headers.host)) return deny(res, 403, 'Forbidden: unexpected Host header.')
    // A browser sends Origin on cross-site requests; ours are same-origin or none.
    if (req.headers.origin !== undefined && !originAllowed(req.headers.origin)) {
      return deny(res, 403, 'Forbidden: cross-origin request.')
    }
    if (!authorized(req, url)) return deny(res, 401, 'Unauthorized: open the URL that `lanes web` printed.')
    if (req.method !== 'GET' && req.method !== 'HEAD') return deny(res, 405, 'Method not allowed.')

    const headers: Record<string, string> = {
      'Content-Security-Policy': CSP,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
      'Cross-Origin-Opener-Policy': 'same-origin',
    }
    if (url.searchParams.has('token')) {
      // Later requests (assets, reloads without the query) authenticate with the cookie.
      headers['Set-Cookie'] = `${cookieName()}=${token}; HttpOnly; SameSite=Strict; Path=/`
    }

    const file = resolveAsset(opts.rendererDir, url.pathname)
    if (file === null) return deny(res, 404, 'Not found.')
    let body: Buffer
    try {
      body = await readFile(file)
    } catch {
      return deny(res, 404, 'Not found.')
    }
    if (file.endsWith('index.html')) body = Buffer.from(injectWebPreload(body.toString('utf8')))
    headers['Content-Type'] = CONTENT_TYPES[extname(file)] ?? 'application/octet-stream'
    res.writeHead(200, headers)
    res.end(req.method === 'HEAD' ? undefined : body)
  }

  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES })
  server.on('upgrade', (req, socket: Socket, head) => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`)
    const refuse = (status: number, text: string): void => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
    }
    if (url.pathname !== '/api') return refuse(404, 'Not Found')
    if (!hostAllowed(req.headers.host) || !originAllowed(req.headers.origin)) return refuse(403, 'Forbidden')
    if (!authorized(req, url)) return refuse(401, 'Unauthorized')
    wss.handleUpgrade(req, socket, head, (ws) => serveSocket(ws))
  })

  function serveSocket(ws: WebSocket): void {
    const send = (message: WireMessage): void => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message))
    }
    const unsubscribe = opts.api.subscribe((channel, payload) => send({ kind: 'event', channel, payload }))
    ws.on('close', unsubscribe)
    ws.on('message', (data, isBinary) => {
      let request: WireRequest
      try {
        if (isBinary) throw new Error('binary')
        const parsed = WireRequest.safeParse(JSON.parse(String(data)))
        if (!parsed.success) throw new Error('shape')
        request = parsed.data
      } catch {
        // Without a valid id there is no one to answer: say so on id 0, the id no request uses.
        send({
          kind: 'result',
          id: 0,
          result: err('invalid-input', 'Malformed request: expected { id, channel, input }.'),
        })
        return
      }
      void dispatchRequest(opts.api, request.channel, request.input).then((result) =>
        send({ kind: 'result', id: request.id, result }),
      )
    })
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  port = (server.address() as AddressInfo).port

  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate()
        wss.close()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

function deny(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' })
  res.end(text)
}

function readCookie(header: string | undefined, name: string): string | null {
  if (!header) return null
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return null
}

/** Maps a URL path to a file inside the renderer folder, or null if it would leave it. */
function resolveAsset(root: string, pathname: string): string | null {
  let decoded: string
  try {
    decoded = decodeURIComponent(pathname)
  } catch {
    return null
  }
  if (decoded.includes('\0')) return null
  const relative = decoded === '/' ? 'index.html' : decoded.replace(/^\/+/, '')
  const full = normalize(join(root, relative))
  return full.startsWith(normalize(root) + sep) ? full : null
}

/**
 * The web preload must define `window.api` before the renderer's module script runs; module scripts run in
 * document order, so it goes in front of the first script.
 */
function injectWebPreload(html: string): string {
  const tag = '<script type="module" src="./web-preload.js"></script>\n    '
  const at = html.indexOf('<script')
  if (at >= 0) return html.slice(0, at) + tag + html.slice(at)
  return html.replace('</head>', `${tag}</head>`)
}
