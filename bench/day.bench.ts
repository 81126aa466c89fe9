/// <reference lib="dom" />
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import type { SessionEvent, SessionEventDraft, SessionSummary } from '../src/shared/events'
import { openSessionWriter, readSession, readSessionPreview } from '../src/main/session/log'
import { forgetSessionSummaries, listSessions } from '../src/main/session/store'
import { median, result, sized, type Benchmark, type BenchResult } from './harness'
import { generateSession } from './ui/generate-session'
import { mockInitScript } from './ui/mock-api'
import { mockData } from './ui/preview'
import { benchRenderer, chromiumExecutable, serveDir } from './ui/renderer-server'

/**
 * A day of work (issue 21): a session of 100,000 events opens fast and stays small in the renderer, a folder
 * with 1,000 sessions lists fast, and appending to a long log costs what appending to a short one does.
 *
 * - First paint: from the moment `session:load` first answered (for a long log, the engine's preview of its last
 *   turns; the log's text in hand, parsed in the page as the real transport does) to the first frame painted with
 *   timeline bars and transcript rows; the same for a 100-event session alongside (the baseline), alternated,
 *   median of 3 each. The engine's own read for it is the figure before: the preview against the whole log.
 * - Renderer memory: the page's JavaScript heap after a forced collection, the 100k-event session open and
 *   scrubbed through, against the same for the 100-event session. (The DOM is virtualized, so the heap is what
 *   grows with the log.)
 * - Session list: the engine's `listSessions` over 1,000 real logs on disk (with the folder's index, as any listing
 *   but the very first one has it) plus the renderer's paint of the list (its rows in view: the list is
 *   virtualized), against the same for 10 sessions.
 * - Append: 2,000 appends, each awaited as the engine does (one fsync at the end, as a turn's end syncs), to a log that already holds 100,000
 *   events against the same appends to an empty log; and opening either for append (the writer reads only the
 *   log's tail).
 */

const BIG = sized(100_000, 2_000)
const SMALL = 100
const SESSIONS = sized(1_000, 20)
const APPENDS = sized(2_000, 50)
const RUNS = sized(5, 1)
const PAINT_RUNS = sized(3, 1)
/** What the renderer asks for first when it opens a session (app-store's PREVIEW_EVENTS). */
const PREVIEW_TAIL = sized(1000, 100)

async function openAndPaint(page: Page, url: string, events: string, log: string | null): Promise<number> {
  const data = mockData([], false)
  data.events = { 'bench-session': events }
  await page.addInitScript({ content: mockInitScript(data) })
  // The engine's answer to a preview request (session:load with `tail`), from the real log on disk: its JSON text,
  // parsed in the page as the transport's message would be.
  await page.exposeFunction('__lanesPreview', async (_id: string, tail: number) => {
    if (log === null) return null
    const preview = await readSessionPreview(log, tail)
    return preview.whole ? null : JSON.stringify({ events: preview.events })
  })
  await page.goto(url)
  await page.getByTestId('session-item').first().waitFor()
  return page.evaluate(async () => {
    document.querySelector<HTMLElement>('[data-testid=session-item]')?.click()
    const ready = ['[data-testid=tool-bar]', '[data-testid=transcript-row]']
    const painted = await new Promise<number>((resolve) => {
      const check = (): void => {
        if (!ready.every((selector) => document.querySelector(selector)))
          return void requestAnimationFrame(check)
        requestAnimationFrame(() => resolve(performance.now()))
      }
      requestAnimationFrame(check)
    })
    return painted - (window.__lanesMock.loadedAt ?? painted)
  })
}

/** The JS heap in use after a full collection, in MB. */
async function heapMb(page: Page): Promise<number> {
  const cdp = await page.context().newCDPSession(page)
  await cdp.send('HeapProfiler.enable')
  await cdp.send('HeapProfiler.collectGarbage')
  const { usedSize } = await cdp.send('Runtime.getHeapUsage')
  await cdp.detach()
  return usedSize / (1024 * 1024)
}

/**
 * Once the whole session is in (the replay's scrubber replaces the preview's note), scrubs the replay through ten
 * positions, so the heap holds what a look through the session builds.
 */
async function scrubThrough(page: Page): Promise<void> {
  await page.getByTestId('replay-scrubber').waitFor({ timeout: 120_000 })
  await page.evaluate(async () => {
    const scrubber = document.querySelector<HTMLInputElement>('[data-testid=replay-scrubber]')
    if (!scrubber) throw new Error('no replay scrubber')
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!
    for (let i = 1; i <= 10; i++) {
      setter.call(scrubber, String(Math.round((Number(scrubber.max) * i) / 10)))
      scrubber.dispatchEvent(new Event('input', { bubbles: true }))
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))
    }
  })
}

function summaries(n: number): SessionSummary[] {
  const at = 1_700_000_000_000
  return Array.from({ length: n }, (_, i) => ({
    sessionId: `2026-11-30T19-40-12-${String(i).padStart(3, '0')}Z-a1b2c3`,
    workspace: '/home/dev/project',
    title: `Task ${i}: add caching to the API routes and fix the failing tests`,
    createdAt: at - i * 60_000,
    updatedAt: at - i * 60_000 + 30_000,
    status: i % 7 === 0 ? 'failed' : i % 5 === 0 ? 'paused' : 'finished',
    eventCount: 200 + i,
  }))
}

/**
 * From `session:list` answered to the first frame with the list painted: it knows every session (`data-count`) and
 * shows the first ones (the rows out of view are not mounted). Then, outside the measurement, a check that the list
 * is whole: scrolled to its end, it shows the oldest session.
 */
async function listPaint(page: Page, url: string, sessions: SessionSummary[]): Promise<number> {
  const data = mockData([], false)
  data.sessions = sessions
  await page.addInitScript({ content: mockInitScript(data) })
  await page.goto(url)
  const ms = await page.evaluate(async (count) => {
    const painted = await new Promise<number>((resolve) => {
      const check = (): void => {
        const list = document.querySelector<HTMLElement>('[data-testid=session-list]')
        if (list?.dataset.count !== String(count) || !list.querySelector('[data-testid=session-item]'))
          return void requestAnimationFrame(check)
        requestAnimationFrame(() => resolve(performance.now()))
      }
      requestAnimationFrame(check)
    })
    return painted - (window.__lanesMock.listedAt ?? painted)
  }, sessions.length)
  const last = sessions[sessions.length - 1] as SessionSummary
  await page.getByTestId('session-list').evaluate((el) => (el.scrollTop = el.scrollHeight))
  await page.locator(`[data-session-id="${last.sessionId}"]`).waitFor({ timeout: 5000 })
  return ms
}

/** Real session logs on disk: `n` sessions of 60 events each, for `listSessions`. */
function writeSessionFolder(dir: string, n: number, events: SessionEvent[]): void {
  if (existsSync(join(dir, 'done'))) return
  mkdirSync(dir, { recursive: true })
  const head = events.slice(0, 59)
  const last = events.find((e) => e.type === 'run.finished') as SessionEvent
  for (const s of summaries(n)) {
    const lines = [...head, { ...last, seq: 59 }].map((e) =>
      JSON.stringify(e.type === 'session.created' ? { ...e, sessionId: s.sessionId } : e),
    )
    writeFileSync(join(dir, `${s.sessionId}.jsonl`), lines.join('\n') + '\n')
  }
  writeFileSync(join(dir, 'done'), '')
}

function draftOf(e: SessionEvent): SessionEventDraft {
  // The writer assigns seq and at.
  const { seq: _seq, at: _at, ...draft } = e as SessionEvent & { seq: number; at: number }
  return draft as SessionEventDraft
}

/** ms to open a log for append and ms per append (APPENDS appends, one sync), for a log holding `log`. */
async function appendTimes(
  dir: string,
  log: string | null,
  drafts: SessionEventDraft[],
): Promise<[number, number]> {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const id = '2026-11-30T19-40-12-000Z-a1b2c3'
  if (log) {
    // Made durable before the clock starts, as a session's log is: the copy's pages would otherwise still be dirty,
    // and the writer's one fdatasync would write the whole 100k-event log out inside the appends' time.
    copyFileSync(log, join(dir, `${id}.jsonl`))
    const fd = openSync(join(dir, `${id}.jsonl`), 'r+')
    fsyncSync(fd)
    closeSync(fd)
  }
  const t0 = performance.now()
  const writer = await openSessionWriter(dir, id, { create: log === null })
  const opened = performance.now() - t0
  const t1 = performance.now()
  // One at a time, as the engine appends (it waits for the log before every side effect).
  for (const draft of drafts) await writer.append(draft)
  await writer.sync()
  const perAppend = (performance.now() - t1) / drafts.length
  await writer.close()
  return [opened, perAppend]
}

async function run(cacheDir: string): Promise<BenchResult[]> {
  const bigFile = join(cacheDir, `session-${BIG}.json`)
  if (!existsSync(bigFile)) writeFileSync(bigFile, JSON.stringify(generateSession({ events: BIG })))
  const bigJson = readFileSync(bigFile, 'utf8')
  const bigEvents = JSON.parse(bigJson) as SessionEvent[]
  const smallEvents = generateSession({ events: SMALL })
  const smallJson = JSON.stringify(smallEvents)
  const results: BenchResult[] = []

  // Append: the engine's writer on real files.
  const bigLog = join(cacheDir, `session-${BIG}.jsonl`)
  if (!existsSync(bigLog)) writeFileSync(bigLog, bigEvents.map((e) => JSON.stringify(e)).join('\n') + '\n')
  // Events a live run appends: not the session's first, which only a new log takes.
  const drafts = bigEvents.slice(2, 2 + APPENDS).map(draftOf)
  const opens: [number[], number[]] = [[], []]
  const appends: [number[], number[]] = [[], []]
  for (let i = 0; i < RUNS; i++) {
    for (const [k, log] of [
      [0, bigLog],
      [1, null],
    ] as const) {
      const [opened, perAppend] = await appendTimes(join(cacheDir, 'append'), log, drafts)
      opens[k].push(opened)
      appends[k].push(perAppend)
    }
  }
  results.push(
    result(`day: append per event, ${BIG / 1000}k-event log`, median(appends[0]), median(appends[1]), 'ms', {
      maxRatio: 1.25,
      text: 'ratio <= 1.25, O(1) per event (baseline: the same appends to a new log)',
    }),
  )
  results.push(
    result(`day: open a ${BIG / 1000}k-event log for append`, median(opens[0]), median(opens[1]), 'ms', {
      maxValue: 50,
      text: 'value < 50 ms, reads only the tail (baseline: creating a new log)',
    }),
  )

  // Opening: the engine's read of the log for the first paint (a preview: its last turns) against its read of the
  // whole log, which follows.
  const previewReads: number[] = []
  const wholeReads: number[] = []
  for (let i = 0; i < RUNS; i++) {
    let t0 = performance.now()
    const preview = await readSessionPreview(bigLog, PREVIEW_TAIL)
    previewReads.push(performance.now() - t0)
    if (preview.whole || preview.events.length < PREVIEW_TAIL) throw new Error('the preview is not one')
    t0 = performance.now()
    await readSession(bigLog)
    wholeReads.push(performance.now() - t0)
  }
  results.push(
    result(
      `day: engine reads a ${BIG / 1000}k-event log to open it`,
      median(previewReads),
      median(wholeReads),
      'ms',
      { maxRatio: 0.5, text: 'ratio <= 0.5, the preview first (baseline: reading the whole log)' },
    ),
  )

  // The session list: the engine's listing of real logs, then the renderer's paint.
  const manyDir = join(cacheDir, `sessions-${SESSIONS}`)
  const fewDir = join(cacheDir, 'sessions-10')
  writeSessionFolder(manyDir, SESSIONS, bigEvents)
  writeSessionFolder(fewDir, 10, bigEvents)
  const listMany: number[] = []
  const listFew: number[] = []
  for (let i = 0; i < RUNS; i++) {
    for (const [list, dir, n] of [
      [listMany, manyDir, SESSIONS],
      [listFew, fewDir, 10],
    ] as const) {
      // A first listing in a new process each time: the engine forgets what it kept in memory, and has the
      // folder's index on disk (sessions-index.json, written by the first listing) as a started app has.
      forgetSessionSummaries()
      const t0 = performance.now()
      const listed = await listSessions(dir)
      list.push(performance.now() - t0)
      if (listed.length !== n) throw new Error(`listed ${listed.length} sessions of ${n}`)
    }
  }

  const server = await serveDir(await benchRenderer(cacheDir))
  const browser: Browser = await chromium.launch({
    executablePath: chromiumExecutable(),
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  })
  try {
    const newPage = async (): Promise<Page> => {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
      page.on('pageerror', (e) => process.stderr.write(`day bench page error: ${e.message}\n`))
      return page
    }
    const paintMany: number[] = []
    const paintFew: number[] = []
    for (let i = 0; i < RUNS; i++) {
      for (const [list, n] of [
        [paintMany, SESSIONS],
        [paintFew, 10],
      ] as const) {
        const page = await newPage()
        list.push(await listPaint(page, server.url, summaries(n)))
        await page.close()
      }
    }
    results.push(
      result(
        `day: session list of ${SESSIONS.toLocaleString('en')} sessions, listed and painted`,
        median(listMany) + median(paintMany),
        median(listFew) + median(paintFew),
        'ms',
        { maxValue: 300, text: 'value < 300 ms (baseline: 10 sessions)' },
      ),
    )
    process.stderr.write(
      `  session list: engine ${median(listMany).toFixed(1)} ms + paint ${median(paintMany).toFixed(1)} ms\n`,
    )

    const big: number[] = []
    const tiny: number[] = []
    const heaps: [number[], number[]] = [[], []]
    for (let i = 0; i < PAINT_RUNS; i++) {
      for (const [k, list, json, log] of [
        [0, big, bigJson, bigLog],
        [1, tiny, smallJson, null],
      ] as const) {
        const page = await newPage()
        list.push(await openAndPaint(page, server.url, json, log))
        await scrubThrough(page)
        heaps[k].push(await heapMb(page))
        await page.close()
      }
    }
    results.push(
      result(`day: first paint of a ${BIG / 1000}k-event session`, median(big), median(tiny), 'ms', {
        maxValue: 500,
        text: `value < 500 ms (baseline: a ${SMALL}-event session)`,
      }),
    )
    results.push(
      result(
        `day: renderer JS heap, ${BIG / 1000}k-event session`,
        median(heaps[0]),
        median(heaps[1]),
        'MB',
        {
          maxValue: 300,
          text: `value < 300 MB after a scrub through it (baseline: a ${SMALL}-event session)`,
        },
      ),
    )
  } finally {
    await browser.close()
    await server.close()
  }
  return results
}

export const benchmarks: Benchmark[] = [{ name: 'day', run }]
