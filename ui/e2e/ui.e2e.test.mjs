// End-to-end: the built UI in headless Debian Chromium (playwright-core, no downloaded browser) against a
// server speaking the session protocol. Three modes:
// - default: the Node stub in stub-server.mjs (scripted events, including voice-mode `audio_started`);
// - TOMO_E2E_REAL=1 (`npm run e2e:real`): the real `tomo serve --text` (real-server.mjs) driven by the
//   scripted OpenAI-compatible LLM of llm-stub.mjs; text mode emits no audio, so the lip-sync check needs
//   TOMO_E2E_VOICE=1 as well (real Piper speech played on the default sound device, its real envelopes);
// - TOMO_UI_SERVER=http://...: an already running server (with a scripted LLM giving script.mjs's reply).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { PNG } from 'pngjs';
import { startStub } from './stub-server.mjs';
import { startLlmStub } from './llm-stub.mjs';
import { startReal } from './real-server.mjs';
import { SENTENCES } from './script.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const artifacts = join(here, 'artifacts');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const BG = [0xf4, 0xf1, 0xec]; // --bg in style.css

const REAL = process.env.TOMO_E2E_REAL === '1';
const VOICE = REAL && process.env.TOMO_E2E_VOICE === '1';
let stub = null;
let llm = null;
let real = null;
let base;
let browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  if (REAL) {
    llm = await startLlmStub();
    real = await startReal({
      repoRoot: join(here, '..', '..'),
      distDir: join(here, '..', 'dist'),
      fixturesDir: join(here, 'fixtures'),
      llmBaseUrl: llm.baseUrl,
      voice: VOICE,
    });
    base = real.url;
  } else if (process.env.TOMO_UI_SERVER) {
    base = process.env.TOMO_UI_SERVER.replace(/\/?$/, '/');
  } else {
    stub = await startStub({ distDir: join(here, '..', 'dist'), profilesDir: join(here, '..', '..', 'profiles') });
    base = stub.url;
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // The flags that work on this machine (no sandbox as root, no GPU: WebGL runs on SwiftShader, and no
    // background networking, which the closed network would refuse).
    args: [
      '--no-sandbox', '--disable-gpu', '--enable-unsafe-swiftshader', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
});

after(async () => {
  await browser?.close();
  await stub?.close();
  if (real) {
    const how = await real.close();
    writeFileSync(join(artifacts, 'tomo-serve.stderr.txt'), real.stderr);
    // The server stops cleanly on SIGTERM (what a service manager sends).
    assert.equal(how.code, 0, `tomo serve exited with ${JSON.stringify(how)}; stderr:\n${real.stderr}`);
  }
  await llm?.close();
});

/** Records every status a tool chip shows, from before the op is sent: against the real server the tool
 * runs in microseconds, so `running` may be on screen for less than one animation frame. The observer runs
 * after each WebSocket message task, so it sees every rendered state. */
async function watchChips(page) {
  await page.evaluate(() => {
    window.__chipLog = [];
    const list = document.querySelector('[data-testid=tool-chips]');
    new MutationObserver(() => {
      for (const c of list.querySelectorAll('.chip')) {
        const entry = `${c.dataset.toolId}:${c.dataset.status}`;
        if (window.__chipLog.at(-1) !== entry) window.__chipLog.push(entry);
      }
    }).observe(list, { childList: true, subtree: true, characterData: true, attributes: true });
  });
}

/** The tool chip went running, then completed (and never error). */
async function chipRanAndCompleted(page) {
  await page.waitForFunction(() => document.querySelector('[data-testid=tool-chips] .chip')?.textContent === 'get_time · completed');
  const log = await page.evaluate(() => window.__chipLog);
  const statuses = log.map((e) => e.split(':').at(-1));
  assert.ok(statuses.indexOf('running') >= 0 && statuses.indexOf('running') < statuses.indexOf('completed'), `chip states ${log}`);
  assert.ok(!statuses.includes('error'), `chip states ${log}`);
}

async function openPage() {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  const problems = [];
  page.on('console', (m) => {
    // Failed loads are reported with their URL by the response handler below.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
  });
  await page.goto(base);
  await page.waitForFunction(() => window.__tomo?.ready === true, null, { timeout: 30000 });
  await page.waitForSelector('[data-testid=connection][data-status=open]');
  return { page, problems };
}

/** Pixels in `box` of a PNG screenshot that differ clearly from the page background. */
function countDrawn(png, box) {
  let drawn = 0;
  let total = 0;
  const x0 = Math.max(0, Math.floor(box.x));
  const y0 = Math.max(0, Math.floor(box.y));
  const x1 = Math.min(png.width, Math.ceil(box.x + box.width));
  const y1 = Math.min(png.height, Math.ceil(box.y + box.height));
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const i = (y * png.width + x) * 4;
      const d = Math.abs(png.data[i] - BG[0]) + Math.abs(png.data[i + 1] - BG[1]) + Math.abs(png.data[i + 2] - BG[2]);
      if (d > 40) drawn++;
      total++;
    }
  }
  return { drawn, total };
}

test('the character is drawn', async () => {
  const { page, problems } = await openPage();
  await page.waitForTimeout(1500); // let the idle motion settle into a pose
  const shot = await page.screenshot({ path: join(artifacts, 'character.png') });
  const box = await page.evaluate(() => window.__tomo.bounds());
  assert.ok(box && box.width > 100 && box.height > 100, `model bounds ${JSON.stringify(box)}`);
  const { drawn, total } = countDrawn(PNG.sync.read(shot), box);
  writeFileSync(join(artifacts, 'character.json'), JSON.stringify({ box, drawn, total }, null, 2));
  // Shizuku covers a good part of her box (her outline leaves corners empty); an empty canvas gives ~0.
  assert.ok(drawn > 0.15 * total, `only ${drawn} of ${total} pixels in the model box differ from the background`);
  // Outside the model box (the left strip of the stage) stays background: the canvas is transparent.
  const left = countDrawn(PNG.sync.read(shot), { x: 5, y: 120, width: Math.max(1, box.x - 10), height: 200 });
  assert.ok(left.drawn < 0.02 * left.total, `background drawn over: ${left.drawn}/${left.total}`);
  // Nothing sticks out sideways, down to a narrow window (the composer's input used to push Stop out).
  for (const width of [1200, 900, 700]) {
    await page.setViewportSize({ width, height: 800 });
    const { scroll, inner } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
    assert.ok(scroll <= inner, `horizontal scrollbar at ${width} px: content is ${scroll} px wide`);
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test('both Cubism runtimes: Shizuku on Cubism 2, the Cubism 4 core running under the page CSP', async () => {
  const { page, problems } = await openPage();
  assert.equal(await page.evaluate(() => window.__tomo.runtime()), 'cubism2');
  // Starting the Cubism 4 framework compiles the core's WebAssembly ('wasm-unsafe-eval' in the CSP) and asks
  // the core its version: what a *.model3.json character needs before its moc3 can load (the last test
  // draws one).
  assert.match(await page.evaluate(() => window.__tomo.cubism4Version()), /^5\.\d+\.\d+$/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a turn: streamed subtitles, tool chip, expression, mouth, transcript, latency', async () => {
  const { page, problems } = await openPage();
  assert.equal(await page.evaluate(() => window.__tomo.expression()), null);
  await watchChips(page);
  await page.fill('[data-testid=input]', 'what time is it?');
  await page.click('[data-testid=send]');

  // The tool chip shows running, then completed.
  await chipRanAndCompleted(page);

  // Streamed text shows in the live line before the sentence is committed, without the [emotion] tag.
  await page.waitForFunction(() => document.querySelector('[data-testid=subtitle-live]')?.textContent?.includes('Hmm,'));
  const live = await page.textContent('[data-testid=subtitle-live]');
  assert.ok(!live.includes('['), `tag leaked into subtitles: ${live}`);
  assert.equal(await page.textContent('[data-testid=subtitle-committed]'), '');
  await page.screenshot({ path: join(artifacts, 'streaming.png') });

  // The sentence commits; [angry] maps (profile emotion map) to Shizuku's f02.
  await page.waitForFunction((s) => document.querySelector('[data-testid=subtitle-committed]')?.textContent?.includes(s), SENTENCES[0]);
  await page.waitForFunction(() => window.__tomo.expression() === 'f02');

  // The mouth parameter follows the envelope while the audio plays: it both opens and closes. Skipped against
  // `tomo serve --text`: text mode emits no `audio_started`, so there is no envelope to follow.
  if (!REAL || VOICE) {
    await page.waitForFunction(() => {
      const vs = window.__tomo.mouthTrace().map((p) => p.v);
      return vs.length > 10 && Math.max(...vs) > 0.6 && Math.min(...vs) < 0.2;
    });
  }
  await page.screenshot({ path: join(artifacts, 'speaking.png') });

  // The second sentence carries [joy] -> f01 (with its audio in voice mode, on arrival in text mode).
  await page.waitForFunction(() => window.__tomo.expression() === 'f01', null, { timeout: 15000 });
  await page.waitForFunction(() => document.querySelector('[data-testid=session-state]')?.dataset.state === 'idle', null, { timeout: 15000 });
  const transcript = await page.evaluate(() => window.__tomo.transcript());
  const mine = transcript.filter((m) => m.role !== 'system').slice(-2);
  assert.deepEqual(mine.map((m) => [m.role, m.text]), [
    ['user', 'what time is it?'],
    ['assistant', SENTENCES.join(' ')],
  ]);
  // The stub's scripted latency, or whatever the real session measured.
  assert.match(await page.textContent('[data-testid=latency]'), REAL ? /first token \d+ ms/ : /first token 420 ms/);
  if (llm) {
    // The real session asked with the tools of the profile, then came back with the tool's result.
    const [ask, followUp] = llm.requests.slice(-2);
    assert.ok(ask.tools?.some((t) => t.function?.name === 'get_time'), `tools offered: ${JSON.stringify(ask.tools)}`);
    // The user's words, after the time plugin's clock in the [memory context] block.
    assert.match(ask.messages.at(-1).content, /^\[memory context\]\nIt is now .+, local time \(UTC[+-]\d\d:\d\d\)\.\n\[\/memory context\]\n\nwhat time is it\?$/);
    assert.equal(followUp.messages.at(-1).role, 'tool');
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test('reconnect mid-turn: missed events arrive once', async () => {
  const { page } = await openPage();
  const sockets = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  await page.fill('[data-testid=input]', 'again');
  await page.click('[data-testid=send]');
  // Drop while the turn is still streaming: the stub's turn at its running tool chip, the real session once
  // the first words are shown (the real tool is done at once, the stub LLM keeps streaming for ~2 s more).
  if (REAL) await page.waitForFunction(() => document.querySelector('[data-testid=subtitle-live]')?.textContent?.includes('Hmm,'));
  else await page.waitForSelector('[data-testid=tool-chips] .chip[data-status=running]');
  // Read and drop in one task: between two evaluations the live turn can deliver another event.
  const seqAtDrop = await page.evaluate(() => {
    const seq = window.__tomo.lastSeq();
    window.__tomo.dropConnection();
    return seq;
  });
  await page.waitForSelector('[data-testid=connection][data-status=reconnecting]');
  await page.waitForSelector('[data-testid=connection][data-status=open]');
  await page.waitForFunction(() => document.querySelector('[data-testid=session-state]')?.dataset.state === 'idle', null, { timeout: 20000 });
  const transcript = await page.evaluate(() => window.__tomo.transcript());
  const last = transcript.filter((m) => m.role !== 'system').slice(-2);
  assert.deepEqual(last.map((m) => [m.role, m.text]), [['user', 'again'], ['assistant', SENTENCES.join(' ')]]);
  // The reconnect asks for what came after the last event applied: the one at the drop, or a later one the
  // closing socket still delivered (a socket being closed may hand over messages already received).
  const resumedFrom = sockets.map((u) => Number(new URL(u).searchParams.get('last_seq') ?? NaN)).filter((n) => n >= seqAtDrop);
  assert.ok(resumedFrom.length > 0, `reconnect URLs ${sockets} (dropped at ${seqAtDrop})`);
  // Every event applied exactly once, none missing: the page applied seq 1, 2, ... up to the server's latest.
  const applied = await page.evaluate(() => window.__tomo.appliedSeqs());
  assert.deepEqual(applied, applied.map((_, i) => i + 1), `applied seqs ${applied}`);
  assert.equal(await page.evaluate(() => window.__tomo.gaps()), 0);
  let latest = null;
  if (stub) latest = stub.events.at(-1).seq;
  if (real) latest = (await (await fetch(real.api('health'))).json()).latest_seq;
  if (latest !== null) {
    assert.ok(latest > seqAtDrop, 'the turn went on after the drop');
    assert.equal(applied.at(-1), latest);
  }
  await page.close();
});

test('character switch and readable errors', async () => {
  const { page, problems } = await openPage();
  // By label: the stub lists `profiles/kuro.toml`, the real server the file name inside its profiles dir.
  await page.selectOption('[data-testid=profile-select]', { label: 'Kuro' });
  await page.waitForFunction(() => document.querySelector('[data-testid=session-state]')?.textContent?.startsWith('Kuro'));
  if (real) {
    // Kuro's model is the user's own (the server's --models-dir), not one bundled with the UI.
    await page.waitForFunction(() => window.__tomo.shownModel() === 'live2d/kuro-own/kuro.model.json', null, { timeout: 30000 });
    const box = await page.evaluate(() => window.__tomo.bounds());
    const { drawn, total } = countDrawn(PNG.sync.read(await page.screenshot()), box);
    assert.ok(drawn > 0.15 * total, `the user's model: ${drawn} of ${total} pixels drawn`);
  }
  await page.screenshot({ path: join(artifacts, 'switch-kuro.png') });
  await page.selectOption('[data-testid=profile-select]', { label: 'Hana' });
  await page.waitForFunction(() => document.querySelector('[data-testid=session-state]')?.textContent?.startsWith('Hana'));
  if (real) {
    // The real server refuses a file outside its profiles directory with an error frame, shown as a notice.
    await page.evaluate(() => {
      const sel = document.querySelector('[data-testid=profile-select]');
      const o = document.createElement('option');
      o.value = '../../../Cargo.toml'; // the repository's Cargo.toml: exists, but outside the directory
      o.textContent = 'Escape';
      sel.append(o);
    });
    await page.selectOption('[data-testid=profile-select]', '../../../Cargo.toml');
    // Among whatever notices are up (e.g. an audio hiccup on a loaded machine), the refusal is shown.
    const refusal = /The server refused that: profile `\.\.\/\.\.\/\.\.\/Cargo\.toml` is not a \.toml file inside the profiles directory/;
    await page.waitForFunction(
      (source) => [...document.querySelectorAll('[data-testid=notice]')].some((n) => new RegExp(source).test(n.textContent ?? '')),
      refusal.source,
    );
    // The switcher goes back to the character actually running.
    assert.equal(await page.$eval('[data-testid=profile-select]', (s) => s.selectedOptions[0]?.textContent), 'Hana');
    assert.deepEqual(problems, []);
  }
  if (stub) {
    assert.deepEqual(stub.ops.filter((o) => o.type === 'switch_profile').map((o) => o.path), ['profiles/kuro.toml', 'profiles/hana.toml']);
    // A profile the server refuses comes back as an `error` event, shown as a notice.
    await page.evaluate(() => {
      const sel = document.querySelector('[data-testid=profile-select]');
      const o = document.createElement('option');
      o.value = 'profiles/nope.toml';
      o.textContent = 'Nope';
      sel.append(o);
    });
    await page.selectOption('[data-testid=profile-select]', 'profiles/nope.toml');
    await page.waitForSelector('[data-testid=notice]');
    assert.match(await page.textContent('[data-testid=notice]'), /Profile problem: no profile profiles\/nope\.toml/);
  }
  await page.screenshot({ path: join(artifacts, 'switch.png') });
  await page.close();
});

// Last: it leaves the session on another character. Real server only (the stub serves the repo's profiles).
test('a Cubism 4 character: drawn, expressions from [emotion] tags, mouth moving with the voice', { skip: !REAL }, async () => {
  const { page, problems } = await openPage();
  await page.selectOption('[data-testid=profile-select]', { label: 'Cubie' });
  await page.waitForFunction(() => document.querySelector('[data-testid=session-state]')?.textContent?.startsWith('Cubie'));
  await page.waitForFunction(() => window.__tomo.shownModel() === 'live2d/cubie/cubie.model3.json', null, { timeout: 30000 });
  assert.equal(await page.evaluate(() => window.__tomo.runtime()), 'cubism4');
  await page.waitForTimeout(500);
  const box = await page.evaluate(() => window.__tomo.bounds());
  assert.ok(box && box.width > 100 && box.height > 100, `model bounds ${JSON.stringify(box)}`);
  const shot = await page.screenshot({ path: join(artifacts, 'cubism4.png') });
  // The quad (0.8 of the canvas the box stands for, centred) shows its texture's blue: checked in the middle
  // of the box, clear of its edges and of the subtitle line at the bottom of the stage.
  const png = PNG.sync.read(shot);
  let blue = 0;
  let total = 0;
  for (let y = Math.ceil(box.y + 0.2 * box.height); y < box.y + 0.6 * box.height; y++) {
    for (let x = Math.ceil(box.x + 0.2 * box.width); x < box.x + 0.8 * box.width; x++) {
      const i = (y * png.width + x) * 4;
      if (Math.abs(png.data[i] - 0x2a) + Math.abs(png.data[i + 1] - 0x6f) + Math.abs(png.data[i + 2] - 0xdb) < 30) blue++;
      total++;
    }
  }
  assert.ok(blue > 0.98 * total, `only ${blue} of ${total} pixels in the middle of the Cubism 4 model are its blue`);

  // A turn: [angry] -> frown, [joy] -> smile (Cubie's emotion map), the mouth (its LipSync parameter) follows
  // the real audio in voice mode.
  await page.fill('[data-testid=input]', 'what time is it?');
  await page.click('[data-testid=send]');
  await page.waitForFunction(() => window.__tomo.expression() === 'frown', null, { timeout: 20000 });
  if (VOICE) {
    await page.waitForFunction(() => {
      const vs = window.__tomo.mouthTrace().map((p) => p.v);
      return vs.length > 10 && Math.max(...vs) > 0.6 && Math.min(...vs) < 0.2;
    }, null, { timeout: 20000 });
  }
  await page.waitForFunction(() => window.__tomo.expression() === 'smile', null, { timeout: 20000 });
  // The expression really drives the model: ParamFace fades to +1 (smile adds 1; frown had taken it to -1).
  await page.waitForFunction(() => (window.__tomo.param('ParamFace') ?? 0) > 0.9, null, { timeout: 10000 });
  await page.waitForFunction(() => document.querySelector('[data-testid=session-state]')?.dataset.state === 'idle', null, { timeout: 20000 });
  assert.deepEqual(problems, []);
  await page.close();
});
