// DOM for everything around the character: built once, then `render(state)` updates it. Text always goes in
// through textContent (never innerHTML): model output and tool results are untrusted.
import type { ConnectionStatus } from './connection';
import type { ProfileInfo } from './profiles';
import { PRESETS, validateBaseUrl, validateKeyEnv, type LlmSettings } from './settings';
import type { TextPart } from './spans';
import { isWatching, subtitleParts, subtitleText, type UiState } from './state';

export interface UiHandlers {
  onSend(text: string): void;
  onInterrupt(): void;
  onMicToggle(muted: boolean): void;
  onSwitchProfile(path: string): void;
  /** Start (with a window title pattern) or stop a sensor plugin, e.g. the screen watcher. */
  onSensor(plugin: string, enabled: boolean, target?: string): void;
  /** Ask the sensor which windows it could watch. */
  onListTargets(plugin: string): void;
  onDoNotDisturb(enabled: boolean): void;
  /** Push-to-talk mode on/off, and the talk button held (true) or let go (false). */
  onPushToTalkMode(enabled: boolean): void;
  onHalfDuplex(enabled: boolean): void;
  onPushToTalk(pressed: boolean): void;
  onSaveSettings(s: LlmSettings): void;
  onDismissNotice(id: number): void;
  /** The user's answer to an approval question. */
  onApprove(id: number, allow: boolean): void;
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

/** Speech as text, narration as a styled span (no asterisks or brackets), emphasis as `<em>`. */
function drawParts(parts: TextPart[]): (Node | string)[] {
  return parts.map((p) => {
    switch (p.style) {
      case 'speech':
        return p.text;
      case 'narration':
        return el('span', { class: 'narration', 'data-testid': 'narration' }, p.text.trim());
      case 'emphasis':
        return el('em', {}, p.text);
    }
  });
}

const STATUS_TEXT: Record<ConnectionStatus, string> = {
  connecting: 'Connecting…',
  open: 'Connected',
  reconnecting: 'Reconnecting…',
  closed: 'Disconnected',
};

export class Ui {
  readonly stage: HTMLElement;
  /** The header bar (the desktop app adds its pet-mode toggle here). */
  readonly toolbar: HTMLElement;
  private readonly h: UiHandlers;
  private readonly conn = el('span', { class: 'conn', 'data-testid': 'connection', 'data-status': 'closed' });
  private readonly profileSelect = el('select', { 'data-testid': 'profile-select', 'aria-label': 'Character' });
  private readonly micBtn = el('button', { type: 'button', 'data-testid': 'mic', 'aria-pressed': 'false' }, 'Mic on');
  private readonly subCommitted = el('span', { class: 'committed', 'data-testid': 'subtitle-committed' });
  private readonly subLive = el('span', { class: 'live', 'data-testid': 'subtitle-live' });
  private readonly transcript = el('ol', { class: 'transcript', 'data-testid': 'transcript' });
  private readonly chips = el('ul', { class: 'chips', 'data-testid': 'tool-chips' });
  private readonly notices = el('div', { class: 'notices', 'data-testid': 'notices', role: 'alert' });
  private readonly latency = el('div', { class: 'latency', 'data-testid': 'latency' });
  private readonly stateBadge = el('span', { class: 'state', 'data-testid': 'session-state' });
  private readonly input = el('input', { type: 'text', placeholder: 'Say something…', 'data-testid': 'input', 'aria-label': 'Message' });
  private readonly settings = el('dialog', { class: 'settings', 'data-testid': 'settings' });
  // The screen watcher's privacy indicator: visible whenever a sensor reads the screen, one click stops it.
  private readonly watchBox = el('span', { class: 'watch', 'data-testid': 'watch', hidden: '' });
  private readonly watchLabel = el('span', { class: 'watch-label', 'data-testid': 'watch-label' });
  private readonly watchStop = el('button', { type: 'button', class: 'danger', 'data-testid': 'watch-stop' }, 'Stop watching');
  private readonly watchTitle = el('input', { type: 'text', placeholder: 'Window title…', 'data-testid': 'watch-title', 'aria-label': 'Window to watch' });
  private readonly watchStart = el('button', { type: 'button', 'data-testid': 'watch-start' }, 'Watch');
  private readonly watchList = el('button', { type: 'button', 'data-testid': 'watch-list' }, 'Windows…');
  private readonly watchPick = el('select', { 'data-testid': 'watch-pick', 'aria-label': 'Window to watch', hidden: '' });
  private renderedTargets = '';
  private readonly dndBtn = el('button', { type: 'button', 'data-testid': 'dnd', 'aria-pressed': 'false' }, 'Quiet: off');
  private readonly pttModeBtn = el('button', { type: 'button', 'data-testid': 'ptt-mode', 'aria-pressed': 'false' }, 'Push to talk: off');
  /** Talking over the character interrupts it (full duplex), or the microphone waits until it is done. */
  private readonly duplexBtn = el('button', { type: 'button', 'data-testid': 'duplex', 'aria-pressed': 'true' }, 'Interrupt: on');
  private readonly talkBtn = el('button', { type: 'button', 'data-testid': 'talk', hidden: '' }, 'Hold to talk');
  /** What the character's plugins report (mood_chat: "mood 82"). */
  private readonly pluginBadges = el('span', { class: 'plugin-states', 'data-testid': 'plugin-states' });
  private renderedPlugins = '';
  private muted = false;
  private renderedTranscript = '';
  private watchedPlugin = 'screen_watch';

  constructor(root: HTMLElement, handlers: UiHandlers, settings: LlmSettings) {
    this.h = handlers;
    this.stage = el('div', { class: 'stage', 'data-testid': 'stage' });
    const subtitles = el('div', { class: 'subtitles', 'data-testid': 'subtitles' }, this.subCommitted, ' ', this.subLive);
    const settingsBtn = el('button', { type: 'button', 'data-testid': 'settings-open' }, 'Settings');
    const interrupt = el('button', { type: 'button', class: 'danger', 'data-testid': 'interrupt' }, 'Stop');
    const send = el('button', { type: 'submit', 'data-testid': 'send' }, 'Send');
    const form = el('form', { class: 'composer' }, this.input, send, interrupt);
    this.toolbar = el('header', { class: 'bar' }, this.conn, this.stateBadge, this.watchBox, this.pluginBadges,
      this.profileSelect, this.micBtn, this.pttModeBtn, this.talkBtn, this.duplexBtn, this.dndBtn, settingsBtn);

    root.append(
      this.toolbar,
      el('main', { class: 'layout' },
        el('section', { class: 'character' }, this.stage, subtitles, this.latency),
        el('aside', { class: 'side' }, this.chips, this.transcript, form)),
      this.notices,
      this.settings,
    );
    this.buildSettings(settings);

    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const text = this.input.value.trim();
      if (!text) return;
      this.input.value = '';
      handlers.onSend(text);
    });
    interrupt.addEventListener('click', () => handlers.onInterrupt());
    this.micBtn.addEventListener('click', () => {
      this.muted = !this.muted;
      this.micBtn.textContent = this.muted ? 'Mic muted' : 'Mic on';
      this.micBtn.setAttribute('aria-pressed', String(this.muted));
      handlers.onMicToggle(this.muted);
    });
    this.profileSelect.addEventListener('change', () => {
      if (this.profileSelect.value) handlers.onSwitchProfile(this.profileSelect.value);
    });
    settingsBtn.addEventListener('click', () => this.settings.showModal());
    this.watchStop.addEventListener('click', () => handlers.onSensor(this.watchedPlugin, false));
    this.watchStart.addEventListener('click', () => {
      const title = this.watchTitle.value.trim();
      handlers.onSensor(this.watchedPlugin, true, title || undefined);
    });
    this.pttModeBtn.addEventListener('click', () => {
      handlers.onPushToTalkMode(this.pttModeBtn.getAttribute('aria-pressed') !== 'true');
    });
    // Held with the pointer (mouse, touch, pen); any way of letting go ends the utterance.
    let held = false;
    const hold = (pressed: boolean) => {
      if (held === pressed) return;
      held = pressed;
      this.talkBtn.classList.toggle('held', pressed);
      handlers.onPushToTalk(pressed);
    };
    this.talkBtn.addEventListener('pointerdown', () => hold(true));
    for (const ev of ['pointerup', 'pointerleave', 'pointercancel'] as const) {
      this.talkBtn.addEventListener(ev, () => hold(false));
    }
    this.duplexBtn.addEventListener('click', () => {
      // Pressed = interrupting allowed; pressing it turns half-duplex on.
      handlers.onHalfDuplex(this.duplexBtn.getAttribute('aria-pressed') === 'true');
    });
    this.dndBtn.addEventListener('click', () => {
      handlers.onDoNotDisturb(this.dndBtn.getAttribute('aria-pressed') !== 'true');
    });
    this.watchList.addEventListener('click', () => handlers.onListTargets(this.watchedPlugin));
    this.watchPick.addEventListener('change', () => {
      if (this.watchPick.value) handlers.onSensor(this.watchedPlugin, true, this.watchPick.value);
    });
    this.watchBox.append(this.watchLabel, this.watchStop, this.watchTitle, this.watchStart, this.watchList, this.watchPick);
    this.setStatus('closed');
  }

  setStatus(s: ConnectionStatus): void {
    this.conn.textContent = STATUS_TEXT[s];
    this.conn.dataset.status = s;
  }

  setProfiles(list: ProfileInfo[], current: string | null): void {
    this.profileSelect.replaceChildren(
      el('option', { value: '' }, list.length ? 'Character…' : 'No profiles'),
      ...list.map((p) => {
        const o = el('option', { value: p.path }, p.name);
        if (p.name === current) o.selected = true;
        return o;
      }),
    );
  }

  render(s: UiState): void {
    const sub = subtitleText(s);
    this.subCommitted.replaceChildren(...drawParts(subtitleParts(s)));
    this.subLive.textContent = sub.live;
    this.stateBadge.textContent = s.character ? `${s.character} · ${s.sessionState}` : s.sessionState;
    this.stateBadge.dataset.state = s.sessionState;
    this.renderSensors(s);
    this.micBtn.textContent = s.micMuted ? 'Mic muted' : 'Mic on';
    this.micBtn.setAttribute('aria-pressed', String(s.micMuted));
    this.muted = s.micMuted;
    this.pttModeBtn.textContent = s.pushToTalk ? 'Push to talk: on' : 'Push to talk: off';
    this.pttModeBtn.setAttribute('aria-pressed', String(s.pushToTalk));
    this.talkBtn.hidden = !s.pushToTalk;
    this.duplexBtn.textContent = s.halfDuplex ? 'Interrupt: off' : 'Interrupt: on';
    this.duplexBtn.setAttribute('aria-pressed', String(!s.halfDuplex));
    this.dndBtn.textContent = s.doNotDisturb ? 'Quiet: on' : 'Quiet: off';
    this.dndBtn.setAttribute('aria-pressed', String(s.doNotDisturb));
    const plugins = JSON.stringify(s.plugins);
    if (plugins !== this.renderedPlugins) {
      this.renderedPlugins = plugins;
      this.pluginBadges.replaceChildren(
        ...Object.entries(s.plugins).map(([plugin, state]) =>
          el(
            'span',
            { class: 'plugin-state', 'data-testid': `plugin-${plugin}`, title: state.reason ?? '' },
            state.value == null ? state.label : `${state.label} ${Math.round(state.value)}`,
          ),
        ),
      );
    }

    // The transcript only grows or changes at its end; rebuild only when it changed at all.
    const key = JSON.stringify(s.transcript);
    if (key !== this.renderedTranscript) {
      this.renderedTranscript = key;
      this.transcript.replaceChildren(
        ...s.transcript.map((m) => {
          const li = el('li', { class: `msg ${m.role}${m.streaming ? ' streaming' : ''}${m.interrupted ? ' interrupted' : ''}` }, ...(m.parts ? drawParts(m.parts) : [m.text]));
          return li;
        }),
      );
      this.transcript.scrollTop = this.transcript.scrollHeight;
    }

    this.chips.replaceChildren(
      ...s.chips.map((c) => {
        const li = el('li', { class: `chip ${c.status}`, 'data-tool-id': c.toolId, 'data-status': c.status }, `${c.name} · ${c.status}`);
        if (c.result) li.title = c.result;
        return li;
      }),
    );

    this.notices.replaceChildren(
      // Questions first: nothing happens until the user answers (a tool call's question times out as no).
      ...s.approvals.map((a) => {
        const allow = el('button', { type: 'button', class: 'allow', 'data-testid': 'approval-allow' }, 'Allow');
        const deny = el('button', { type: 'button', class: 'deny', 'data-testid': 'approval-deny' }, 'Deny');
        allow.addEventListener('click', () => this.h.onApprove(a.id, true));
        deny.addEventListener('click', () => this.h.onApprove(a.id, false));
        return el(
          'div',
          { class: `notice approval ${a.kind}`, 'data-testid': 'approval', 'data-approval-id': String(a.id) },
          el('span', {}, a.title, el('code', {}, a.detail)),
          allow,
          deny,
        );
      }),
      ...s.notices.map((n) => {
        const close = el('button', { type: 'button', 'aria-label': 'Dismiss' }, '×');
        close.addEventListener('click', () => this.h.onDismissNotice(n.id));
        return el('div', { class: `notice ${n.level}`, 'data-testid': 'notice' }, el('span', {}, n.text), close);
      }),
    );

    const l = s.latency;
    if (l) {
      const ms = (v: number | null) => (v === null ? '–' : `${v} ms`);
      const from = l.origin === 'speech_end' ? 'after speech' : 'after send';
      this.latency.textContent =
        `turn ${l.turnId} (${from}): ` +
        (l.asrDoneMs !== null ? `ASR ${ms(l.asrDoneMs)} · ` : '') +
        `first token ${ms(l.firstTokenMs)} · first sentence ${ms(l.firstSentenceMs)} · first audio ${ms(l.firstAudioMs)}`;
    }
  }

  /** The screen watcher's indicator: "Watching <window>" + stop while it reads the screen; otherwise a
   * window-title box to start it (only when the character has a sensor at all). */
  private renderSensors(s: UiState): void {
    const sensor = s.sensors.find((x) => x.state === 'watching') ?? s.sensors[0];
    this.watchBox.hidden = !sensor;
    if (!sensor) return;
    this.watchedPlugin = sensor.plugin;
    const watching = isWatching(s);
    this.watchBox.dataset.state = sensor.state;
    this.watchLabel.textContent =
      sensor.state === 'watching' ? `👁 Watching ${sensor.detail}`
        : sensor.state === 'waiting' ? `Waiting: ${sensor.detail}`
          : sensor.state === 'error' ? 'Screen watcher unavailable'
            : 'Not watching';
    if (watching && s.lastObservation) this.watchLabel.title = `Last seen: ${s.lastObservation}`;
    this.watchStop.hidden = !(watching || sensor.state === 'waiting');
    this.watchTitle.hidden = watching;
    this.watchStart.hidden = watching;
    this.watchList.hidden = watching;
    this.watchPick.hidden = watching || s.sensorTargets.length === 0;
    const key = JSON.stringify(s.sensorTargets);
    if (key !== this.renderedTargets) {
      this.renderedTargets = key;
      this.watchPick.replaceChildren(
        el('option', { value: '' }, 'Pick a window…'),
        ...s.sensorTargets.map((t) =>
          el('option', { value: t.title }, `${t.title}${t.detail ? ` — ${t.detail}` : ''} (${t.width}×${t.height})`)),
      );
    }
  }

  private buildSettings(current: LlmSettings): void {
    const preset = el('select', { 'data-testid': 'preset' },
      el('option', { value: '' }, 'Custom'),
      ...PRESETS.map((p) => el('option', { value: p.id }, p.label)));
    const base = el('input', { type: 'url', 'data-testid': 'base-url', 'aria-label': 'Base URL' });
    const model = el('input', { type: 'text', 'data-testid': 'model', 'aria-label': 'Model' });
    const keyEnv = el('input', { type: 'text', 'data-testid': 'key-env', 'aria-label': 'API key variable', placeholder: 'e.g. OPENAI_API_KEY' });
    const hint = el('p', { class: 'hint' });
    const error = el('p', { class: 'error', 'data-testid': 'settings-error' });
    base.value = current.baseUrl;
    model.value = current.model;
    keyEnv.value = current.keyEnv;
    const keyHint = (needsKey: boolean) => {
      hint.textContent = needsKey
        ? 'This endpoint needs an API key. The key never passes through this page nor into a profile: put it in ' +
          'an environment variable of Tomo (e.g. OPENAI_API_KEY) before starting it and name the variable here.'
        : 'Local endpoint: no API key needed.';
    };
    keyHint(PRESETS.find((p) => p.baseUrl === current.baseUrl)?.needsKey ?? false);
    preset.addEventListener('change', () => {
      const p = PRESETS.find((x) => x.id === preset.value);
      if (!p) return;
      base.value = p.baseUrl;
      model.value = p.exampleModel;
      keyEnv.value = p.keyEnv ?? '';
      keyHint(p.needsKey);
    });
    const save = el('button', { type: 'button', 'data-testid': 'settings-save' }, 'Save');
    const cancel = el('button', { type: 'button' }, 'Close');
    save.addEventListener('click', () => {
      const problem = validateBaseUrl(base.value.trim()) ?? validateKeyEnv(keyEnv.value);
      error.textContent = problem ?? '';
      if (problem) return;
      this.h.onSaveSettings({ baseUrl: base.value.trim(), model: model.value.trim(), keyEnv: keyEnv.value.trim() });
      this.settings.close();
    });
    cancel.addEventListener('click', () => this.settings.close());
    this.settings.append(
      el('h2', {}, 'Language model'),
      el('label', {}, 'Preset ', preset),
      el('label', {}, 'Base URL ', base),
      el('label', {}, 'Model ', model),
      el('label', {}, 'API key variable ', keyEnv),
      hint,
      el('p', { class: 'hint' }, 'Applied to the running session at once; remembered here (URL, model and the ' +
        'variable\'s name only) for the next start.'),
      error,
      el('div', { class: 'row' }, save, cancel),
    );
  }
}
