import { mkdir, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { createAppApi, type AppApi } from './app-api'
import { startWebHost, type WebHost } from './web-host'
import { useTempDir } from '../test-fixtures/temp-dir'

function get(port: number, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string; headers: Record<string, unknown> }>(
    (resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
        let body = ''
        res.on('data', (d: Buffer) => (body += d.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }))
      })
      req.on('error', reject)
      req.end()
    },
  )
}

function connect(url: string, origin: string, token?: string) {
  return new Promise<{ ws?: WebSocket; status?: number }>((resolve) => {
    const protocols = token === undefined ? ['lanes'] : ['lanes', `lanes.token.${token}`]
    const ws = new WebSocket(url, protocols, { headers: { Origin: origin } })
    ws.on('open', () => resolve({ ws }))
    ws.on('unexpected-response', (_req, res) => resolve({ status: res.statusCode }))
    ws.on('error', () => resolve({}))
  })
}

describe('the browser-mode host', () => {
  const base = useTempDir('lanes-host-', 'all')
  let api: AppApi
  let host: WebHost
  let origin: string

  beforeAll(async () => {
    const renderer = join(base(), 'renderer')
    await mkdir(join(renderer, 'assets'), { recursive: true })
    await mkdir(join(base(), 'project'))
    await writeFile(join(base(), 'secret.txt'), 'top secret')
    await writeFile(
      join(renderer, 'index.html'),
      '<html><head><script type="module" src="./assets/a.js"></script></head></html>',
    )
    await writeFile(join(renderer, 'assets', 'a.js'), 'console.log(1)')
    api = await createAppApi({
      sessionsDir: join(base(), 'sessions'),
      name: 'Lanes',
      version: '1',
      transport: 'web',
      workspace: join(base(), 'project'),
    })
    host = await startWebHost({ api, rendererDir: renderer, port: 0 })
    origin = `http://127.0.0.1:${host.port}`
  })
  afterAll(async () => {
    await host.close()
  })

  it('binds 127.0.0.1 and prints a URL with a long random token', () => {
    expect(host.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{32}$/)
  })

  it('serves the renderer with the web preload in front of its script, and never sets a cookie', async () => {
    const res = await get(host.port, `/?token=${host.token}`)
    expect(res.status).toBe(200)
    expect(res.body.indexOf('web-preload.js')).toBeLessThan(res.body.indexOf('assets/a.js'))
    expect(String(res.headers['content-security-policy'])).toContain("script-src 'self'")
    // A 127.0.0.1 cookie would reach every other local port too.
    expect(res.headers['set-cookie']).toBeUndefined()
    // The page's own files load after the token has left the address bar (a reload).
    expect((await get(host.port, '/')).status).toBe(200)
    expect((await get(host.port, '/assets/a.js')).status).toBe(200)
  })

  it('answers a link with a stale token, and the access path, with a page that says how to get in', async () => {
    for (const [path, status] of [
      ['/?token=from-an-earlier-start', 401],
      ['/access', 200],
    ] as const) {
      const res = await get(host.port, path)
      expect(res.status, path).toBe(status)
      expect(String(res.headers['content-type'])).toContain('text/html')
      expect(res.body).toContain('Open Lanes from the link in your terminal')
      expect(res.body).toContain('lanes web')
      expect(res.body).not.toContain(host.token)
    }
  })

  it('tells a page whether its token is the current one', async () => {
    expect((await get(host.port, '/api/token', { 'X-Lanes-Token': host.token })).status).toBe(204)
    expect((await get(host.port, '/api/token', { 'X-Lanes-Token': 'stale' })).status).toBe(401)
    expect((await get(host.port, '/api/token')).status).toBe(401)
  })

  it('refuses requests with a wrong token, or for another Host or Origin', async () => {
    expect((await get(host.port, '/assets/a.js?token=wrong')).status).toBe(401)
    expect((await get(host.port, `/?token=${host.token}`, { Host: 'evil.example' })).status).toBe(403)
    expect((await get(host.port, `/?token=${host.token}`, { Origin: 'http://evil.example' })).status).toBe(
      403,
    )
  })

  it('never serves a file outside the renderer folder', async () => {
    for (const path of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/..%2f..%2fsecret.txt',
      '/%00',
      '/%E0%A4%A',
    ]) {
      const res = await get(host.port, `${path}${path.includes('?') ? '&' : '?'}token=${host.token}`)
      expect(res.status, path).toBe(404)
      expect(res.body).not.toContain('top secret')
    }
  })

  it('refuses a socket without the token, with the token only in the URL, or from a foreign origin', async () => {
    const api = `${origin.replace('http', 'ws')}/api`
    expect((await connect(api, origin)).status).toBe(401)
    expect((await connect(api, origin, 'wrong')).status).toBe(401)
    expect((await connect(`${api}?token=${host.token}`, origin)).status).toBe(401)
    expect((await connect(api, 'http://evil.example', host.token)).status).toBe(403)
  })

  it('takes the token from the handshake and never echoes it', async () => {
    const { ws } = await connect(`${origin.replace('http', 'ws')}/api`, origin, host.token)
    expect(ws?.protocol).toBe('lanes')
    ws!.close()
  })

  it('answers requests over the socket and pushes events', async () => {
    const { ws } = await connect(`${origin.replace('http', 'ws')}/api`, origin, host.token)
    expect(ws).toBeDefined()
    const messages: unknown[] = []
    ws!.on('message', (data) => messages.push(JSON.parse(String(data))))
    const until = async (n: number) => {
      for (let i = 0; i < 100 && messages.length < n; i++) await new Promise((r) => setTimeout(r, 20))
    }
    ws!.send(JSON.stringify({ id: 1, channel: 'app:info' }))
    ws!.send('not json')
    ws!.send(JSON.stringify({ id: 2, channel: 'nope:nope' }))
    ws!.send(JSON.stringify({ id: 3, channel: 'workspace:open', input: { path: join(base(), 'project') } }))
    await until(5)
    expect(messages).toContainEqual({ kind: 'result', id: 1, result: expect.objectContaining({ ok: true }) })
    expect(messages).toContainEqual({
      kind: 'result',
      id: 0,
      result: expect.objectContaining({ code: 'invalid-input' }),
    })
    expect(messages).toContainEqual({
      kind: 'result',
      id: 2,
      result: expect.objectContaining({ code: 'unknown-channel' }),
    })
    expect(messages).toContainEqual({
      kind: 'event',
      channel: 'workspace:changed',
      payload: { path: join(base(), 'project'), name: 'project' },
    })
    ws!.close()
  })
})
