import { configDefaults, defineConfig } from 'vitest/config'

/**
 * Two projects: `unit` (every other test) and `slow` (`*.slow.test.ts`: the 1 GB pty flood, the 100
 * SIGKILLed agent runs and `lanes web` processes taken down while a command runs; minutes on two cores).
 * `npm test` runs both; a developer runs `npm run test:unit` while working. A file named on the command line
 * runs in whichever project holds it.
 */
export default defineConfig({
  test: {
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests spawn real processes and write real files; two cores are all CI has.
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'scripts/**/*.test.ts', 'e2e/chromium.test.ts'],
          exclude: [...configDefaults.exclude, 'src/**/*.slow.test.ts'],
        },
      },
      { extends: true, test: { name: 'slow', include: ['src/**/*.slow.test.ts'] } },
    ],
  },
})
