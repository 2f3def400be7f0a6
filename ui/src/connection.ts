// WebSocket connection to `tomo serve` with automatic reconnect and seq bookkeeping.
//
// Every session event carries a strictly increasing `seq`. We remember the last one applied and reconnect with
// `?last_seq=N`; the server replays what we missed. Replays can overlap what we already applied (e.g. frames
// in flight when the socket dropped), so events are applied only when their seq is new: each exactly once.
import { parseFrame, type ControlFrame, type EventEnvelope, type Op } from './wire';

export type ConnectionStatus = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** How the UI reaches the session: a WebSocket to `tomo serve` ([`Connection`]) or Tauri IPC in the desktop
 * app (`TauriConnection` in tauri.ts). Both apply events through a SeqTracker: each exactly once, in order. */
export interface Transport {
  readonly seq: SeqTracker;
  status: ConnectionStatus;
  start(): void;
  stop(): void;
  /** False when not connected; nothing is queued. */
  send(op: Op): boolean;
  dropForTest(): void;
}

/** Tracks the last applied seq and filters duplicates. Pure, so it is unit-tested on its own. */
export class SeqTracker {
  lastSeq: number | null = null;
  /** Events we skipped because we had already applied them (diagnostics). */
  duplicates = 0;
  /** Holes in the sequence (the server's buffer no longer had them, or it restarted). */
  gaps = 0;
  private firstOfConnection = true;

  /** Call when a new socket opens, before its first event. */
  newConnection(): void {
    this.firstOfConnection = true;
  }

  /** True when the event should be applied. `type` is the event's type (used to spot a restarted server). */
  accept(seq: number, type = ''): boolean {
    const first = this.firstOfConnection;
    this.firstOfConnection = false;
    if (this.lastSeq === null) {
      this.lastSeq = seq;
      return true;
    }
    if (seq <= this.lastSeq) {
      // A new server process starts its seq again with `session_ready`; a reconnect whose very first event is
      // that, at seq 0/1, means a restart: start over instead of dropping the whole new session. Anything
      // else old is an overlapping replay and is skipped, so no event is applied twice.
      if (first && type === 'session_ready' && seq <= 1) {
        this.lastSeq = seq;
        this.gaps += 1;
        return true;
      }
      this.duplicates += 1;
      return false;
    }
    if (seq > this.lastSeq + 1) this.gaps += 1;
    this.lastSeq = seq;
    return true;
  }
}

/** Adds `last_seq` to the socket URL, keeping any other query (e.g. a token). */
export function socketUrl(base: string, lastSeq: number | null): string {
  if (lastSeq === null) return base;
  const url = new URL(base);
  url.searchParams.set('last_seq', String(lastSeq));
  return url.toString();
}

/** Next reconnect delay: exponential from 250 ms, capped at 5 s, so a restarting server is found quickly. */
export function backoffMs(attempt: number): number {
  return Math.min(5000, 250 * 2 ** Math.max(0, attempt));
}

/** The part of the browser WebSocket the connection uses (injectable for tests). */
export interface SocketLike {
  readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onclose: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  send(data: string): void;
  close(): void;
}

export interface ConnectionOptions {
  url: string;
  onEvent: (ev: EventEnvelope) => void;
  onControl?: (frame: ControlFrame) => void;
  onStatus?: (status: ConnectionStatus) => void;
  makeSocket?: (url: string) => SocketLike;
  setTimer?: (fn: () => void, ms: number) => unknown;
}

const OPEN = 1;

export class Connection implements Transport {
  readonly seq = new SeqTracker();
  status: ConnectionStatus = 'closed';
  private socket: SocketLike | null = null;
  private attempt = 0;
  private stopped = false;
  private readonly opts: ConnectionOptions;

  constructor(opts: ConnectionOptions) {
    this.opts = opts;
  }

  start(): void {
    this.stopped = false;
    this.open('connecting');
  }

  stop(): void {
    this.stopped = true;
    this.socket?.close();
    this.setStatus('closed');
  }

  /** Sends an op; false when the socket is not open (the caller tells the user, nothing is queued: a stale
   * message delivered after a reconnect would surprise more than a visible "not connected"). */
  send(op: Op): boolean {
    if (!this.socket || this.socket.readyState !== OPEN) return false;
    this.socket.send(JSON.stringify(op));
    return true;
  }

  /** Drops the current socket as if the network failed (used by tests and the "reconnect" affordance). */
  dropForTest(): void {
    this.socket?.close();
  }

  private open(status: ConnectionStatus): void {
    this.setStatus(status);
    const make = this.opts.makeSocket ?? ((u: string) => new WebSocket(u) as unknown as SocketLike);
    let socket: SocketLike;
    try {
      socket = make(socketUrl(this.opts.url, this.seq.lastSeq));
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      this.attempt = 0;
      this.seq.newConnection();
      this.setStatus('open');
    };
    socket.onmessage = (msg) => {
      if (typeof msg.data !== 'string') return;
      const frame = parseFrame(msg.data);
      if (!frame) return;
      if (frame.kind === 'control') {
        this.opts.onControl?.(frame.frame);
      } else if (this.seq.accept(frame.event.seq, frame.event.type)) {
        this.opts.onEvent(frame.event);
      }
    };
    socket.onerror = () => {
      /* onclose follows and handles reconnecting */
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (!this.stopped) this.scheduleReconnect();
    };
  }

  private scheduleReconnect(): void {
    this.setStatus('reconnecting');
    const delay = backoffMs(this.attempt);
    this.attempt += 1;
    const setTimer = this.opts.setTimer ?? ((fn: () => void, ms: number) => setTimeout(fn, ms));
    setTimer(() => {
      if (!this.stopped) this.open('reconnecting');
    }, delay);
  }

  private setStatus(status: ConnectionStatus): void {
    if (this.status === status) return;
    this.status = status;
    this.opts.onStatus?.(status);
  }
}
