import react from '@vitejs/plugin-react'
import { defineConfig } from 'electron-vite'
import { resolve } from 'node:path'

export default defineConfig({
  main: {
    build: {
      // Dependencies are bundled: a start then reads a few files instead of finding, reading and compiling some 500
      // modules one by one (`lanes run` got to session.created in about half the time). Those that need their own
      // files at run time stay in node_modules and load from there: node-pty's and the keyring's native addons,
      // the tree-sitter wasm, ripgrep's binary.
      externalizeDeps: false,
      rollupOptions: {
        external: ['node-pty', '@napi-rs/keyring', 'web-tree-sitter', 'tree-sitter-bash', '@vscode/ripgrep'],
        input: {
          // The entry names fix the output files (out/main/index.js, out/main/cli.js) that package.json's
          // `main`, bin/lanes.js and the hosts' paths to ../renderer and ../preload rely on.
          index: resolve('src/main/electron/index.ts'),
          cli: resolve('src/main/cli/cli.ts'),
        },
      },
    },
  },
  preload: {
    build: {
      // A sandboxed preload cannot require node_modules: bundle everything into one CommonJS file.
      externalizeDeps: false,
      rollupOptions: {
        input: { index: resolve('src/preload/index.ts') },
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    root: 'src/renderer',
    plugins: [react()],
    build: {
      minify: true,
      rollupOptions: {
        input: {
          index: resolve('src/renderer/index.html'),
          // Browser mode's window.api; the web host injects it in front of the renderer's script.
          'web-preload': resolve('src/preload/web.ts'),
        },
        // A view loaded lazily (lazy-views.tsx) that some module of the first bundle also imports statically stays
        // in the first bundle: the build fails instead of growing first paint without a word.
        onwarn(warning, warn) {
          if (warning.code === 'INEFFECTIVE_DYNAMIC_IMPORT') throw new Error(warning.message)
          warn(warning)
        },
        output: {
          entryFileNames: (chunk) =>
            chunk.name === 'web-preload' ? 'web-preload.js' : 'assets/[name]-[hash].js',
        },
      },
    },
  },
})
