import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// The Tauri app loads the dev server at http://localhost:5173 (`tauri dev`)
// and the built files in ui/dist otherwise (see ../tauri.conf.json).
export default defineConfig({
  plugins: [svelte()],
  clearScreen: false,
  server: {
    port: 5173,
    strictPort: true,
    watch: { ignored: ['**/src-tauri/**'] },
  },
  envPrefix: ['VITE_', 'TAURI_ENV_'],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Tauri embeds these files; no inline data: URIs for scripts.
    assetsInlineLimit: 0,
  },
});
