// Copies the third-party runtime files the UI needs out of node_modules into public/ (git-ignored), so that
// `vite build` puts them in dist/ and `tomo serve` can serve everything from one directory, same origin.
// - The Cubism 2 and Cubism 4 cores (Live2D "Redistributable Code", from npm wl-live2d) are classic scripts
//   that define the globals `Live2D` and `Live2DCubismCore` pixi-live2d-display expects; index.html loads
//   them before the app.
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

mkdirSync(join(pub, 'vendor'), { recursive: true });
for (const core of ['live2dcubism2core.min.js', 'live2dcubism4core.min.js']) {
  cpSync(need(join(nm, 'wl-live2d/dist/packages', core)), join(pub, 'vendor', core));
}

const shizuku = need(join(nm, 'live2d-widget-model-shizuku/assets'));
const dest = join(pub, 'live2d/shizuku');
rmSync(dest, { recursive: true, force: true });
cpSync(shizuku, dest, { recursive: true, filter: (src) => !src.includes('/snd') });
console.log(`copy-assets: Cubism 2 + 4 cores -> public/vendor, Shizuku -> public/live2d/shizuku`);
