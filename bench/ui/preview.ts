import { chromium } from 'playwright-core'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateSession } from './generate-session'
import { mockInitScript, type MockData } from './mock-api'
import { buildRenderer, chromiumExecutable, serveDir } from './renderer-server'

/**
 * Screenshots of the real renderer on a generated session, light and dark, without a server:
 * `npx tsx bench/ui/preview.ts [outDir]`. For looking at the UI while the engine is not there.
 */
export function mockData(events: ReturnType<typeof generateSession>, live = false): MockData {
  return {
    workspace: { path: '/home/dev/project', name: 'project' },
    sessions: [
      {
        sessionId: 'bench-session',
        workspace: '/home/dev/project',
        title: 'Add caching to the API routes and fix the failing tests',
        createdAt: events[0]?.at ?? 0,
        updatedAt: events[events.length - 1]?.at ?? 0,
        status: live ? 'paused' : 'finished',
        eventCount: events.length,
      },
    ],
    events: { 'bench-session': events },
    live,
    settings: {
      model: 'claude-sonnet-4-5',
      baseUrl: null,
      scheduler: 'streaming',
      siblingSkip: true,
      autoApproveEdits: false,
      bashTimeoutSec: 180,
      thinking: 'adaptive',
      compactAtTokens: null,
      apiKey: { source: 'none', masked: null, storage: 'file', file: null },
      demo: true,
      mcpServers: [],
    },
  }
}

async function main(): Promise<void> {
  const out = process.argv[2] ?? 'e2e/output/screenshots'
  const dir = await mkdtemp(join(tmpdir(), 'lanes-ui-'))
  await buildRenderer(dir)
  const server = await serveDir(dir)
  const browser = await chromium.launch({ executablePath: chromiumExecutable(), args: ['--no-sandbox'] })
  try {
    for (const [name, events, live] of [
      ['preview-finished', generateSession({ events: 260 }), false],
      ['preview-paused', generateSession({ events: 200, endPaused: true }), true],
    ] as const) {
      for (const scheme of ['light', 'dark'] as const) {
        const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, colorScheme: scheme })
        page.on('pageerror', (e) => console.error('pageerror', e))
        page.on('console', (m) => m.type() === 'error' && console.error('console', m.text()))
        await page.addInitScript({ content: mockInitScript(mockData(events, live)) })
        await page.goto(server.url)
        await page.getByTestId('session-item').first().click()
        await page.getByTestId('timeline').waitFor()
        await page.waitForTimeout(400)
        await page.screenshot({ path: join(out, `${name}-${scheme}.png`) })
        await page.close()
      }
    }
  } finally {
    await browser.close()
    await server.close()
    await rm(dir, { recursive: true, force: true })
  }
}

if (process.argv[1]?.endsWith('preview.ts')) await main()
