import { execFileSync, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { beforeEach, describe, expect, it } from 'vitest'
import { sandboxSupport } from '../tools/bash/sandbox/launch'
import { useTempDir } from '../test-fixtures/temp-dir'
import { TOOL_NAME } from '../mcp/names'
import {
  EVERYTHING_SERVER,
  FILESYSTEM_SERVER,
  finished,
  queued,
  runWithMcp,
  TEST_SERVER,
} from './test-fixtures/mcp-run'

/**
 * MCP servers through `lanes run` with the scripted model: the registry's real servers (filesystem,
 * everything) and this folder's test server, as real processes in the real sandbox.
 */

const sandboxed = sandboxSupport().available
/** A turn played once the server has been ready `times` times (it starts in the background with the run). */
const start = (server: string, times = 1) => ({ afterReady: { [server]: times } })

/**
 * Processes whose command line names this test's workspace (its servers are given it as an argument): none may
 * outlive a run. Other test files' servers, running meanwhile, name other folders.
 */
function processesNaming(text: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
  return out.split('\n').filter((line) => line.includes(text) && !line.includes('ps -eo'))
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}

describe('lanes run with MCP servers', () => {
  const base = useTempDir('lanes-mcp-')
  let workspace: string
  let sessionsDir: string
  beforeEach(async () => {
    workspace = join(base(), 'ws')
    sessionsDir = join(base(), 'sessions')
    await mkdir(workspace)
    await mkdir(sessionsDir)
  })

  it('runs two read-only calls of the filesystem server side by side in the parallel lane, unasked', async () => {
    await writeFile(join(workspace, 'a.txt'), 'alpha\n')
    await writeFile(join(workspace, 'b.txt'), 'beta\n')
    const config = { mcpServers: { fs: { command: 'node', args: [FILESYSTEM_SERVER, workspace] } } }
    const { code, events, requests, stderr } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      turns: [
        {
          ...start('fs'),
          blocks: [
            { tool: 'mcp__fs__read_text_file', id: 'ra', input: { path: join(workspace, 'a.txt') } },
            { tool: 'mcp__fs__read_text_file', id: 'rb', input: { path: join(workspace, 'b.txt') } },
          ],
        },
        { blocks: [{ text: 'Read both.' }] },
      ],
    })
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(finished(events, 'ra')).toMatchObject({ isError: false, output: 'alpha\n' })
    expect(finished(events, 'rb')).toMatchObject({ isError: false, output: 'beta\n' })
    for (const id of ['ra', 'rb'])
      expect(queued(events, id)).toMatchObject({ safe: true, lane: { kind: 'parallel' }, server: 'fs' })
    expect(events.some((e) => e.type === 'approval.requested')).toBe(false)
    // Both were running at once: the second started before the first finished.
    const seq = (type: string, id: string) =>
      events.find((e) => e.type === type && 'callId' in e && e.callId === id)?.seq ?? -1
    expect(seq('tool.started', 'rb')).toBeLessThan(seq('tool.finished', 'ra'))
    // The second request offers the server's tools under their contract names, each valid for the API.
    const names = (requests[1]?.tools ?? []).map((t) => t.name)
    expect(names).toContain('mcp__fs__read_text_file')
    expect(names).toContain('mcp__fs__write_file')
    for (const name of names) expect(name).toMatch(TOOL_NAME)
    const ready = events.find((e) => e.type === 'mcp.server' && e.status === 'ready')
    expect(ready).toMatchObject({ server: 'fs', origin: 'user', sandboxed })
    expect(events.findLast((e) => e.type === 'mcp.server')).toMatchObject({ server: 'fs', status: 'stopped' })
    expect(processesNaming(workspace).join('\n')).toBe('')
  })

  it("asks for the filesystem server's write; --approve none rejects it and nothing is written", async () => {
    const config = { mcpServers: { fs: { command: 'node', args: [FILESYSTEM_SERVER, workspace] } } }
    const target = join(workspace, 'new.txt')
    const { code, events } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      args: ['--approve', 'none'],
      turns: [
        {
          ...start('fs'),
          blocks: [
            { tool: 'mcp__fs__write_file', id: 'w1', input: { path: target, content: 'no' } },
            { tool: 'mcp__fs__list_directory', id: 'l1', input: { path: workspace } },
          ],
        },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    expect(code).toBe(0)
    expect(queued(events, 'w1')).toMatchObject({ safe: false, lane: { kind: 'serial' }, server: 'fs' })
    const asked = events.find((e) => e.type === 'approval.requested' && e.callId === 'w1')
    expect(asked).toMatchObject({ preview: { kind: 'other' } })
    expect(JSON.stringify(asked)).toContain('may delete or overwrite')
    expect(finished(events, 'w1')).toMatchObject({ isError: true })
    expect(finished(events, 'w1')?.output).toContain('Rejected by the user')
    await expect(readFile(target)).rejects.toThrow(/ENOENT/)
  })

  it('approved (--approve all), the write lands; a failed write skips the later unsafe call', async () => {
    const config = { mcpServers: { t: { command: 'node', args: [TEST_SERVER] } } }
    const { code, events } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      args: ['--approve', 'all'],
      turns: [
        {
          ...start('t'),
          blocks: [
            { tool: 'mcp__t__write', id: 'w1', input: { name: 'out.txt', text: 'landed' } },
            { tool: 'mcp__t__write', id: 'w2', input: { name: 'no/such/dir/x.txt', text: 'x' } },
            { tool: 'mcp__t__wipe', id: 'w3', input: {} },
          ],
        },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    expect(code).toBe(0)
    expect(finished(events, 'w1')).toMatchObject({ isError: false, output: 'written' })
    expect(await readFile(join(workspace, 'out.txt'), 'utf8')).toBe('landed')
    expect(finished(events, 'w2')?.output).toContain('could not write: ENOENT')
    expect(events.find((e) => e.type === 'tool.skipped' && e.callId === 'w3')).toMatchObject({
      causeCallId: 'w2',
    })
  })

  it('a write paused for approval runs on --continue, the server started again for it', async () => {
    const config = { mcpServers: { t: { command: 'node', args: [TEST_SERVER] } } }
    const first = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      turns: [
        {
          ...start('t'),
          blocks: [
            { tool: 'mcp__t__write', id: 'w1', input: { name: 'later.txt', text: 'after the pause' } },
          ],
        },
      ],
    })
    expect(first.code).toBe(3)
    const sessionId = first.events.find((e) => e.type === 'session.created')?.sessionId as string
    await expect(readFile(join(workspace, 'later.txt'))).rejects.toThrow(/ENOENT/)
    // The call resumes the moment the session opens, while its server is still starting: it waits for it.
    const second = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      continueSession: sessionId,
      args: ['--approve', 'all'],
      turns: [{ blocks: [{ text: 'ok' }] }],
    })
    expect(second.stderr).toBe('')
    expect(second.code).toBe(0)
    expect(finished(second.events, 'w1')).toMatchObject({ isError: false, output: 'written' })
    expect(await readFile(join(workspace, 'later.txt'), 'utf8')).toBe('after the pause')
  })

  it('an error result carries the hint; images, links, resources and structured content come out readable', async () => {
    const config = { mcpServers: { t: { command: 'node', args: [TEST_SERVER] } } }
    const { events, requests } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      turns: [
        {
          ...start('t'),
          blocks: [
            { tool: 'mcp__t__fail', id: 'f1', input: {} },
            { tool: 'mcp__t__image', id: 'i1', input: {} },
            { tool: 'mcp__t__shapes', id: 's1', input: {} },
            { tool: 'mcp__t__wait', id: 'v1', input: { ms: 'soon' } },
          ],
        },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    const failed = finished(events, 'f1')
    expect(failed?.isError).toBe(true)
    expect(failed?.output).toMatch(/^the widget is broken\n\n\[HINT: /)
    expect(finished(events, 'i1')?.metadata).toMatchObject({
      server: 't',
      images: [{ mediaType: 'image/png' }],
    })
    const shapes = finished(events, 's1')?.output ?? ''
    expect(shapes).toContain('Resource link: a.md <file:///docs/a.md> (text/markdown): the docs')
    expect(shapes).toContain('Resource mem://x (text/plain):\nembedded text')
    expect(shapes).toContain('"answer": 42')
    expect(finished(events, 'v1')?.output).toMatch(/Invalid arguments for mcp__t__wait: .*number/)
    // The model gets the image as an image block of the tool_result.
    const results = requests[1]?.messages.at(-1)?.content as {
      tool_use_id: string
      content: unknown
    }[]
    const image = results.find((r) => r.tool_use_id === 'i1')
    expect(image?.content).toEqual([
      { type: 'text', text: 'a dot:\n\n[Image 1: image/png, 70 bytes]' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: expect.any(String) } },
    ])
  })

  it('a tool that claims to be read-only runs unasked, but its workspace is read-only in the sandbox', async () => {
    if (!sandboxed) return console.warn('skipped: no sandbox on this machine')
    // As the workspace's own server (trusted for this run), with its defaults: workspace read-only, no network.
    await writeFile(
      join(workspace, '.mcp.json'),
      JSON.stringify({ mcpServers: { t: { command: 'node', args: [TEST_SERVER] } } }),
    )
    const { events } = await runWithMcp({
      workspace,
      sessionsDir,
      args: ['--trust-project-mcp'],
      turns: [
        {
          ...start('t'),
          blocks: [
            { tool: 'mcp__t__note', id: 'n1', input: { text: 'sneaky' } },
            { tool: 'mcp__t__env', id: 'e1', input: {} },
          ],
        },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    expect(events.some((e) => e.type === 'approval.requested')).toBe(false)
    expect(finished(events, 'n1')?.output).toMatch(/could not write: EROFS/)
    await expect(readFile(join(workspace, 'note.txt'))).rejects.toThrow(/ENOENT/)
    const seen = JSON.parse(finished(events, 'e1')?.output ?? '{}') as Record<string, unknown>
    // A private HOME, the workspace as its folder, and none of the app's keys.
    expect(seen).toMatchObject({ home: '/tmp/home', cwd: workspace, secret: null })
  })

  it("never starts an untrusted workspace's server: nothing of its command runs", async () => {
    const marker = join(base(), 'ran')
    await writeFile(
      join(workspace, '.mcp.json'),
      JSON.stringify({ mcpServers: { evil: { command: 'touch', args: [marker] } } }),
    )
    const { code, events, stderr } = await runWithMcp({
      workspace,
      sessionsDir,
      turns: [{ blocks: [{ text: 'nothing to do' }] }],
    })
    expect(code).toBe(0)
    expect(events.find((e) => e.type === 'mcp.server')).toMatchObject({ server: 'evil', status: 'untrusted' })
    expect(stderr).toContain('--trust-project-mcp')
    await expect(readFile(marker)).rejects.toThrow(/ENOENT/)
  })

  it('a server that dies mid-call: the call gets an error, the server is started again and the run goes on', async () => {
    const config = { mcpServers: { t: { command: 'node', args: [TEST_SERVER, 'stdio', workspace] } } }
    const { code, events } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      turns: [
        { ...start('t'), blocks: [{ tool: 'mcp__t__crash', id: 'c1', input: {} }] },
        { ...start('t', 2), blocks: [{ tool: 'mcp__t__wait', id: 'w1', input: { ms: 1 } }] },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    expect(code).toBe(0)
    expect(finished(events, 'c1')).toMatchObject({ isError: true })
    expect(finished(events, 'c1')?.output).toContain('stopped while this call was running')
    const statuses = events.filter((e) => e.type === 'mcp.server').map((e) => e.status)
    expect(statuses).toEqual(['starting', 'ready', 'restarting', 'ready', 'stopped'])
    expect(finished(events, 'w1')).toMatchObject({ isError: false, output: 'waited 1 ms' })
    expect(processesNaming(workspace).join('\n')).toBe('')
  })

  it('an HTTP server (the everything server over streamable HTTP) is reached at its URL with its headers', async () => {
    const port = await freePort()
    const child = spawn(process.execPath, [EVERYTHING_SERVER, 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    try {
      await new Promise<void>((resolve, reject) => {
        child.stderr.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve())
        child.once('exit', () => reject(new Error('the HTTP server did not start')))
      })
      const url = `http://127.0.0.1:${port}/mcp`
      const config = { mcpServers: { web: { type: 'http', url, headers: { 'X-Lanes-Test': '1' } } } }
      const { code, events } = await runWithMcp({
        workspace,
        sessionsDir,
        config,
        turns: [
          {
            ...start('web'),
            blocks: [{ tool: 'mcp__web__echo', id: 'e1', input: { message: 'over http' } }],
          },
          { blocks: [{ text: 'ok' }] },
        ],
      })
      expect(code).toBe(0)
      expect(queued(events, 'e1')).toMatchObject({ server: 'web', safe: true })
      expect(finished(events, 'e1')?.output).toContain('over http')
    } finally {
      child.kill()
    }
  })

  it('a 1 MB answer reaches the model capped, with the whole of it kept in the session folder', async () => {
    const config = { mcpServers: { t: { command: 'node', args: [TEST_SERVER] } } }
    const { events } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      turns: [
        { ...start('t'), blocks: [{ tool: 'mcp__t__big', id: 'b1', input: { mb: 1 } }] },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    const capped = finished(events, 'b1')
    expect(capped?.output.length).toBeLessThan(31_000)
    expect(capped?.output).toContain('read it with read_file')
    expect(capped?.metadata).toMatchObject({ truncated: true, totalBytes: 1024 * 1024 })
    const kept = await readFile(String(capped?.metadata?.outputPath), 'utf8')
    expect(kept.length).toBe(1024 * 1024)
  })

  it('a capped answer holding a secret value: cut after redaction, and kept redacted in the session folder', async () => {
    const secret = 'sk-live-Mcp-Cap-5e4d3c2b'
    await writeFile(join(workspace, '.env'), `API_TOKEN=${secret}\n`)
    // The value straddles the cap (30,000 bytes), where the answer is cut for the model.
    await writeFile(join(workspace, 'wide.txt'), `${'x'.repeat(29_990)}${secret}${'y'.repeat(5000)}\n`)
    const config = { mcpServers: { t: { command: 'node', args: [TEST_SERVER] } } }
    const { events, requests } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      turns: [
        { ...start('t'), blocks: [{ tool: 'mcp__t__cat', id: 'c1', input: { path: 'wide.txt' } }] },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    const capped = finished(events, 'c1')
    expect(capped?.metadata).toMatchObject({ truncated: true })
    expect(JSON.stringify(requests)).not.toContain('sk-live-M')
    const kept = await readFile(String(capped?.metadata?.outputPath), 'utf8')
    expect(kept).not.toContain(secret)
    expect(kept).toContain('[secret from .env hidden]')
  })

  it('a server still starting never holds up the first model request, and is stopped with the run', async () => {
    const config = {
      mcpServers: {
        silent: { command: 'node', args: [TEST_SERVER, 'silent', workspace], lanes: { timeoutSec: 60 } },
      },
    }
    const started = Date.now()
    const { code, events } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      turns: [{ blocks: [{ text: 'done already' }] }],
    })
    expect(code).toBe(0)
    // The run is over long before the server's minute to start: nothing waited for it.
    expect(Date.now() - started).toBeLessThan(15_000)
    const statuses = events.filter((e) => e.type === 'mcp.server').map((e) => e.status)
    expect(statuses).toEqual(['starting', 'stopped'])
    expect(processesNaming(workspace).join('\n')).toBe('')
  })

  it('a malformed config names its line; a server that never answers initialize fails; the rest still start', async () => {
    const bad = join(sessionsDir, 'bad.json')
    await writeFile(bad, '{\n  "mcpServers": {\n    "x": { "command": "node" },\n  }\n}\n')
    const config = {
      mcpServers: {
        silent: { command: 'node', args: [TEST_SERVER, 'silent', workspace], lanes: { timeoutSec: 1 } },
        wrong: { command: 42 },
        t: { command: 'node', args: [TEST_SERVER, 'stdio', workspace] },
      },
    }
    const { code, events, stderr } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      args: ['--mcp-config', bad],
      turns: [
        // The run outlasts the silent server's 1 s initialize timeout, so it fails rather than being stopped with
        // the run (on a slow machine the run was over first).
        { ...start('t'), blocks: [{ tool: 'mcp__t__wait', id: 'w1', input: { ms: 3000 } }] },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    expect(code).toBe(0)
    expect(stderr).toContain(`${bad}: it is not valid JSON at line 4, column 3`)
    expect(stderr).toMatch(/server "wrong": "command": .*string/)
    const silent = events.find(
      (e) => e.type === 'mcp.server' && e.server === 'silent' && e.status === 'failed',
    )
    expect(silent?.type === 'mcp.server' && silent.message).toContain('did not answer within 1 s')
    expect(finished(events, 'w1')).toMatchObject({ isError: false })
    expect(processesNaming(workspace).join('\n')).toBe('')
  })

  it('names: sanitized, collisions told apart in a fixed order and reported; a bad schema is left out with its reason', async () => {
    const config = { mcpServers: { 'my.server': { command: 'node', args: [TEST_SERVER] } } }
    const { events, requests } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      turns: [
        { ...start('my.server'), blocks: [{ tool: 'mcp__my_server__same_name_2', id: 'n1', input: {} }] },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    const ready = events.find((e) => e.type === 'mcp.server' && e.status === 'ready')
    if (ready?.type !== 'mcp.server') throw new Error('not ready')
    const names = Object.fromEntries((ready.tools ?? []).map((t) => [t.tool, t.name]))
    expect(names['same.name']).toBe('mcp__my_server__same_name')
    expect(names['same_name']).toBe('mcp__my_server__same_name_2')
    expect(names['bad_schema']).toBeUndefined()
    expect(ready.problems).toEqual([
      expect.stringMatching(/"bad_schema" is left out: its input schema is not valid JSON Schema: .*banana/),
      expect.stringContaining('"same_name" is offered as mcp__my_server__same_name_2'),
    ])
    expect(queued(events, 'n1')).toMatchObject({ server: 'my.server', safe: true })
    for (const t of requests[1]?.tools ?? []) expect(t.name).toMatch(TOOL_NAME)
  })

  it('the everything server: echo and its tiny image through the pipeline', async () => {
    const config = { mcpServers: { every: { command: 'node', args: [EVERYTHING_SERVER, 'stdio'] } } }
    const { events } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      turns: [
        {
          ...start('every'),
          blocks: [
            { tool: 'mcp__every__echo', id: 'e1', input: { message: 'hello' } },
            { tool: 'mcp__every__get-tiny-image', id: 'i1', input: {} },
          ],
        },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    expect(queued(events, 'e1')).toMatchObject({ safe: true, lane: { kind: 'parallel' }, server: 'every' })
    expect(finished(events, 'e1')?.output).toContain('hello')
    expect(finished(events, 'i1')?.metadata).toMatchObject({ images: [{ mediaType: 'image/png' }] })
  })

  it('progress shows live; a flood of notifications stays bounded; a changed tool list is picked up', async () => {
    const config = { mcpServers: { t: { command: 'node', args: [TEST_SERVER] } } }
    const { events, requests } = await runWithMcp({
      workspace,
      sessionsDir,
      config,
      args: ['--approve', 'all'],
      turns: [
        { ...start('t'), blocks: [{ tool: 'mcp__t__progress', id: 'p1', input: {} }] },
        { blocks: [{ tool: 'mcp__t__grow', id: 'g1', input: {} }] },
        // Its new list is announced as the server's second ready state.
        { ...start('t', 2), blocks: [{ tool: 'mcp__t__grown', id: 'n1', input: {} }] },
        { blocks: [{ text: 'ok' }] },
      ],
    })
    const live = events.filter((e) => e.type === 'tool.output' && e.callId === 'p1')
    expect(live.map((e) => (e.type === 'tool.output' ? e.chunk : '')).join('')).toContain('step 3 (3/3)')
    expect(finished(events, 'p1')).toMatchObject({ isError: false, output: 'done' })
    expect(events.length).toBeLessThan(200)
    expect(finished(events, 'n1')).toMatchObject({ isError: false, output: 'I am new' })
    expect((requests[3]?.tools ?? []).map((t) => t.name)).toContain('mcp__t__grown')
  })
})
