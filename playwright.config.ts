import { defineConfig } from '@playwright/test'
import { chromiumExecutable } from './e2e/chromium'

// Browser mode runs in a real Chromium: $CHROMIUM_PATH, then `chromium` on the PATH, then Playwright's own.
// The electron project drives the real app where an Electron binary exists and skips itself otherwise.
export default defineConfig({
  testDir: 'e2e',
  outputDir: 'e2e/output/test-results',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: process.env.CI ? [['list']] : [['list']],
  use: {
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
    // A click that cannot happen fails in 15 s saying what covers its target, instead of eating the test's minute.
    actionTimeout: 15_000,
  },
  projects: [
    {
      name: 'web',
      testMatch: /web\/.*\.spec\.ts$/,
      use: {
        browserName: 'chromium',
        launchOptions: {
          executablePath: chromiumExecutable(),
          args: [
            '--no-sandbox',
            '--disable-gpu',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
            '--no-first-run',
          ],
        },
      },
    },
    {
      name: 'electron',
      testMatch: /electron\/.*\.spec\.ts$/,
    },
  ],
})
