// Parsing what arrives on the wire. The types are the generated bindings (src/bindings.ts, from the Rust
// protocol crate): this file defines none of its own, it only tells events from server frames at run time.
import type { Event, EventEnvelope, ServerFrame } from './bindings';

export type { Action, ApprovalRequest, Event, EventEnvelope, Op, PluginState, SensorState, SensorTarget, ServerFrame } from './bindings';
export type { LatencyOrigin, SessionState, ToolStatus } from './bindings';

/** A frame outside the event stream: one the server defines, or one a newer server added. */
export type ControlFrame = ServerFrame | { type: string; seq?: undefined; [k: string]: unknown };

export type Frame = { kind: 'event'; event: EventEnvelope } | { kind: 'control'; frame: ControlFrame };

// Every event type, checked against the bindings by the compiler both ways (a missing or an unknown key is
// a type error), so a newer server's unknown event is told apart from a known one.
const EVENT_TYPES: Record<Event['type'], true> = {
  session_ready: true,
  state_changed: true,
  turn_started: true,
  user_transcript: true,
  latency_report: true,
  text_delta: true,
  reasoning_delta: true,
  sentence: true,
  tool_call: true,
  hook_failed: true,
  turn_finished: true,
  turn_aborted: true,
  audio_started: true,
  audio_finished: true,
  playback_drained: true,
  answer_held: true,
  answer_resumed: true,
  error: true,
  mode_changed: true,
  push_to_talk: true,
  observation: true,
  notice: true,
  sensor_targets: true,
  sensor_status: true,
  proactive: true,
  proactive_skipped: true,
  llm_changed: true,
  plugin_state: true,
  approval_requested: true,
  approval_resolved: true,
};

function isEventType(type: string): type is Event['type'] {
  return Object.prototype.hasOwnProperty.call(EVENT_TYPES, type);
}

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
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const obj = value as Record<string, unknown>;
  if (typeof obj.type !== 'string') return null;
  if (typeof obj.seq === 'number' && Number.isInteger(obj.seq) && isEventType(obj.type)) {
    return { kind: 'event', event: obj as EventEnvelope };
  }
  return { kind: 'control', frame: obj as ControlFrame };
}
