import { randomBytes, timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { extname, join, normalize, sep } from 'node:path'
import { WebSocketServer, type WebSocket } from 'ws'
import {
  WEB_ACCESS_PATH,
  WEB_API_PATH,
  WEB_API_PROTOCOL,
  WEB_TOKEN_CHECK_PATH,
  WEB_TOKEN_PROTOCOL_PREFIX,
  WireRequest,
  type WireMessage,
} from '../../shared/ipc'
import { dispatchRequest, err, type AppApi } from './app-api'
import { own } from '../../shared/own'

/**
 * Browser mode: serves the built renderer and the app API over a WebSocket, on 127.0.0.1 only.
 * Anyone on the machine can reach a loopback port, and any web page can make the browser send requests to
 * one, so the API socket needs the per-start token and the Host and Origin headers must name this server
 * (DNS rebinding and cross-site pages are refused).
 *
 * The token never rides a cookie: a browser sends a 127.0.0.1 cookie to every other local port too (cookies
 * ignore ports), so any local server could read it. The page takes it from the printed URL into the origin's
 * local storage (which no other port's page can read; other tabs and bookmarks of this start use it), removes
 * it from the address bar, and presents it in the socket handshake (`Sec-WebSocket-Protocol`,
 * the one header a browser lets a page set there). The page's files are the app's public build, so they are
 * served without a token (a reload after the token left the address bar must still load); what they can
 * reach is the socket.
 *
 * Nothing a client sends may stop the host: malformed requests, upgrades and frames get a refusal and the
 * connection is closed; the host keeps serving everyone else.
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

const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'Cross-Origin-Opener-Policy': 'same-origin',
}

/** Frames a message up to this size; a larger one is refused rather than parsed. */
export const MAX_MESSAGE_BYTES = 8 * 1024 * 1024

export async function startWebHost(opts: WebHostOptions): Promise<WebHost> {
  const token = opts.token ?? randomBytes(24).toString('base64url')
  const tokenBytes = Buffer.from(token)
  let port = 0

  const tokenMatches = (candidate: string | null | undefined): boolean => {
    if (!candidate) return false
    const bytes = Buffer.from(candidate)
    return bytes.length === tokenBytes.length && timingSafeEqual(bytes, tokenBytes)
  }

  const hostAllowed = (host: string | undefined): boolean =>
    host === `127.0.0.1:${port}` || host === `localhost:${port}`

  const originAllowed = (origin: string | undefined): boolean =>
    origin === `http://127.0.0.1:${port}` || origin === `http://localhost:${port}`

  /** The token offered in a socket handshake, among the client's subprotocols. */
  const handshakeToken = (req: IncomingMessage): string | null => {
    for (const offered of String(req.headers['sec-websocket-protocol'] ?? '').split(',')) {
      const name = offered.trim()
      if (name.startsWith(WEB_TOKEN_PROTOCOL_PREFIX)) return name.slice(WEB_TOKEN_PROTOCOL_PREFIX.length)
    }
    return null
  }

  const server = createServer((req, res) => {
    void serveHttp(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end('Internal error')
    })
  })

  async function serveHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = parseRequestUrl(req.url)
    if (url === null) return deny(res, 400, 'Bad request.')
    if (!hostAllowed(req.headers.host)) return deny(res, 403, 'Forbidden: unexpected Host header.')
    // A browser sends Origin on cross-site requests; ours are same-origin or none.
    if (req.headers.origin !== undefined && !originAllowed(req.headers.origin)) {
      return deny(res, 403, 'Forbidden: cross-origin request.')
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return deny(res, 405, 'Method not allowed.')
    if (url.pathname === WEB_TOKEN_CHECK_PATH) {
      const valid = tokenMatches(headerValue(req.headers['x-lanes-token']))
      res.writeHead(valid ? 204 : 401, { 'Cache-Control': 'no-store' }).end()
      return
    }
    // A link printed by an earlier start (or mistyped) gets the page that says how to get in.
    if (url.searchParams.has('token') && !tokenMatches(url.searchParams.get('token'))) {
      return sendPage(res, 401, accessPage(true), req.method)
    }
    if (url.pathname === WEB_ACCESS_PATH) return sendPage(res, 200, accessPage(false), req.method)

    const file = resolveAsset(opts.rendererDir, url.pathname)
    if (file === null) return deny(res, 404, 'Not found.')
    let body: Buffer
    try {
      body = await readFile(file)
    } catch {
      return deny(res, 404, 'Not found.')
    }
    if (file.endsWith('index.html')) body = Buffer.from(injectWebPreload(body.toString('utf8')))
    res.writeHead(200, {
      ...PAGE_HEADERS,
      'Content-Type': own(CONTENT_TYPES, extname(file)) ?? 'application/octet-stream',
    })
    res.end(req.method === 'HEAD' ? undefined : body)
  }

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_MESSAGE_BYTES,
    // Echo only the API protocol: the token is never sent back.
    handleProtocols: (offered) => (offered.has(WEB_API_PROTOCOL) ? WEB_API_PROTOCOL : false),
  })
  server.on('upgrade', (req, socket: Socket, head) => {
    // A client that resets mid-handshake must not surface as an unhandled 'error'.
    socket.on('error', () => socket.destroy())
    const refuse = (status: number, text: string): void => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
    }
    try {
      const url = parseRequestUrl(req.url)
      if (url === null) return refuse(400, 'Bad Request')
      if (url.pathname !== WEB_API_PATH) return refuse(404, 'Not Found')
      if (!hostAllowed(req.headers.host) || !originAllowed(req.headers.origin))
        return refuse(403, 'Forbidden')
      if (!tokenMatches(handshakeToken(req))) return refuse(401, 'Unauthorized')
      wss.handleUpgrade(req, socket, head, (ws) => serveSocket(ws))
    } catch {
      // ws rejects some handshakes by throwing (e.g. a header it cannot parse): refuse, keep serving.
      if (!socket.destroyed) refuse(400, 'Bad Request')
    }
  })

  function serveSocket(ws: WebSocket): void {
    const send = (message: WireMessage): void => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message))
    }
    const unsubscribe = opts.api.subscribe((channel, payload) => send({ kind: 'event', channel, payload }))
    ws.on('close', unsubscribe)
    // A frame over the size limit, invalid UTF-8 or a protocol violation: ws has already sent the close
    // frame with the reason (1009, 1007, 1002); without this listener the error would stop the process.
    ws.on('error', () => ws.terminate())
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

  // Bytes that are not HTTP at all: answer 400 and drop that connection only.
  server.on('clientError', (_error, socket: Socket) => {
    if (socket.writable)
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
    else socket.destroy()
  })

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

function sendPage(res: ServerResponse, status: number, html: string, method: string | undefined): void {
  res.writeHead(status, { ...PAGE_HEADERS, 'Content-Type': CONTENT_TYPES['.html']! })
  res.end(method === 'HEAD' ? undefined : html)
}

function headerValue(value: string | string[] | undefined): string | null {
  return typeof value === 'string' ? value : null
}

/** Null for a request target no URL can be made of (`http://[`): refused, never thrown. */
function parseRequestUrl(target: string | undefined): URL | null {
  try {
    return new URL(target ?? '/', 'http://127.0.0.1')
  } catch {
    return null
  }
}

/**
 * The page for an address without its token (a bookmark, a link from an earlier start). It explains where
 * the token comes from, since the address bar no longer shows it once the app has loaded.
 */
function accessPage(stale: boolean): string {
  const why = stale
    ? 'This link carries an access key from an earlier start of Lanes, which no longer works.'
    : 'This address has no access key, so Lanes cannot let this page in.'
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Lanes: open the link from your terminal</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:38rem;margin:4rem auto;padding:0 1.5rem;color:#1b1d22;background:#fff}
code{background:#eef0f3;padding:.1rem .3rem;border-radius:4px}h1{font-size:1.4rem}
@media (prefers-color-scheme:dark){body{color:#e6e8eb;background:#1b1d22}code{background:#2c3038}}</style>
</head><body><main data-testid="access-page">
<h1>Open Lanes from the link in your terminal</h1>
<p>${why}</p>
<p>Each time Lanes starts in browser mode (<code>npm run web</code> or <code>lanes web</code>), it prints a
link with a new access key in the terminal where it runs, and opens it for you when it can. Open that link
once in this browser: while that Lanes runs, other tabs and bookmarks of this address then get in by
themselves.</p>
<p>The key is not part of the address on purpose: it keeps other programs and web pages on this computer
from using Lanes in your name. If Lanes is no longer running (or was started again), start it and open its
new link.</p>
</main></body></html>
`
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
