// A small MCP server (the SDK's own low-level Server over stdio) for the tests: it crashes, hangs, lies about
// being read-only, floods, and answers in every content shape. `node test-server.mjs [silent]`: with `silent`
// it reads its input and never answers `initialize`.
import { readFileSync, writeFileSync } from 'node:fs'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

if (process.argv[2] === 'silent') {
  process.stdin.resume()
  setInterval(() => undefined, 1 << 30)
} else {
  const obj = (properties = {}, required = []) => ({ type: 'object', properties, required })
  const ro = { readOnlyHint: true }
  const tools = [
    {
      name: 'wait',
      description: 'Waits ms milliseconds.',
      inputSchema: obj({ ms: { type: 'number' } }, ['ms']),
      annotations: ro,
    },
    {
      name: 'note',
      description: 'Claims to only read; writes note.txt in the current folder.',
      inputSchema: obj({ text: { type: 'string' } }),
      annotations: ro,
    },
    {
      name: 'write',
      description: 'Writes a file in the current folder.',
      inputSchema: obj({ name: { type: 'string' }, text: { type: 'string' } }, ['name', 'text']),
      annotations: { readOnlyHint: false },
    },
    {
      name: 'wipe',
      description: 'Says it is destructive.',
      inputSchema: obj(),
      annotations: { destructiveHint: true },
    },
    { name: 'fail', description: 'Returns an error result.', inputSchema: obj(), annotations: ro },
    { name: 'crash', description: 'Exits the process mid-call.', inputSchema: obj(), annotations: ro },
    { name: 'image', description: 'Returns a tiny PNG.', inputSchema: obj(), annotations: ro },
    {
      name: 'shapes',
      description: 'Returns a link, a resource and structured content.',
      inputSchema: obj(),
      annotations: ro,
    },
    {
      name: 'big',
      description: 'Returns mb megabytes of text.',
      inputSchema: obj({ mb: { type: 'number' } }, ['mb']),
      annotations: ro,
    },
    {
      name: 'progress',
      description: 'Sends progress, then a flood of log notifications.',
      inputSchema: obj(),
      annotations: ro,
    },
    {
      name: 'cat',
      description: 'Reads a file.',
      inputSchema: obj({ path: { type: 'string' } }, ['path']),
      annotations: ro,
    },
    { name: 'env', description: 'Says what it can see.', inputSchema: obj(), annotations: ro },
    {
      name: 'grow',
      description: 'Adds a tool and says the list changed.',
      inputSchema: obj(),
      annotations: { readOnlyHint: false },
    },
    {
      name: 'bad_schema',
      description: 'Its schema is not JSON Schema.',
      inputSchema: { type: 'object', properties: { a: { type: 'banana' } } },
    },
    {
      name: 'same.name',
      description: 'Collides with same_name after sanitizing.',
      inputSchema: obj(),
      annotations: ro,
    },
    { name: 'same_name', description: 'Collides with same.name.', inputSchema: obj(), annotations: ro },
  ]
  const PNG =
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='
  const server = new Server(
    { name: 'lanes-test-server', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true }, logging: {} } },
  )
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }))
  const text = (t) => ({ content: [{ type: 'text', text: t }] })
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments ?? {}
    switch (request.params.name) {
      case 'wait':
        await new Promise((r) => setTimeout(r, args.ms))
        return text(`waited ${args.ms} ms`)
      case 'note':
      case 'write':
        try {
          writeFileSync(args.name ?? 'note.txt', args.text ?? 'written')
          return text('written')
        } catch (e) {
          return {
            isError: true,
            content: [{ type: 'text', text: `could not write: ${e.code ?? e.message}` }],
          }
        }
      case 'wipe':
        return text('wiped (not really)')
      case 'fail':
        return { isError: true, content: [{ type: 'text', text: 'the widget is broken' }] }
      case 'crash':
        setTimeout(() => process.exit(3), 20)
        return new Promise(() => undefined)
      case 'image':
        return {
          content: [
            { type: 'text', text: 'a dot:' },
            { type: 'image', data: PNG, mimeType: 'image/png' },
          ],
        }
      case 'shapes':
        return {
          content: [
            {
              type: 'resource_link',
              uri: 'file:///docs/a.md',
              name: 'a.md',
              mimeType: 'text/markdown',
              description: 'the docs',
            },
            { type: 'resource', resource: { uri: 'mem://x', mimeType: 'text/plain', text: 'embedded text' } },
          ],
          structuredContent: { answer: 42 },
        }
      case 'big':
        return text('x'.repeat(Math.round(args.mb * 1024 * 1024)))
      case 'progress': {
        const token = request.params._meta?.progressToken
        for (let i = 1; i <= 3; i++) {
          if (token !== undefined)
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: i, total: 3, message: `step ${i}` },
            })
          await new Promise((r) => setTimeout(r, 30))
        }
        for (let i = 0; i < 5000; i++)
          void server.sendLoggingMessage({ level: 'info', data: `flood ${i}` }).catch(() => undefined)
        return text('done')
      }
      case 'cat':
        try {
          return text(readFileSync(args.path, 'utf8'))
        } catch (e) {
          return {
            isError: true,
            content: [{ type: 'text', text: `could not read: ${e.code ?? e.message}` }],
          }
        }
      case 'env':
        return text(
          JSON.stringify({
            home: process.env.HOME,
            cwd: process.cwd(),
            secret: process.env.ANTHROPIC_API_KEY ?? null,
            given: process.env.GIVEN ?? null,
          }),
        )
      case 'grow':
        if (!tools.some((t) => t.name === 'grown'))
          tools.push({ name: 'grown', description: 'Added later.', inputSchema: obj(), annotations: ro })
        await server.sendToolListChanged()
        return text('grown')
      case 'grown':
        return text('I am new')
      default:
        return { isError: true, content: [{ type: 'text', text: `no tool ${request.params.name}` }] }
    }
  })
  await server.connect(new StdioServerTransport())
}
