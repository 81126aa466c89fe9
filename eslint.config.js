import js from '@eslint/js'
import reactHooks from 'eslint-plugin-react-hooks'
import globals from 'globals'
import { relative } from 'node:path'
import tseslint from 'typescript-eslint'

/**
 * Layers by runtime, enforced here (VS Code's habit): what a file may import depends on where it runs.
 * - src/shared: zod and itself only (runs in main, preload and renderer alike).
 * - src/renderer: never src/main, never electron or node:*.
 * - src/main is layered by folder: the engine (tools/, agent/, session/, secrets/, mcp/) below the app (app/: the
 *   API both
 *   windows share, sessions, settings), below the hosts (electron/, cli/). Nothing imports a layer above it.
 * - under the engine, two libraries that know nothing of tools, calls or sessions: fs/ (the file-safety layer:
 *   atomic writes, checked folders and reads) and git/ (reading git's files as bytes; it may use fs/).
 * - only src/main/electron/ knows Electron; the rest of main runs under plain Node (CLI, browser mode, tests).
 * - tools never import the agent; MCP (mcp/: servers whose tools are Tools) neither, nor does the agent import it.
 * - only src/main/electron/ipc.ts touches ipcMain and only src/preload/index.ts touches ipcRenderer.
 */
const ENGINE = [
  'src/main/tools/',
  'src/main/agent/',
  'src/main/session/',
  'src/main/secrets/',
  'src/main/mcp/',
  'src/main/fs/',
  'src/main/git/',
]
const LIBRARIES = ['src/main/fs/', 'src/main/git/']
const HOSTS = ['src/main/electron/', 'src/main/cli/']
const IPC_MAIN = ['src/main/electron/ipc.ts', 'src/main/electron/ipc.test.ts']

const layers = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const rel = relative(context.cwd, context.filename).replaceAll('\\', '/')
    const inSrc = rel.startsWith('src/')
    const check = (node, source) => {
      if (!inSrc || typeof source !== 'string') return
      const report = (message) => context.report({ node, message })
      const resolvesInto = (dir) => {
        if (!source.startsWith('.')) return false
        const parts = rel.split('/').slice(0, -1)
        for (const seg of source.split('/')) {
          if (seg === '..') parts.pop()
          else if (seg !== '.') parts.push(seg)
        }
        return parts.join('/').startsWith(dir)
      }
      if (rel.startsWith('src/shared/')) {
        if (
          source !== 'zod' &&
          !resolvesInto('src/shared/') &&
          !source.startsWith('zod/') &&
          !(source === 'vitest' && rel.endsWith('.test.ts'))
        ) {
          report(`src/shared may import only zod and itself (found "${source}").`)
        }
      }
      if (rel.startsWith('src/renderer/')) {
        if (source === 'electron' || source.startsWith('node:') || resolvesInto('src/main')) {
          report(`The renderer must not import "${source}": talk to main through window.api.`)
        }
      }
      if (rel.startsWith('src/main/') && !rel.startsWith('src/main/electron/') && source === 'electron') {
        report(
          'Only src/main/electron/ knows Electron: the engine, the app and the CLI run under plain Node.',
        )
      }
      if (ENGINE.some((dir) => rel.startsWith(dir)) && [...HOSTS, 'src/main/app/'].some(resolvesInto)) {
        report(`The engine (tools, agent, session) never imports the app or a host (found "${source}").`)
      }
      if (rel.startsWith('src/main/app/') && HOSTS.some(resolvesInto)) {
        report(`The app never imports a host (electron/, cli/): hosts import the app (found "${source}").`)
      }
      if (rel.startsWith('src/main/tools/') && resolvesInto('src/main/agent')) {
        report('Tools never import the agent.')
      }
      if (rel.startsWith('src/main/mcp/') && resolvesInto('src/main/agent')) {
        report('MCP never imports the agent: its tools reach the loop through the registry.')
      }
      if (
        (rel.startsWith('src/main/agent/') || rel.startsWith('src/main/tools/')) &&
        resolvesInto('src/main/mcp')
      ) {
        report('The agent and the tools never import mcp/: its tools come through the registry (ToolSource).')
      }
      // Their tests may drive a tool to show what a reader protects; their code never depends on one.
      if (
        LIBRARIES.some((dir) => rel.startsWith(dir)) &&
        !rel.endsWith('.test.ts') &&
        ['src/main/tools/', 'src/main/agent/', 'src/main/session/', 'src/main/mcp/'].some(resolvesInto)
      ) {
        report(`fs/ and git/ are libraries under the engine: they never import tools, agent or session.`)
      }
      if (rel.startsWith('src/main/fs/') && resolvesInto('src/main/git/')) {
        report('fs/ never imports git/ (git/ builds on fs/).')
      }
    }
    const checkNamed = (node) => {
      if (node.source.value !== 'electron') return
      for (const spec of node.specifiers) {
        const name = spec.imported?.name
        if (name === 'ipcMain' && !IPC_MAIN.includes(rel)) {
          context.report({ node, message: 'Only src/main/electron/ipc.ts may use ipcMain.' })
        }
        if (name === 'ipcRenderer' && rel !== 'src/preload/index.ts') {
          context.report({ node, message: 'Only src/preload/index.ts may use ipcRenderer.' })
        }
      }
    }
    return {
      ImportDeclaration(node) {
        check(node, node.source.value)
        checkNamed(node)
      },
      ImportExpression(node) {
        if (node.source.type === 'Literal') check(node, node.source.value)
      },
      ExportAllDeclaration(node) {
        check(node, node.source.value)
      },
      ExportNamedDeclaration(node) {
        if (node.source) check(node, node.source.value)
      },
    }
  },
}

export default tseslint.config(
  {
    ignores: [
      'out/**',
      'node_modules/**',
      'e2e/output/**',
      'test-results/**',
      'playwright-report/**',
      'bench/.cache/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { local: { rules: { layers } } },
    languageOptions: { globals: { ...globals.node } },
    rules: {
      'local/layers': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportDefaultDeclaration', message: 'Use named exports (config files excepted).' },
      ],
    },
  },
  {
    files: ['src/renderer/**/*.{ts,tsx}', 'src/preload/web.ts'],
    languageOptions: { globals: { ...globals.browser } },
    plugins: { 'react-hooks': reactHooks },
    rules: { ...reactHooks.configs.recommended.rules },
  },
  {
    files: ['*.config.{ts,js}', 'eslint.config.js'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    // Playwright fixtures take their dependencies by destructuring, even when there are none.
    files: ['e2e/**/*.ts'],
    rules: { 'no-empty-pattern': 'off' },
  },
)
