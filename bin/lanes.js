#!/usr/bin/env node
// The `lanes` command runs the built engine (out/main/cli.js, made by `npm run build`).
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const cli = new URL('../out/main/cli.js', import.meta.url)
if (!existsSync(fileURLToPath(cli))) {
  process.stderr.write('lanes: the app is not built yet. Run `npm run build` first.\n')
  process.exit(1)
}
const { main } = await import(cli.href)
process.exitCode = await main(process.argv.slice(2))
