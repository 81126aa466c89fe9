// Part of `npm run lint`: fails when the modules under src/ import each other in a cycle. Every static import
// and re-export counts, `import type` too (a cycle through types is still two files that cannot be read
// apart); a dynamic `import()` does not (it is how a module is loaded lazily, after both are evaluated).
// Usage: node scripts/check-import-cycles.js [folder ...]   (default: src)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = fileURLToPath(new URL('..', import.meta.url))
const EXTENSIONS = ['.ts', '.tsx']

function sourceFiles(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) {
      if (name !== 'node_modules') sourceFiles(path, out)
    } else if (EXTENSIONS.some((ext) => name.endsWith(ext)) && !name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

/** The file a relative specifier names, as TypeScript resolves it here (no extension, `.js`, or a folder). */
function resolveSpecifier(from, specifier) {
  const base = resolve(dirname(from), specifier)
  const stem = base.replace(/\.(c|m)?jsx?$/, '')
  const candidates = [
    base,
    ...EXTENSIONS.map((ext) => stem + ext),
    ...EXTENSIONS.map((ext) => join(base, 'index' + ext)),
  ]
  return candidates.find((path) => EXTENSIONS.some((ext) => path.endsWith(ext)) && existsSync(path))
}

function importsOf(file) {
  const text = readFileSync(file, 'utf8')
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false)
  const out = []
  for (const statement of source.statements) {
    const specifier =
      (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) && statement.moduleSpecifier
    if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) continue
    const target = resolveSpecifier(file, specifier.text)
    if (target !== undefined) out.push(target)
  }
  return out
}

/** The strongly connected components of more than one file, or of one file importing itself (Tarjan). */
function cycles(graph) {
  const index = new Map()
  const low = new Map()
  const onStack = new Set()
  const stack = []
  const found = []
  let next = 0
  const visit = (start) => {
    // Iterative, so a deep import chain cannot overflow the call stack.
    const work = [[start, 0]]
    index.set(start, next)
    low.set(start, next++)
    stack.push(start)
    onStack.add(start)
    while (work.length > 0) {
      const frame = work[work.length - 1]
      const [node, i] = frame
      const edges = graph.get(node) ?? []
      if (i < edges.length) {
        frame[1]++
        const to = edges[i]
        if (!index.has(to)) {
          index.set(to, next)
          low.set(to, next++)
          stack.push(to)
          onStack.add(to)
          work.push([to, 0])
        } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), index.get(to)))
        continue
      }
      work.pop()
      if (work.length > 0) {
        const parent = work[work.length - 1][0]
        low.set(parent, Math.min(low.get(parent), low.get(node)))
      }
      if (low.get(node) === index.get(node)) {
        const component = []
        let member
        do {
          member = stack.pop()
          onStack.delete(member)
          component.push(member)
        } while (member !== node)
        if (component.length > 1 || edges.includes(node)) found.push(component)
      }
    }
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return found
}

/** One import path around the component, for the message: a -> b -> a. */
function loopThrough(component, graph) {
  const members = new Set(component)
  const start = [...component].sort()[0]
  const path = [start]
  const seen = new Set([start])
  for (let node = start; ;) {
    const nextNode = (graph.get(node) ?? []).find((to) => members.has(to) && (to === start || !seen.has(to)))
    if (nextNode === undefined || nextNode === start) break
    path.push(nextNode)
    seen.add(nextNode)
    node = nextNode
  }
  return [...path, start]
}

const folders = process.argv.length > 2 ? process.argv.slice(2) : ['src']
const graph = new Map()
for (const folder of folders) {
  for (const file of sourceFiles(resolve(root, folder))) graph.set(file, [...new Set(importsOf(file))])
}
const found = cycles(graph)
if (found.length === 0) {
  console.log(`No import cycles among ${graph.size} modules.`)
} else {
  console.error(`${found.length} import cycle(s): split the shared part into a module both import.`)
  for (const component of found) {
    const names = loopThrough(component, graph).map((file) => relative(root, file))
    const more = component.length > names.length - 1 ? ` (${component.length} modules in all)` : ''
    console.error(`  ${names.join(' -> ')}${more}`)
  }
  process.exitCode = 1
}
