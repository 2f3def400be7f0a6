// Copies the third-party runtime files the UI needs out of node_modules into public/ (git-ignored), so that
// `vite build` puts them in dist/ and `tomo serve` can serve everything from one directory, same origin.
// - The Cubism 2 core (Live2D "Redistributable Code", from npm wl-live2d) is a classic script that defines
//   the global `Live2D` object pixi-live2d-display's cubism2 build expects; index.html loads it before the app.
// - The Shizuku sample model (npm live2d-widget-model-shizuku) is copied whole except its sounds (the UI
//   never plays motion sounds: the voice comes from the backend).
import { cpSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const nm = join(root, 'node_modules');
const pub = join(root, 'public');

function need(path) {
  if (!existsSync(path)) {
    console.error(`copy-assets: missing ${path}; run \`npm ci\` in ui/ first`);
    process.exit(1);
  }
  return path;
}

const core = need(join(nm, 'wl-live2d/dist/packages/live2dcubism2core.min.js'));
mkdirSync(join(pub, 'vendor'), { recursive: true });
cpSync(core, join(pub, 'vendor/live2dcubism2core.min.js'));

const shizuku = need(join(nm, 'live2d-widget-model-shizuku/assets'));
const dest = join(pub, 'live2d/shizuku');
rmSync(dest, { recursive: true, force: true });
cpSync(shizuku, dest, { recursive: true, filter: (src) => !src.includes('/snd') });
console.log(`copy-assets: Cubism 2 core -> public/vendor, Shizuku -> public/live2d/shizuku`);
