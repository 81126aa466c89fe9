import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { useTempDir } from '../test-fixtures/temp-dir'
import { loadMcpConfigs, parseMcpConfig } from './config'
import { assignToolNames, TOOL_NAME } from './names'
import { trustKey } from './trust'

describe('parseMcpConfig', () => {
  it('reads stdio and http servers, with the permissions of their origin under their lanes key', () => {
    const text = JSON.stringify({
      mcpServers: {
        files: { command: 'node', args: ['server.js'], env: { A: '1' } },
        remote: { type: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' } },
        open: { command: 'srv', lanes: { network: true, workspace: 'none', timeoutSec: 5 } },
      },
    })
    const { servers, problems } = parseMcpConfig(text, '.mcp.json', 'workspace')
    expect(problems).toEqual([])
    expect(servers).toEqual([
      expect.objectContaining({
        name: 'files',
        kind: 'stdio',
        args: ['server.js'],
        env: { A: '1' },
        permissions: { workspace: 'read-only', network: false, timeoutSec: 60 },
      }),
      expect.objectContaining({ name: 'remote', kind: 'http', headers: { Authorization: 'Bearer x' } }),
      expect.objectContaining({
        name: 'open',
        permissions: { workspace: 'none', network: true, timeoutSec: 5 },
      }),
    ])
    const user = parseMcpConfig(text, 'mine.json', 'user').servers[0]
    expect(user?.permissions).toEqual({ workspace: 'read-write', network: true, timeoutSec: 60 })
  })

  it('names the line and column of a file that is not JSON', () => {
    const text = '{\n  "mcpServers": {\n    "a": {"command": "x"}\n    "b": {}\n  }\n}'
    const { servers, problems } = parseMcpConfig(text, 'f.json', 'user')
    expect(servers).toEqual([])
    expect(problems[0]?.message).toMatch(/^it is not valid JSON at line 4, column 5: /)
  })

  it('keeps the good entries when one is wrong, and says which and why', () => {
    const text = JSON.stringify({
      mcpServers: {
        good: { command: 'node' },
        noCommand: { args: [] },
        badUrl: { type: 'http', url: 'file:///etc/passwd' },
        badLanes: { command: 'x', lanes: { workspace: 'everything' } },
      },
    })
    const { servers, problems } = parseMcpConfig(text, 'f.json', 'user')
    expect(servers.map((s) => s.name)).toEqual(['good'])
    expect(problems.map((p) => p.server)).toEqual(['noCommand', 'badUrl', 'badLanes'])
    expect(problems[0]?.message).toMatch(/^"command": /)
    expect(problems[2]?.message).toMatch(/^"lanes.workspace": /)
  })

  it('refuses a file without an mcpServers object', () => {
    expect(parseMcpConfig('[]', 'f.json', 'user').problems[0]?.message).toContain('no "mcpServers" object')
  })
})

describe('loadMcpConfigs', () => {
  const dir = useTempDir('lanes-mcp-config-')
  it("keeps the user's server when the workspace uses the same name", async () => {
    const workspace = join(dir(), 'ws')
    await mkdir(workspace)
    await writeFile(join(workspace, '.mcp.json'), JSON.stringify({ mcpServers: { a: { command: 'evil' } } }))
    const mine = join(dir(), 'mine.json')
    await writeFile(mine, JSON.stringify({ mcpServers: { a: { command: 'good' } } }))
    const { servers, problems } = await loadMcpConfigs({ workspace, userFiles: [mine] })
    expect(servers).toEqual([expect.objectContaining({ name: 'a', command: 'good', origin: 'user' })])
    expect(problems[0]?.message).toContain('already used')
  })

  it('refuses a configuration over 1 MiB without reading it', async () => {
    const big = join(dir(), 'big.json')
    await writeFile(big, ' '.repeat(1024 * 1024 + 1))
    const { problems } = await loadMcpConfigs({ workspace: dir(), userFiles: [big] })
    expect(problems[0]?.message).toContain('at most 1 MiB')
  })

  it('a workspace without .mcp.json has no servers and no problems; a named file that is missing is one', async () => {
    const missing = join(dir(), 'nope.json')
    const { servers, problems } = await loadMcpConfigs({ workspace: dir(), userFiles: [missing] })
    expect(servers).toEqual([])
    expect(problems).toEqual([expect.objectContaining({ source: missing })])
  })
})

describe('tool names', () => {
  it('sanitizes to the API pattern and cuts long names with a hash, still apart', () => {
    const long = 'x'.repeat(80)
    const { names } = assignToolNames(
      [
        { server: 'my server!', tool: 'do.it' },
        { server: 's', tool: `${long}1` },
        { server: 's', tool: `${long}2` },
        { server: 'ü', tool: 'ok' },
      ],
      new Set(),
    )
    const all = [...names.values()]
    expect(names.get('my server!\0do.it')).toBe('mcp__my_server___do_it')
    for (const name of all) expect(name).toMatch(TOOL_NAME)
    expect(new Set(all).size).toBe(4)
  })

  it('settles collisions the same way whatever order the servers list them in, and reports them', () => {
    const tools = [
      { server: 'a.b', tool: 't' },
      { server: 'a_b', tool: 't' },
      { server: 'a-b', tool: 't' },
    ]
    const one = assignToolNames(tools, new Set())
    const two = assignToolNames([...tools].reverse(), new Set())
    expect([...one.names.entries()].sort()).toEqual([...two.names.entries()].sort())
    expect(one.names.get('a.b\0t')).toBe('mcp__a_b__t')
    expect(one.names.get('a_b\0t')).toBe('mcp__a_b__t_2')
    expect(one.renamed.map((r) => r.server)).toEqual(['a_b'])
  })
})

describe('trustKey', () => {
  const base = parseMcpConfig(
    JSON.stringify({ mcpServers: { s: { command: 'node', args: ['a.js'], env: { K: 'v' } } } }),
    '.mcp.json',
    'workspace',
  ).servers[0]!
  it('changes with the command, an argument, the environment or the permissions, never with the name', () => {
    const key = trustKey(base)
    expect(trustKey({ ...base, name: 'other' })).toBe(key)
    expect(trustKey({ ...base, command: 'nodejs' } as typeof base)).not.toBe(key)
    expect(trustKey({ ...base, args: ['a.js', '--x'] } as typeof base)).not.toBe(key)
    expect(trustKey({ ...base, env: { K: 'w' } } as typeof base)).not.toBe(key)
    expect(trustKey({ ...base, permissions: { ...base.permissions, network: true } })).not.toBe(key)
  })
})
