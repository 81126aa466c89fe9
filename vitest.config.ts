import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'e2e/chromium.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests spawn real processes and write real files; two cores are all CI has.
    pool: 'forks',
    maxWorkers: 2,
  },
})
