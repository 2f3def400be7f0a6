// Readable notices for the frames `tomo serve` sends outside the event stream (no `seq`; see the tomo-server
// crate docs; the types are tomo_protocol::ServerFrame in the bindings). They used to be shown as raw "Server: <type>: <json>", which for a refused op read like a crash.
import type { ControlFrame } from './wire';

export interface ControlNotice {
  level: 'error' | 'warning';
  text: string;
}

function num(v: unknown): string {
  return typeof v === 'number' ? String(v) : '?';
}

export function controlNotice(frame: ControlFrame): ControlNotice {
  switch (frame.type) {
    // The server refused one of our ops (bad profile path, unknown op); the connection stays open.
    case 'error':
      return { level: 'warning', text: `The server refused that: ${typeof frame.message === 'string' ? frame.message : 'no reason given'}` };
    case 'replay_gap':
      return {
        level: 'warning',
        text: `Events ${num(frame.missed_from)}–${num(frame.missed_to)} were missed while disconnected; the transcript may be incomplete.`,
      };
    case 'session_reset':
      return { level: 'warning', text: 'The server restarted: this is a new session.' };
    default: {
      const message = 'message' in frame ? frame.message : undefined;
      const msg = typeof message === 'string' ? message : JSON.stringify(frame);
      return { level: 'warning', text: `Server: ${frame.type.replace(/_/g, ' ')}: ${msg}` };
    }
  }
}
