// `npm test` starts here (pretest): without a Chromium the browser tests could only fail one by one at the end,
// so it stops at once with one line saying how to get one.
import { chromium } from '@playwright/test'
import { missingChromium } from './chromium'

let bundled: string | undefined
try {
  bundled = chromium.executablePath()
} catch {
  // Playwright does not know a browser for this platform.
}
const problem = missingChromium(bundled)
if (problem !== null) {
  console.error(problem)
  process.exit(1)
}
