// `lanes ...` in a process of its own, from the sources (as bin/lanes.js runs the built engine): for tests that
// kill it.
import { main } from '../cli'

process.exitCode = await main(process.argv.slice(2))
