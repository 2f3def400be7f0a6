import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Relative asset URLs, so dist/ works wherever `tomo serve` (or Tauri) mounts it.
  base: './',
  build: { target: 'es2020', chunkSizeWarningLimit: 1500 },
  test: { include: ['test/**/*.test.ts'], environment: 'node' },
});
