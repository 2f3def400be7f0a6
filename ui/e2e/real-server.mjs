// Starts the real backend for `npm run e2e:real`: `tomo serve` on a free port (text only unless
// TOMO_E2E_VOICE=1, which speaks through the machine's default sound device, e.g. scripts/pulse-null.sh), the built UI, the test
// profiles of fixtures/, the LLM stub of llm-stub.mjs, and a throwaway data directory (history must not leak
// between runs or into the user's own). The binary is TOMO_BIN, else the cargo target dir's debug build.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tomoBinary(repoRoot) {
  if (process.env.TOMO_BIN) return process.env.TOMO_BIN;
  const target = process.env.CARGO_TARGET_DIR ?? join(repoRoot, 'target');
  return join(target, 'debug', 'tomo');
}

export async function startReal({ repoRoot, distDir, fixturesDir, llmBaseUrl, voice = false }) {
  const bin = tomoBinary(repoRoot);
  if (!existsSync(bin)) {
    throw new Error(`no tomo binary at ${bin}: run \`cargo build -p tomo-cli\` or set TOMO_BIN`);
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'tomo-e2e-'));
  // The user's own models folder: Kuro's character is a copy of Shizuku under another name, which only this
  // folder has (the UI bundles Shizuku alone).
  const modelsDir = join(dataDir, 'models');
  cpSync(join(distDir, 'live2d', 'shizuku'), join(modelsDir, 'kuro-own'), { recursive: true });
  renameSync(join(modelsDir, 'kuro-own', 'shizuku.model.json'), join(modelsDir, 'kuro-own', 'kuro.model.json'));
  // Cubie, the Cubism 4 character (a generated one-quad model).
  cpSync(join(fixturesDir, 'cubism4', 'cubie'), join(modelsDir, 'cubie'), { recursive: true });
  const env = { ...process.env, TOMO_LLM_BASE_URL: llmBaseUrl, TOMO_DATA_DIR: dataDir, TOMO_PLUGINS_DIR: join(repoRoot, 'plugins') };
  // A key or token from the developer's shell would change what the server demands or sends.
  for (const k of ['TOMO_LLM_API_KEY', 'TOMO_LLM_MODEL']) delete env[k];
  // The per-run access token, chosen here so the test can open the page with it (as a user opens the
  // address `tomo serve` prints).
  const token = randomBytes(24).toString('hex');
  env.TOMO_SERVER_TOKEN = token;
  const args = [
    'serve', ...(voice ? [] : ['--text']), '--port', '0',
    '--profile', join(fixturesDir, 'hana.toml'), '--profiles-dir', fixturesDir, '--ui-dir', distDir,
    '--models-dir', modelsDir,
  ];
  const child = spawn(bin, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));

  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`tomo serve printed no address in 30 s; stderr:\n${stderr}`)), 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1].replace(/\/?$/, '/'));
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`tomo serve exited (${code ?? signal}) before listening; stderr:\n${stderr}`));
    });
  });

  return {
    /** The page, with the token (the page keeps it for its socket). */
    url: `${url}?token=${token}`,
    /** An API path of the server, with the token. */
    api: (path) => `${url}${path}?token=${token}`,
    get stderr() {
      return stderr;
    },
    /** SIGTERM (the server stops cleanly on it), SIGKILL if it hangs; resolves with how it exited. */
    async close() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
      const how = await exited;
      clearTimeout(timer);
      rmSync(dataDir, { recursive: true, force: true });
      return how;
    },
  };
}
