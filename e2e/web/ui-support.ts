import type { Locator, Page } from '@playwright/test'
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { endChild, firstLine, lanesBin, startWebApp, type WebApp } from '../fixtures'

/** Helpers of the UI specs (ui-*.spec.ts): a scripted model, the app pointed at it, screenshots. */

export interface ScriptedModel {
  baseUrl: string
  /** Every request body the model received, in order (the `--record` file). */
  requests(): Promise<unknown[]>
  stop(): Promise<void>
}

/** Starts `lanes fake-model` on a scenario (DESIGN 9) written to a temp file, recording what it is sent. */
export async function startScriptedModel(scenario: unknown): Promise<ScriptedModel> {
  const dir = await mkdtemp(join(tmpdir(), 'lanes-ui-model-'))
  const scenarioFile = join(dir, 'scenario.json')
  const recordFile = join(dir, 'record.jsonl')
  await writeFile(scenarioFile, JSON.stringify(scenario))
  const child = spawn(
    process.execPath,
    [lanesBin, 'fake-model', '--scenario', scenarioFile, '--port', '0', '--record', recordFile],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const baseUrl = await firstLine(child, 'lanes fake-model')
  return {
    baseUrl: baseUrl.trim(),
    async requests() {
      const text = await readFile(recordFile, 'utf8').catch(() => '')
      return text
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as unknown)
    },
    async stop() {
      await endChild(child, 'lanes fake-model')
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** The app in browser mode on a fresh workspace, talking to a scripted model. */
export async function startAppWithModel(
  files: Record<string, string>,
  scenario: unknown,
  env: Record<string, string> = {},
): Promise<{ app: WebApp; model: ScriptedModel; stop(): Promise<void> }> {
  const model = await startScriptedModel(scenario)
  const { app, stop } = await startWebApp(files, {
    ANTHROPIC_BASE_URL: model.baseUrl,
    ANTHROPIC_API_KEY: 'sk-ant-test-ui-0000',
    ...env,
  })
  return {
    app,
    model,
    async stop() {
      try {
        await stop()
      } finally {
        await model.stop()
      }
    },
  }
}

/** Sets a settings value through the same channel the settings screen uses. */
export async function setSettings(page: Page, update: Record<string, unknown>): Promise<void> {
  const result = await page.evaluate(
    (u) => (window.api.invoke as (c: string, i: unknown) => Promise<unknown>)('settings:set', u),
    update,
  )
  if (!(result as { ok: boolean }).ok) throw new Error(`settings:set failed: ${JSON.stringify(result)}`)
}

/** Types a task and sends it with Enter, as a user would. */
export async function sendTask(page: Page, task: string): Promise<void> {
  await page.getByTestId('composer-input').fill(task)
  await page.getByTestId('composer-input').press('Enter')
}

/** A range input cannot be `fill`ed: set its value the way a drag does and let React see the input event. */
export async function setRange(input: Locator, value: number): Promise<void> {
  await input.evaluate((el, v) => {
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')?.set
    setter?.call(el, String(v))
    el.dispatchEvent(new Event('input', { bubbles: true }))
  }, value)
}

/** Screenshots in light and dark (kept as artifacts under e2e/output/screenshots). */
export async function screenshots(page: Page, name: string): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    await page.waitForTimeout(100)
    await page.screenshot({ path: `e2e/output/screenshots/${name}-${scheme}.png` })
  }
  await page.emulateMedia({ colorScheme: null })
}

/** The session's events as the renderer loads them, for checks against what is on screen. */
export async function loadEvents(page: Page): Promise<{ type: string; at: number; callId?: string }[]> {
  return page.evaluate(async () => {
    const id = new URLSearchParams(location.hash.slice(1)).get('session')
    if (!id) throw new Error('no session open')
    const result = await window.api.invoke('session:load', { sessionId: id })
    if (!result.ok) throw new Error(result.error)
    return result.value.events as { type: string; at: number; callId?: string }[]
  })
}

/** axe-core's colour-contrast check (WCAG AA) on the page as it is: the violations, one line each. */
export async function contrastViolations(page: Page): Promise<string[]> {
  return runAxe(page, null, { runOnly: { type: 'rule', values: ['color-contrast'] } })
}

/**
 * Every axe-core rule of WCAG 2 A and AA (names, roles, focusable content, contrast...) on the parts of the page
 * matched by `include` (CSS selectors), as they are now: the violations, one line each.
 */
export async function axeViolations(page: Page, include: string[]): Promise<string[]> {
  return runAxe(page, include, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa'] } })
}

async function runAxe(page: Page, include: string[] | null, options: unknown): Promise<string[]> {
  // Evaluated rather than added as a script tag: the app's CSP (rightly) refuses inline scripts.
  axeSource ??= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource)
  return page.evaluate(
    async ({ include, options }) => {
      const axe = (window as unknown as { axe: { run(c: unknown, o: unknown): Promise<AxeResults> } }).axe
      const context = include === null ? document : { include: include.map((s) => [s]) }
      const results = await axe.run(context, options)
      return results.violations.flatMap((v) =>
        v.nodes.map(
          (n) => `${v.id} ${n.target.join(' ')}: ${n.failureSummary?.split('\n').slice(1).join(' ') ?? ''}`,
        ),
      )
    },
    { include, options },
  )
}

interface AxeResults {
  violations: { id: string; nodes: { target: string[]; failureSummary?: string }[] }[]
}

let axeSource: string | undefined
