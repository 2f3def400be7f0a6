// TypeScript mirror of crates/tomo-core/src/protocol.rs (serde: internally tagged by `type`, snake_case).
// Events arrive wrapped as `{"seq": N, "type": "...", ...fields}`; ops go out as `{"type": "...", ...}`.
// Keep this file in step with the Rust enum: it is the only place the UI names wire types. Types that are
// new on the wire come from the generated bindings (ui/src/bindings.ts) instead of being mirrored here.
import type { DisplaySpan } from './bindings';

export type TurnId = number;
export type SessionState = 'idle' | 'listening' | 'thinking' | 'speaking';
export type ToolStatus = 'running' | 'completed' | 'error';
export type TurnEnd = 'completed' | 'round_limit';
export type LatencyOrigin = 'speech_end' | 'turn_start';
export type HookStage = 'before_turn' | 'after_turn' | 'after_playback';
export type ErrorCode =
  | 'llm_unreachable'
  | 'llm_http'
  | 'llm_stream'
  | 'llm_malformed'
  | 'tool'
  | 'hook'
  | 'profile'
  | 'plugin'
  | 'history'
  | 'output'
  | 'illegal_state'
  | 'internal';

export type Action = { kind: 'emotion'; name: string } | { kind: 'mood'; value: number; relative: boolean };

export interface Region {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** What a sensor (the screen watcher) is doing; the privacy indicator shows `watching`. */
export type SensorState =
  | { state: 'watching'; target: string }
  | { state: 'waiting'; reason: string }
  | { state: 'stopped' }
  | { state: 'error'; message: string };

export interface SensorTarget {
  title: string;
  detail: string;
  width: number;
  height: number;
}

export type ProactiveSkip = 'busy' | 'listening' | 'mic_muted' | 'do_not_disturb';

export interface ToolCallEvent {
  tool_id: string;
  tool_name: string;
  args: unknown;
  status: ToolStatus;
  result?: string;
  round: number;
}

export interface Sentence {
  index: number;
  display_text: string;
  tts_text: string | null;
  actions: Action[];
  /** The display text part by part when it has narration or emphasis (absent: all speech). */
  display_spans?: DisplaySpan[];
}

export type Event =
  | { type: 'session_ready'; character: string; agent_id: string; tools: string[] }
  | { type: 'state_changed'; from: SessionState; to: SessionState }
  | { type: 'turn_started'; turn_id: TurnId; user_text: string }
  | { type: 'user_transcript'; text: string }
  | {
      type: 'latency_report';
      turn_id: TurnId;
      origin: LatencyOrigin;
      asr_done_ms: number | null;
      first_token_ms: number | null;
      first_sentence_ms: number | null;
      first_audio_ms: number | null;
    }
  | { type: 'text_delta'; turn_id: TurnId; delta: string }
  | { type: 'reasoning_delta'; turn_id: TurnId; delta: string }
  | { type: 'sentence'; turn_id: TurnId; sentence: Sentence }
  | { type: 'tool_call'; turn_id: TurnId; call: ToolCallEvent }
  | { type: 'hook_failed'; turn_id: TurnId; hook: string; stage: HookStage; message: string }
  | { type: 'turn_finished'; turn_id: TurnId; end: TurnEnd; text: string }
  | { type: 'turn_aborted'; turn_id: TurnId; partial_text: string }
  | {
      type: 'audio_started';
      turn_id: TurnId;
      sentence_index: number;
      duration_ms: number;
      frame_ms: number;
      envelope: number[];
      actions: Action[];
    }
  | { type: 'audio_finished'; turn_id: TurnId; sentence_index: number }
  | { type: 'playback_drained'; turn_id: TurnId }
  | { type: 'error'; code: ErrorCode; message: string; recoverable: boolean }
  | { type: 'mode_changed'; mic_muted: boolean; do_not_disturb: boolean; push_to_talk?: boolean }
  | { type: 'push_to_talk'; pressed: boolean }
  | { type: 'observation'; source: string; at_ms: number; window: string; text: string; region?: Region }
  | ({ type: 'sensor_status'; plugin: string } & SensorState)
  | { type: 'sensor_targets'; plugin: string; targets: SensorTarget[] }
  | { type: 'proactive'; turn_id: TurnId; reason: string }
  | { type: 'proactive_skipped'; reason: string; why: ProactiveSkip }
  | { type: 'mood_changed'; score: number; reason: string }
  | { type: 'llm_changed'; base_url: string; model: string }
  | { type: 'notice'; level: 'info' | 'warning' | 'error'; message: string };

export type EventEnvelope = Event & { seq: number };

export type Op =
  | { type: 'user_text'; text: string }
  | { type: 'speech_started' }
  | { type: 'speech_ended'; transcript: string; asr_ms: number }
  | { type: 'interrupt' }
  | { type: 'switch_profile'; path: string }
  | { type: 'shutdown' }
  | { type: 'set_mic_muted'; muted: boolean }
  | { type: 'set_do_not_disturb'; enabled: boolean }
  | { type: 'set_push_to_talk'; enabled: boolean }
  | { type: 'push_to_talk'; pressed: boolean }
  | { type: 'proactive_turn'; reason: string }
  | { type: 'set_sensor'; plugin: string; enabled: boolean; target?: string }
  | { type: 'list_sensor_targets'; plugin: string }
  | { type: 'notice'; level: 'info' | 'warning' | 'error'; message: string }
  | { type: 'set_llm'; base_url: string; model: string; api_key_env?: string };

const EVENT_TYPES = new Set<string>([
  'session_ready',
  'state_changed',
  'turn_started',
  'user_transcript',
  'latency_report',
  'text_delta',
  'reasoning_delta',
  'sentence',
  'tool_call',
  'hook_failed',
  'turn_finished',
  'turn_aborted',
  'audio_started',
  'audio_finished',
  'playback_drained',
  'error',
  'mode_changed',
  'push_to_talk',
  'observation',
  'sensor_status',
  'sensor_targets',
  'proactive',
  'proactive_skipped',
  'mood_changed',
  'llm_changed',
  'notice',
]);

/** A server frame that is not a session event (e.g. a replay-gap notice or a transport error frame). */
export interface ControlFrame {
  type: string;
  seq?: undefined;
  [k: string]: unknown;
}

export type Frame = { kind: 'event'; event: EventEnvelope } | { kind: 'control'; frame: ControlFrame };

/** Parses one WebSocket text frame. Never throws: malformed input becomes `null` so one bad frame can't stop
 * the stream. Frames with a numeric `seq` and a known `type` are events; anything else with a `type` is a
 * control frame (transport notices), which is not counted in seq bookkeeping. */
export function parseFrame(text: string): Frame | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const obj = value as Record<string, unknown>;
  if (typeof obj.type !== 'string') return null;
  if (typeof obj.seq === 'number' && Number.isInteger(obj.seq) && EVENT_TYPES.has(obj.type)) {
    return { kind: 'event', event: obj as unknown as EventEnvelope };
  }
  return { kind: 'control', frame: obj as ControlFrame };
}
