import { expect, test, type Page } from '@playwright/test'
import { createHash } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { deflateSync } from 'node:zlib'
import { axeViolations, loadEvents, screenshots, sendTask, startAppWithModel } from './ui-support'

/**
 * Large and binary changes a newcomer can judge (issue 23, item 3): a 5 MB file replaced by 600 KB shows its true
 * sizes and line counts, its first and last lines and "open in full" (every line, paged as it scrolls); a PNG is
 * shown as an image, replaced or kept, never as text lines to edit, and lands byte for byte as reviewed; a call
 * too large to review fails in a sentence, on its card and for the model.
 */

const SIZES = [
  { width: 800, height: 600 },
  { width: 1440, height: 900 },
] as const

/** A real PNG: `size`x`size` pixels, a diagonal gradient, so the preview is visibly an image. */
function png(size: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    return c >>> 0
  })
  const crc = (b: Buffer): number => {
    let c = 0xffffffff
    for (const x of b) c = (crcTable[(c ^ x) & 0xff] as number) ^ (c >>> 8)
    return (c ^ 0xffffffff) >>> 0
  }
  const chunk = (type: string, data: Buffer): Buffer => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
    const out = Buffer.alloc(body.length + 8)
    out.writeUInt32BE(data.length, 0)
    body.copy(out, 4)
    out.writeUInt32BE(crc(body), body.length + 4)
    return out
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(size, 0)
  ihdr.writeUInt32BE(size, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // RGB
  const rows: number[] = []
  for (let y = 0; y < size; y++) {
    rows.push(0)
    for (let x = 0; x < size; x++) rows.push((x * 255) / size, (y * 255) / size, 160)
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.from(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

const num = (i: number): string => String(i + 1).padStart(6, '0')
// 100,000 lines of 50 bytes: 5 MB; 11,000 lines of 54 or 55 bytes: 599,500 bytes, "600 KB".
const OLD_BIG = Array.from({ length: 100_000 }, (_, i) => `old ${num(i)} ${'o'.repeat(38)}\n`).join('')
const NEW_BIG = Array.from({ length: 11_000 }, (_, i) => `new ${num(i)} ${'n'.repeat(43 - (i % 2))}\n`).join(
  '',
)
const OLD_LOGO = png(8)
const NEW_LOGO = png(48)
// Over the 1 MiB one call may carry: refused before anyone is asked.
const TOO_BIG = 'x'.repeat(1_100_000)

const scenario = {
  turns: [
    {
      blocks: [
        { text: 'Reading the data file and the logo.' },
        { tool: 'read_file', input: { path: 'data/big.txt', limit: 5 } },
        { tool: 'read_file', input: { path: 'assets/logo.png' } },
      ],
      stop: 'tool_use',
    },
    {
      blocks: [
        { text: 'Replacing the data file and the logo.' },
        { tool: 'write_file', input: { path: 'data/big.txt', content: NEW_BIG } },
        {
          tool: 'write_file',
          input: { path: 'assets/logo.png', content: NEW_LOGO.toString('base64'), encoding: 'base64' },
        },
        { tool: 'write_file', input: { path: 'data/huge.txt', content: TOO_BIG } },
      ],
      stop: 'tool_use',
    },
    { blocks: [{ text: 'Done.' }], stop: 'end_turn' },
  ],
}

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex')

async function rowsDrawn(page: Page): Promise<number> {
  return page.getByTestId('full-diff').locator('.full-diff-row').count()
}

test('a 5 MB file replaced by 600 KB, a PNG and a call too large to review, at 800x600 and 1440x900, light and dark', async ({
  page,
}) => {
  test.setTimeout(180_000)
  const { app, model, stop } = await startAppWithModel(
    { 'data/big.txt': OLD_BIG, 'assets/README.md': '# Logos\n' },
    scenario,
  )
  // Bytes, not text: written as they are.
  await writeFile(join(app.workspace, 'assets/logo.png'), OLD_LOGO)
  try {
    await page.setViewportSize(SIZES[0])
    await page.goto(app.url)
    await sendTask(page, 'Replace the data file and the logo')
    const panel = page.getByTestId('approval-panel')
    await expect(panel.getByTestId('approval-item')).toHaveCount(2, { timeout: 60_000 })
    const large = panel.getByTestId('approval-item').nth(0)
    const binary = panel.getByTestId('approval-item').nth(1)

    for (const size of SIZES) {
      await page.setViewportSize(size)
      const at = `${size.width}x${size.height}`

      // The large change: its true numbers, the ends of the new content, no parts to pick or edit.
      const summary = large.getByTestId('change-summary')
      await expect(summary).toHaveAttribute('data-show', 'large')
      await expect(summary.getByTestId('facts-before')).toHaveText('100,000 lines, 5 MB')
      await expect(summary.getByTestId('facts-after')).toHaveText('11,000 lines, 600 KB')
      await expect(summary.getByTestId('facts-lines')).toHaveText('11,000 added, 100,000 removed')
      await expect(summary.getByTestId('change-excerpt').first()).toContainText('new 000001 nnnn')
      await expect(summary.getByTestId('change-excerpt').last()).toContainText('new 011000 nnnn')
      await expect(summary.getByTestId('change-excerpt').last()).toContainText('10989')
      await expect(summary.getByTestId('change-whole-note')).toContainText('approve or reject it as a whole')
      await expect(large.getByTestId('hunk-edit')).toHaveCount(0)
      await expect(large.getByTestId('hunk-apply')).toHaveCount(0)

      // The PNG: an image, its facts, Replace or Keep, and nothing that edits its bytes as text.
      const png = binary.getByTestId('change-summary')
      await expect(png).toHaveAttribute('data-show', 'binary')
      await expect(png.getByTestId('facts-before')).toHaveText(`PNG image, ${OLD_LOGO.length} bytes`) // under 1 KB
      await expect(png.getByTestId('facts-after')).toHaveText(
        `PNG image, ${(NEW_LOGO.length / 1000).toFixed(1)} KB`,
      )
      const images = png.getByTestId('change-image')
      await expect(images).toHaveCount(2)
      await expect.poll(() => images.last().evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(48)
      await expect(binary.getByText('Edit this part')).toHaveCount(0)
      await expect(binary.locator('textarea.hunk-text, [data-testid=hunk-edit]')).toHaveCount(0)
      await expect(binary.getByTestId('approval-approve')).toContainText('Replace')
      await expect(binary.getByTestId('approval-reject')).toContainText('Keep')

      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        await page.waitForTimeout(100)
        expect(
          await axeViolations(page, ['[data-testid=approval-panel]']),
          `review at ${at}, ${scheme}`,
        ).toEqual([])
      }
      await page.emulateMedia({ colorScheme: null })
      await large.scrollIntoViewIfNeeded()
      await screenshots(page, `large-binary-review-${at}`)
      await binary.scrollIntoViewIfNeeded()
      await screenshots(page, `large-binary-png-${at}`)

      // Open in full: every line, drawn only where the user looks, loaded as it scrolls.
      await large.getByTestId('open-in-full').click()
      const full = page.getByTestId('full-diff')
      await expect(full.getByTestId('full-diff-total')).toContainText('111,001 diff lines')
      await expect(full.locator('.full-diff-row').first()).toContainText('@@ -1,100000 +1,11000 @@')
      expect(await rowsDrawn(page)).toBeLessThan(200)
      const scroller = full.locator('.full-diff-scroll')
      await scroller.evaluate((el) => (el.scrollTop = el.scrollHeight))
      await expect(full.locator('.full-diff-row.add').last()).toContainText('new 011000', { timeout: 10_000 })
      expect(await rowsDrawn(page)).toBeLessThan(200)
      await scroller.evaluate((el) => (el.scrollTop = el.scrollHeight / 2))
      await expect(full.locator('.full-diff-row.del').first()).toContainText('old 0', { timeout: 10_000 })
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme })
        await page.waitForTimeout(100)
        expect(
          await axeViolations(page, ['[data-testid=full-diff]']),
          `open in full at ${at}, ${scheme}`,
        ).toEqual([])
      }
      await page.emulateMedia({ colorScheme: null })
      await screenshots(page, `large-binary-full-${at}`)
      await page.keyboard.press('Escape')
      await expect(full).toHaveCount(0)
      // Escape closed the dialog and decided nothing.
      await expect(panel.getByTestId('approval-item')).toHaveCount(2)
    }

    // What was reviewed: the PNG's bytes as the preview showed them.
    const reviewed = await binary
      .getByTestId('change-image')
      .last()
      .evaluate((img: HTMLImageElement) => img.src)
    expect(Buffer.from(reviewed.split(',')[1] ?? '', 'base64').equals(NEW_LOGO)).toBe(true)

    await panel.getByTestId('approval-approve-all').click()
    await expect(page.getByTestId('run-end')).toHaveAttribute('data-status', 'finished', { timeout: 60_000 })

    // On disk: exactly the bytes reviewed, and the text in full.
    const logo = await readFile(join(app.workspace, 'assets/logo.png'))
    expect(logo.equals(NEW_LOGO)).toBe(true)
    const events = (await loadEvents(page)) as unknown as {
      type: string
      preview?: { path?: string; files?: { after: { sha256?: string } } }
    }[]
    const requested = events.filter((e) => e.type === 'approval.requested')
    expect(requested.find((e) => e.preview?.path === 'assets/logo.png')?.preview?.files?.after.sha256).toBe(
      sha(logo),
    )
    expect(await readFile(join(app.workspace, 'data/big.txt'), 'utf8')).toBe(NEW_BIG)

    // The call too large to review: a sentence on its card, named in words, and the same sentence for the model.
    const card = page.locator('[data-testid=tool-card][data-status=error][aria-label^="Write a file"]')
    await expect(card).toBeVisible()
    await expect(card.locator('.tool-card-title')).toHaveText('Write a file')
    await expect(card.getByTestId('failure-reason')).toContainText(
      'The agent sent a change in one piece (1.1 MB), too large for you to review, so Lanes did not run it.',
    )
    // What the user reads; the model's own words stay in the details.
    for (const part of ['.failure-what', '.failure-next'])
      await expect(card.locator(part)).not.toContainText(/write_file|Invalid arguments/)
    const requests = (await model.requests()) as { messages: { content: unknown }[] }[]
    const told = JSON.stringify(requests.at(-1)?.messages.at(-1)?.content)
    expect(told).toContain("Not run: this call's input is 1.1 MB")
    expect(told).toContain('too large for the user to review')
    expect(told).not.toContain('Invalid arguments for write_file')
    for (const size of SIZES) {
      await page.setViewportSize(size)
      await card.scrollIntoViewIfNeeded()
      await screenshots(page, `large-binary-too-big-${size.width}x${size.height}`)
    }
  } finally {
    await stop()
  }
})
