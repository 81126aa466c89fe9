import react from '@vitejs/plugin-react'
import { defineConfig } from 'electron-vite'
import { resolve } from 'node:path'

export default defineConfig({
  main: {
    build: {
      // Node modules (node-pty's native addon, web-tree-sitter's wasm, ripgrep's binary) stay in
      // node_modules and are loaded from there at run time.
      externalizeDeps: true,
      rollupOptions: {
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
