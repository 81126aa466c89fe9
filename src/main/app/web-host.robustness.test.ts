import { mkdir, writeFile } from 'node:fs/promises'
import { connect as tcpConnect } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { createAppApi, type AppApi } from './app-api'
import { MAX_MESSAGE_BYTES, startWebHost, type WebHost } from './web-host'
import { useTempDir } from '../test-fixtures/temp-dir'

/**
 * What a hostile local client can send the browser-mode host, over raw TCP so nothing is tidied up by a
 * client library on the way. Each case must get a refusal on its own connection while the host keeps
 * serving: an unhandled 'error' would end the process (and fail this run as an unhandled error).
 */

interface RawReply {
  /** Everything the host sent before it closed the connection (or the wait ran out). */
  bytes: Buffer
  closed: boolean
}

/** Sends `chunks` in order (a function gets the bytes received so far) and collects the answer. */
function rawExchange(port: number, chunks: (Buffer | string)[], waitMs = 3000): Promise<RawReply> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port })
    const received: Buffer[] = []
    let closed = false
    const done = (): void => {
      clearTimeout(timer)
      socket.destroy()
      resolve({ bytes: Buffer.concat(received), closed })
    }
    const timer = setTimeout(done, waitMs)
    socket.on('data', (d: Buffer) => received.push(d))
    socket.on('error', () => undefined)
    socket.on('close', () => {
      closed = true
      done()
    })
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(chunk)
    })
  })
}

function upgradeRequest(port: number, protocols: string, target = '/api'): string {
  return [
    `GET ${target} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    `Origin: http://127.0.0.1:${port}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version: 13',
    `Sec-WebSocket-Protocol: ${protocols}`,
    '',
    '',
  ].join('\r\n')
}

/** A client frame (clients must mask). `declaredLength` lets a header claim more than the bytes that follow. */
function clientFrame(opcode: number, payload: Buffer, declaredLength = payload.length): Buffer {
  const mask = Buffer.from([0x12, 0x34, 0x56, 0x78])
  let header: Buffer
  if (declaredLength < 126) header = Buffer.from([0x80 | opcode, 0x80 | declaredLength])
  else if (declaredLength < 65536) {
    header = Buffer.alloc(4)
    header.writeUInt8(0x80 | opcode, 0)
    header.writeUInt8(0x80 | 126, 1)
    header.writeUInt16BE(declaredLength, 2)
  } else {
    header = Buffer.alloc(10)
    header.writeUInt8(0x80 | opcode, 0)
    header.writeUInt8(0x80 | 127, 1)
    header.writeBigUInt64BE(BigInt(declaredLength), 2)
  }
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!))
  return Buffer.concat([header, mask, masked])
}

/** The status code of the close frame the host sent after its 101 answer, if any. */
function closeCode(reply: Buffer): number | null {
  const headerEnd = reply.indexOf('\r\n\r\n')
  if (headerEnd < 0) return null
  const frames = reply.subarray(headerEnd + 4)
  if (frames.length < 4 || frames[0] !== 0x88) return null
  return frames.readUInt16BE(2)
}

describe('the browser-mode host under hostile input', () => {
  const base = useTempDir('lanes-host-raw-', 'all')
  let api: AppApi
  let host: WebHost

  beforeAll(async () => {
    const renderer = join(base(), 'renderer')
    await mkdir(renderer, { recursive: true })
    await writeFile(join(renderer, 'index.html'), '<html><head></head></html>')
    api = await createAppApi({
      sessionsDir: join(base(), 'sessions'),
      name: 'Lanes',
      version: '1',
      transport: 'web',
    })
    host = await startWebHost({ api, rendererDir: renderer, port: 0 })
  })
  afterAll(async () => {
    await host.close()
  })

  /** The host still answers a well-formed client over the socket. */
  async function stillServes(): Promise<void> {
    const origin = `http://127.0.0.1:${host.port}`
    const ws = new WebSocket(`ws://127.0.0.1:${host.port}/api`, ['lanes', `lanes.token.${host.token}`], {
      headers: { Origin: origin },
    })
    const reply = await new Promise<unknown>((resolve, reject) => {
      ws.on('open', () => ws.send(JSON.stringify({ id: 7, channel: 'app:info' })))
      ws.on('message', (data) => resolve(JSON.parse(String(data))))
      ws.on('error', reject)
    })
    expect(reply).toMatchObject({ kind: 'result', id: 7, result: { ok: true } })
    ws.close()
  }

  it('refuses a malformed upgrade request without a token and keeps serving', async () => {
    const reply = await rawExchange(host.port, [upgradeRequest(host.port, 'lanes', 'http://[')])
    expect(reply.bytes.toString('latin1')).toMatch(/^HTTP\/1\.1 400 /)
    expect(reply.closed).toBe(true)
    await stillServes()
  })

  it('refuses a plain request whose target is no URL, and keeps serving', async () => {
    const reply = await rawExchange(host.port, [
      `GET http://[ HTTP/1.1\r\nHost: 127.0.0.1:${host.port}\r\n\r\n`,
    ])
    expect(reply.bytes.toString('latin1')).toMatch(/^HTTP\/1\.1 400 /)
    await stillServes()
  })

  it('refuses bytes that are not HTTP and keeps serving', async () => {
    const reply = await rawExchange(host.port, [
      Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x0d, 0x0a]),
    ])
    expect(reply.bytes.toString('latin1')).toMatch(/^HTTP\/1\.1 400 /)
    await stillServes()
  })

  it('refuses an upgrade whose headers ws cannot accept, with the token, and keeps serving', async () => {
    const request = upgradeRequest(host.port, `lanes, lanes.token.${host.token}`).replace(
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Version: 99',
    )
    const reply = await rawExchange(host.port, [request])
    expect(reply.bytes.toString('latin1')).toMatch(/^HTTP\/1\.1 4\d\d /)
    expect(reply.bytes.toString('latin1')).not.toContain(host.token)
    await stillServes()
  })

  it(`closes a socket whose frame is over ${MAX_MESSAGE_BYTES / 1024 / 1024} MiB (1009) and keeps serving`, async () => {
    const reply = await rawExchange(host.port, [
      upgradeRequest(host.port, `lanes, lanes.token.${host.token}`),
      clientFrame(0x1, Buffer.from('{"id":1,'), MAX_MESSAGE_BYTES + 1),
    ])
    expect(reply.bytes.toString('latin1')).toMatch(/^HTTP\/1\.1 101 /)
    expect(reply.bytes.toString('latin1')).toMatch(/Sec-WebSocket-Protocol: lanes\r\n/i)
    expect(closeCode(reply.bytes)).toBe(1009)
    expect(reply.closed).toBe(true)
    await stillServes()
  })

  it('closes a socket whose text frame is invalid UTF-8 (1007) and keeps serving', async () => {
    const reply = await rawExchange(host.port, [
      upgradeRequest(host.port, `lanes, lanes.token.${host.token}`),
      clientFrame(0x1, Buffer.from([0x7b, 0xff, 0xfe, 0xfd, 0x7d])),
    ])
    expect(closeCode(reply.bytes)).toBe(1007)
    await stillServes()
  })

  it('closes a socket that breaks the frame protocol (unmasked, reserved opcode) and keeps serving', async () => {
    const unmasked = Buffer.from([0x81, 0x02, 0x7b, 0x7d])
    const reserved = clientFrame(0x3, Buffer.from('x'))
    for (const frame of [unmasked, reserved]) {
      const reply = await rawExchange(host.port, [
        upgradeRequest(host.port, `lanes, lanes.token.${host.token}`),
        frame,
      ])
      expect(closeCode(reply.bytes)).toBe(1002)
    }
    await stillServes()
  })

  it('survives clients that vanish mid-handshake and mid-frame', async () => {
    for (let i = 0; i < 20; i++) {
      await new Promise<void>((resolve) => {
        const socket = tcpConnect({ host: '127.0.0.1', port: host.port }, () => {
          socket.write(upgradeRequest(host.port, `lanes, lanes.token.${host.token}`))
          if (i % 2 === 1) socket.write(clientFrame(0x1, Buffer.from('{"id":1}')).subarray(0, 5))
          socket.resetAndDestroy()
          resolve()
        })
        socket.on('error', () => undefined)
      })
    }
    await stillServes()
  })
})
