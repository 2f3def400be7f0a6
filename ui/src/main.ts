// Wires the pieces: socket events -> reducer -> DOM, and -> director -> Live2D character.
import './style.css';
import { Connection, type Transport } from './connection';
import { bindingsIpc, desktopProfiles, setupPetMode } from './desktop';
import { setupStartup } from './startup';
import { TauriConnection, inTauri } from './tauri';
import { controlNotice } from './control';
import { Director } from './director';
import { Character, cubism4Version } from './live2d';
import { fetchProfiles, findByCharacter, modelUrl, type ProfileInfo } from './profiles';
import type { EventEnvelope } from './wire';
import { loadSettings, saveSettings, setLlmOp } from './settings';
import { approveOp, dismissNotice, initialState, pushNotice, reduce, type UiState } from './state';
import { Ui } from './ui';

/** The socket of the `tomo serve` that served this page, or `?server=ws://...` (dev server on another port). */
function serverSocketUrl(): string {
  const page = new URL(window.location.href);
  const explicit = page.searchParams.get('server');
  const url = explicit
    ? new URL(explicit)
    : new URL(`${page.protocol === 'https:' ? 'wss' : 'ws'}://${page.host}/ws`);
  const token = page.searchParams.get('token');
  if (token) url.searchParams.set('token', token);
  return url.toString();
}

function httpBase(socketUrl: string): string {
  const u = new URL(socketUrl);
  return `${u.protocol === 'wss:' ? 'https' : 'http'}://${u.host}/`;
}

const root = document.getElementById('app');
if (!root) throw new Error('index.html lacks #app');

let state: UiState = initialState();
let profiles: ProfileInfo[] = [];
let loadedModel: string | null = null;
const director = new Director();
const storage = (() => {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
})();

const notify = (level: 'error' | 'warning', text: string) => {
  state = pushNotice(state, level, text);
  ui.render(state);
};

const ui = new Ui(
  root,
  {
    onSend(text) {
      if (!conn.send({ type: 'user_text', text })) notify('warning', 'Not connected: the message was not sent.');
    },
    onInterrupt() {
      conn.send({ type: 'interrupt' });
    },
    onMicToggle(muted) {
      conn.send({ type: 'set_mic_muted', muted });
    },
    onSensor(plugin, enabled, target) {
      conn.send({ type: 'set_sensor', plugin, enabled, ...(target ? { target } : {}) });
    },
    onListTargets(plugin) {
      conn.send({ type: 'list_sensor_targets', plugin });
    },
    onDoNotDisturb(enabled) {
      conn.send({ type: 'set_do_not_disturb', enabled });
    },
    onHalfDuplex(enabled) {
      conn.send({ type: 'set_half_duplex', enabled });
    },
    onPushToTalkMode(enabled) {
      conn.send({ type: 'set_push_to_talk', enabled });
    },
    onPushToTalk(pressed) {
      conn.send({ type: 'push_to_talk', pressed });
    },
    onSwitchProfile(path) {
      if (!conn.send({ type: 'switch_profile', path })) notify('warning', 'Not connected: cannot switch character.');
    },
    onSaveSettings(s) {
      saveSettings(storage, s);
      if (!conn.send(setLlmOp(s))) notify('warning', 'Not connected: the endpoint was saved but not applied.');
    },
    onDismissNotice(id) {
      state = dismissNotice(state, id);
      ui.render(state);
    },
    onApprove(id, allow) {
      // The prompt goes when the session says the question is settled (`approval_resolved`).
      if (!conn.send(approveOp(id, allow))) notify('warning', 'Not connected: the answer was not sent.');
    },
  },
  loadSettings(storage),
);

const character = new Character(ui.stage);
let modelReady = false;
/** The model on screen (its URL), once it has loaded. */
let shownModel: string | null = null;

async function showModel(url: string): Promise<void> {
  if (url === loadedModel) return;
  loadedModel = url;
  try {
    await character.load(url);
    director.model = character.capabilities();
    modelReady = true;
    shownModel = url;
  } catch (e) {
    notify('error', e instanceof Error ? e.message : String(e));
  }
}

// Commands run in event order; an expression load must not overtake a later reset.
let characterQueue: Promise<void> = Promise.resolve();

// Every applied seq, for the e2e check that a reconnect delivers each missed event exactly once.
const appliedSeqs: number[] = [];

function onEvent(ev: EventEnvelope): void {
  if (appliedSeqs.length < 100_000) appliedSeqs.push(ev.seq);
  state = reduce(state, ev);
  ui.render(state);
  if (ev.type === 'session_ready') {
    const p = findByCharacter(profiles, ev.character);
    director.emotionMap = p?.emotionMap ?? null;
    ui.setProfiles(profiles, ev.character);
    characterQueue = characterQueue.then(() => showModel(modelUrl(p?.live2dModel ?? null)));
  }
  for (const cmd of director.commands(ev)) {
    if (cmd.kind.endsWith('lipsync')) {
      void character.apply(cmd); // the mouth must start with the sound, not after queued loads
    } else {
      characterQueue = characterQueue.then(() => character.apply(cmd)).catch(() => undefined);
    }
  }
}

const desktop = inTauri();
const handlers = {
  onEvent,
  onStatus: (s: Parameters<Ui['setStatus']>[0]) => ui.setStatus(s),
  onControl: (frame: Parameters<typeof controlNotice>[0]) => {
    const notice = controlNotice(frame);
    notify(notice.level, notice.text);
    // A refused switch_profile would leave the switcher showing a character that never loaded.
    if (frame.type === 'error') ui.setProfiles(profiles, state.character);
  },
};
const socketUrl = desktop ? '' : serverSocketUrl();
const conn: Transport = desktop
  ? new TauriConnection({ ipc: bindingsIpc, ...handlers })
  : new Connection({ url: socketUrl, ...handlers });
if (desktop) setupPetMode({ toolbar: ui.toolbar, stage: ui.stage, bounds: () => character.bounds() });
// Packaging: the first run's model install and startup problems, shown in the window.
if (desktop) setupStartup(root);

async function boot(): Promise<void> {
  try {
    profiles = desktop ? await desktopProfiles() : await fetchProfiles(httpBase(socketUrl));
    ui.setProfiles(profiles, state.character);
  } catch {
    ui.setProfiles([], null); // the switcher stays empty; chatting works without it
  }
  conn.start();
  // The session names its character in `session_ready` (replayed to every new client), and that shows its
  // model. Showing a guess first (the first profile) flashed another character, and the e2e could catch
  // it; the guess is only for a session that has not said within a moment.
  setTimeout(() => {
    if (loadedModel !== null) return;
    characterQueue = characterQueue.then(() =>
      showModel(modelUrl(findByCharacter(profiles, state.character)?.live2dModel ?? profiles[0]?.live2dModel ?? null)),
    );
  }, BOOT_MODEL_GRACE_MS);
}

/** How long a new page waits for the session to name its character before it shows the first profile's. */
const BOOT_MODEL_GRACE_MS = 2000;

// Read-only introspection for the end-to-end tests (and curious users in the console).
Object.assign(window, {
  __tomo: {
    get ready() {
      return modelReady;
    },
    expression: () => character.expression,
    param: (id: string) => character.param(id),
    runtime: () => character.runtime,
    shownModel: () => shownModel,
    cubism4Version: () => cubism4Version(),
    mouthTrace: () => character.mouthTrace.slice(),
    bounds: () => character.bounds(),
    lastSeq: () => conn.seq.lastSeq,
    duplicates: () => conn.seq.duplicates,
    gaps: () => conn.seq.gaps,
    appliedSeqs: () => appliedSeqs.slice(),
    transcript: () => state.transcript.map((m) => ({ ...m })),
    dropConnection: () => conn.dropForTest(),
  },
});

void boot();
