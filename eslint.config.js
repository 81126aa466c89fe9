import js from '@eslint/js'
import reactHooks from 'eslint-plugin-react-hooks'
import globals from 'globals'
import { relative } from 'node:path'
import tseslint from 'typescript-eslint'

/**
 * Layers by runtime, enforced here (VS Code's habit): what a file may import depends on where it runs.
 * - src/shared: zod and itself only (runs in main, preload and renderer alike).
 * - src/renderer: never src/main, never electron or node:*.
 * - the engine (src/main except the Electron shell files) knows nothing of Electron.
 * - tools never import the agent.
 * - only src/main/ipc.ts touches ipcMain and only src/preload/index.ts touches ipcRenderer.
 */
const ELECTRON_SHELL = ['src/main/index.ts', 'src/main/window.ts', 'src/main/ipc.ts', 'src/main/ipc.test.ts']

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
          !source.startsWith('./') &&
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
      if (rel.startsWith('src/main/') && !ELECTRON_SHELL.includes(rel) && source === 'electron') {
        report('The engine knows nothing of Electron: only index.ts, window.ts and ipc.ts import it.')
      }
      if (rel.startsWith('src/main/tools/') && resolvesInto('src/main/agent')) {
        report('Tools never import the agent.')
      }
    }
    const checkNamed = (node) => {
      if (node.source.value !== 'electron') return
      for (const spec of node.specifiers) {
        const name = spec.imported?.name
        if (name === 'ipcMain' && !rel.endsWith('src/main/ipc.ts') && !rel.endsWith('src/main/ipc.test.ts')) {
          context.report({ node, message: 'Only src/main/ipc.ts may use ipcMain.' })
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
