// The UI's view state as a pure reducer over session events: subtitles, transcript, tool chips, latency
// and notices. No DOM here, so the same event sequence always gives the same state (unit-tested).
import type { ApprovalRequest, EventEnvelope, LatencyOrigin, Op, PluginState, SensorState, SensorTarget, SessionState, ToolStatus } from './wire';
import { joinParts, sentenceParts, type TextPart } from './spans';
import { cleanStreaming, consumeSentence } from './subtitles';

export interface ChatMessage {
  role: 'user' | 'assistant' | 'system';
  text: string;
  turnId?: number;
  /** The character spoke up on its own: `text` of the user line is the reason. */
  proactive?: boolean;
  /** The assistant's sentences as styled parts (narration, emphasis), when any sentence has such parts. */
  parts?: TextPart[];
  /** Assistant text still streaming. */
  streaming?: boolean;
  interrupted?: boolean;
}

export interface ToolChip {
  toolId: string;
  name: string;
  status: ToolStatus;
  result?: string;
  turnId: number;
}

export interface Notice {
  id: number;
  level: 'error' | 'warning';
  text: string;
}

/** A question the session asks the user (a plugin's new program, a tool with side effects). */
export interface Approval {
  id: number;
  kind: ApprovalRequest['kind'];
  title: string;
  /** The exact command line, or the tool's arguments. */
  detail: string;
}

export interface Latency {
  turnId: number;
  origin: LatencyOrigin;
  asrDoneMs: number | null;
  firstTokenMs: number | null;
  firstSentenceMs: number | null;
  firstAudioMs: number | null;
}

/** A sensor plugin as the UI shows it (the screen watcher's privacy indicator and stop button). */
export interface SensorView {
  plugin: string;
  state: SensorState['state'];
  /** What it watches, why it waits, or what went wrong. */
  detail: string;
}

export interface UiState {
  character: string | null;
  agentId: string | null;
  tools: string[];
  sessionState: SessionState;
  turnId: number | null;
  /** Sentences of the current turn already committed (clean display text). */
  committed: string[];
  /** The same sentences as parts to draw (narration styled). */
  committedParts: TextPart[][];
  /** Raw streamed text not yet committed as a sentence. */
  pendingRaw: string;
  transcript: ChatMessage[];
  chips: ToolChip[];
  latency: Latency | null;
  notices: Notice[];
  nextNoticeId: number;
  /** Open questions, oldest first; answered with `approveOp`. */
  approvals: Approval[];
  sensors: SensorView[];
  /** What the user can pick for the sensor to watch (the last `sensor_targets`). */
  sensorTargets: SensorTarget[];
  micMuted: boolean;
  doNotDisturb: boolean;
  /** The microphone listens only while the talk button is held. */
  pushToTalk: boolean;
  /** The microphone is ignored while the character speaks (no talking over it). */
  halfDuplex: boolean;
  /** What the character's plugins report about themselves (mood_chat: the mood), by plugin id. */
  plugins: Record<string, PluginState>;
  /** The last thing a sensor noticed (shown next to the indicator). */
  lastObservation: string | null;
  /** Turns the character started on its own (their user line is the reason, shown differently). */
  proactiveTurns: number[];
}

export const MAX_TRANSCRIPT = 200;
export const MAX_NOTICES = 5;

export function initialState(): UiState {
  return {
    character: null,
    agentId: null,
    tools: [],
    sessionState: 'idle',
    turnId: null,
    committed: [],
    committedParts: [],
    pendingRaw: '',
    transcript: [],
    chips: [],
    latency: null,
    notices: [],
    nextNoticeId: 1,
    approvals: [],
    sensors: [],
    sensorTargets: [],
    micMuted: false,
    doNotDisturb: false,
    pushToTalk: false,
    halfDuplex: false,
    plugins: {},
    lastObservation: null,
    proactiveTurns: [],
  };
}

/** True while any sensor is reading the screen: the UI must show it. */
export function isWatching(s: UiState): boolean {
  return s.sensors.some((x) => x.state === 'watching');
}

function sensorDetail(ev: SensorState): string {
  switch (ev.state) {
    case 'watching':
      return ev.target;
    case 'waiting':
      return ev.reason;
    case 'error':
      return ev.message;
    case 'stopped':
      return '';
  }
}

/** The current subtitle: the last committed sentence(s) plus the live line. */
export function subtitleText(s: UiState, keep = 2): { committed: string; live: string } {
  return { committed: s.committed.slice(-keep).join(' '), live: cleanStreaming(s.pendingRaw) };
}

/** The committed part of the subtitle as parts to draw. */
export function subtitleParts(s: UiState, keep = 2): TextPart[] {
  return joinParts(s.committedParts.slice(-keep));
}

const ERROR_TITLES: Record<string, string> = {
  llm_unreachable: 'Cannot reach the language model',
  llm_http: 'The language model returned an error',
  llm_stream: 'The language model stream broke off',
  llm_malformed: 'The language model sent something unreadable',
  tool: 'A tool failed',
  hook: 'A plugin hook failed',
  profile: 'Profile problem',
  plugin: 'Plugin problem',
  history: 'Could not save the conversation',
  output: 'Audio output problem',
  illegal_state: 'Not possible right now',
  internal: 'Internal error',
};

/** A readable one-line notice for an `error` event. */
export function describeError(code: string, message: string, recoverable: boolean): string {
  const title = ERROR_TITLES[code] ?? 'Error';
  return `${title}: ${message}${recoverable ? '' : ' (the session stopped)'}`;
}

/** How a question reads: what wants to happen, and exactly what would run. */
export function describeApproval(id: number, request: ApprovalRequest): Approval {
  switch (request.kind) {
    case 'run_command': {
      const env = request.env.length > 0 ? ` (given ${request.env.join(', ')})` : '';
      return {
        id,
        kind: request.kind,
        title: `Plugin "${request.plugin}" wants to run a program on this computer. Allow it?`,
        detail: `${request.command}${env}`,
      };
    }
    case 'tool_call':
      return {
        id,
        kind: request.kind,
        title: `"${request.tool_name}" (plugin "${request.plugin}") wants to act. Allow it this once?`,
        detail: JSON.stringify(request.args),
      };
  }
}

/** The answer to question `id`. */
export function approveOp(id: number, allow: boolean): Op {
  return { type: 'approve', id, allow };
}

export function pushNotice(s: UiState, level: Notice['level'], text: string): UiState {
  const notices = [...s.notices, { id: s.nextNoticeId, level, text }].slice(-MAX_NOTICES);
  return { ...s, notices, nextNoticeId: s.nextNoticeId + 1 };
}

export function dismissNotice(s: UiState, id: number): UiState {
  return { ...s, notices: s.notices.filter((n) => n.id !== id) };
}

function pushMessage(s: UiState, m: ChatMessage): UiState {
  return { ...s, transcript: [...s.transcript, m].slice(-MAX_TRANSCRIPT) };
}

/** Replaces the assistant message of `turnId` (creating it if needed). */
function updateAssistant(s: UiState, turnId: number, f: (m: ChatMessage) => ChatMessage): UiState {
  const idx = s.transcript.findIndex((m) => m.role === 'assistant' && m.turnId === turnId);
  if (idx < 0) {
    return pushMessage(s, f({ role: 'assistant', text: '', turnId, streaming: true }));
  }
  const transcript = s.transcript.slice();
  transcript[idx] = f(transcript[idx]);
  return { ...s, transcript };
}

export function reduce(s: UiState, ev: EventEnvelope): UiState {
  switch (ev.type) {
    case 'session_ready':
      // A new character: its own sensors and plugins report themselves afresh.
      return pushMessage(
        { ...s, character: ev.character, agentId: ev.agent_id, tools: ev.tools, sensors: [], sensorTargets: [], plugins: {}, lastObservation: null },
        { role: 'system', text: `${ev.character} is here.` },
      );
    case 'state_changed':
      return { ...s, sessionState: ev.to };
    case 'turn_started': {
      const proactive = s.proactiveTurns.includes(ev.turn_id);
      return pushMessage(
        { ...s, turnId: ev.turn_id, committed: [], committedParts: [], pendingRaw: '' },
        proactive
          ? { role: 'system', text: `${s.character ?? 'The character'} speaks up (${ev.user_text.replace(/^\[proactive\]\s*/, '')})`, turnId: ev.turn_id, proactive }
          : { role: 'user', text: ev.user_text, turnId: ev.turn_id },
      );
    }
    case 'user_transcript':
      return s; // the turn_started that follows carries the same text into the transcript
    case 'latency_report':
      return {
        ...s,
        latency: {
          turnId: ev.turn_id,
          origin: ev.origin,
          asrDoneMs: ev.asr_done_ms ?? null,
          firstTokenMs: ev.first_token_ms ?? null,
          firstSentenceMs: ev.first_sentence_ms ?? null,
          firstAudioMs: ev.first_audio_ms ?? null,
        },
      };
    case 'text_delta':
      return { ...s, turnId: ev.turn_id, pendingRaw: s.pendingRaw + ev.delta };
    case 'reasoning_delta':
      return s;
    case 'sentence': {
      const text = ev.sentence.display_text.trim();
      if (text === '') return s;
      const parts = sentenceParts(text, ev.sentence.display_spans);
      const next = {
        ...s,
        committed: [...s.committed, text],
        committedParts: [...s.committedParts, parts],
        pendingRaw: consumeSentence(s.pendingRaw, text),
      };
      const styled = parts.some((p) => p.style !== 'speech');
      return updateAssistant(next, ev.turn_id, (m) => {
        // Parts are kept from the first styled sentence on, so the whole message can be drawn from them.
        const before = m.parts ?? (styled ? sentenceParts(m.text, null) : undefined);
        return {
          ...m,
          text: m.text ? `${m.text} ${text}` : text,
          parts: before ? joinParts([before, parts].filter((x) => x.length > 0)) : undefined,
        };
      });
    }
    case 'tool_call': {
      const c = ev.call;
      const chip: ToolChip = {
        toolId: c.tool_id,
        name: c.tool_name,
        status: c.status,
        result: c.result ?? undefined,
        turnId: ev.turn_id,
      };
      const idx = s.chips.findIndex((x) => x.toolId === c.tool_id);
      const chips = s.chips.slice();
      if (idx < 0) chips.push(chip);
      else chips[idx] = chip;
      // Keep the chips of recent turns only; older ones are in the transcript's past.
      return { ...s, chips: chips.filter((x) => x.turnId >= ev.turn_id - 2) };
    }
    case 'hook_failed':
      return pushNotice(s, 'warning', `Plugin hook "${ev.hook}" failed (${ev.stage}): ${ev.message}`);
    case 'turn_finished': {
      const done = updateAssistant(s, ev.turn_id, (m) => ({
        ...m,
        text: m.text || cleanStreaming(ev.text).trim(),
        streaming: false,
      }));
      return { ...done, pendingRaw: '' };
    }
    case 'turn_aborted': {
      const done = updateAssistant(s, ev.turn_id, (m) => ({
        ...m,
        text: m.text || cleanStreaming(ev.partial_text).trim(),
        streaming: false,
        interrupted: true,
      }));
      return { ...done, pendingRaw: '' };
    }
    case 'audio_started':
    case 'audio_finished':
    case 'playback_drained':
    case 'answer_held':
    case 'answer_resumed':
      return s; // drive the character (director.ts), not the text view
    case 'error':
      return pushNotice(s, 'error', describeError(ev.code, ev.message, ev.recoverable));
    case 'mode_changed':
      return {
        ...s,
        micMuted: ev.mic_muted,
        doNotDisturb: ev.do_not_disturb,
        pushToTalk: ev.push_to_talk ?? false,
        halfDuplex: ev.half_duplex ?? false,
      };
    case 'push_to_talk':
      return s; // for the microphone front end
    case 'observation':
      return { ...s, lastObservation: ev.text };
    case 'sensor_status': {
      const view: SensorView = { plugin: ev.plugin, state: ev.state, detail: sensorDetail(ev) };
      const sensors = [...s.sensors.filter((x) => x.plugin !== ev.plugin), view];
      const next = { ...s, sensors, lastObservation: ev.state === 'watching' ? s.lastObservation : null };
      return ev.state === 'error' ? pushNotice(next, 'warning', `Screen watcher: ${ev.message}`) : next;
    }
    case 'sensor_targets':
      return { ...s, sensorTargets: ev.targets };
    case 'proactive':
      return { ...s, proactiveTurns: [...s.proactiveTurns, ev.turn_id].slice(-20) };
    case 'proactive_skipped':
      return s;
    case 'plugin_state':
      return { ...s, plugins: { ...s.plugins, [ev.plugin]: ev.state } };
    case 'notice':
      // Devices and models: problems as notices, good news ("microphone back") in the transcript.
      return ev.level === 'info'
        ? pushMessage(s, { role: 'system', text: ev.message })
        : pushNotice(s, ev.level, ev.message);
    case 'llm_changed':
      return pushMessage(s, { role: 'system', text: `Now thinking with ${ev.model} at ${ev.base_url}.` });
    case 'approval_requested':
      if (s.approvals.some((a) => a.id === ev.id)) return s;
      return { ...s, approvals: [...s.approvals, describeApproval(ev.id, ev.request)] };
    case 'approval_resolved':
      return { ...s, approvals: s.approvals.filter((a) => a.id !== ev.id) };
  }
}
