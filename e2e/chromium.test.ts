import { spawnSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const tsx = join(import.meta.dirname, '..', 'node_modules', 'tsx', 'dist', 'cli.mjs')
const check = join(import.meta.dirname, 'check-chromium.ts')

describe('the pretest Chromium check', () => {
  it('stops with one line saying how to install Chromium when there is none', () => {
    const emptyDir = mkdtempSync(join(tmpdir(), 'lanes-no-chromium-'))
    const result = spawnSync(process.execPath, [tsx, check], {
      encoding: 'utf8',
      env: { PATH: emptyDir, PLAYWRIGHT_BROWSERS_PATH: emptyDir, HOME: emptyDir },
    })
    expect(result.status).toBe(1)
    const lines = result.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('apt install chromium')
  })

  it('passes when a Chromium is given', () => {
    const result = spawnSync(process.execPath, [tsx, check], {
      encoding: 'utf8',
      env: { ...process.env, CHROMIUM_PATH: process.execPath },
    })
    expect(result.status).toBe(0)
  })
})
