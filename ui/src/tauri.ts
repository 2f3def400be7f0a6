// The desktop app's transport: Tauri IPC through the generated bindings (src/bindings.ts) instead of a
// WebSocket. Same contract as `Connection`: every session event applied exactly once, in seq order, through
// the same SeqTracker. On start (and after a webview reload) it listens first and buffers live events, then
// asks the backend for everything after the last applied seq (`events_since`), applies that, then the
// buffer; overlaps between the two are duplicates the tracker drops.
import type { ConnectionStatus, Transport } from './connection';
import { SeqTracker } from './connection';
import type { EventsSince } from './bindings';
import type { ControlFrame, EventEnvelope, Op } from './wire';

/** What the transport needs from the backend (the generated bindings, or a fake in tests). */
export interface TauriIpc {
  listen(onEvent: (ev: EventEnvelope) => void): Promise<() => void>;
  eventsSince(lastSeq: number): Promise<EventsSince>;
  /** Resolves to an error message, or null when the op was accepted. */
  sendOp(op: Op): Promise<string | null>;
}

export interface TauriConnectionOptions {
  ipc: TauriIpc;
  onEvent: (ev: EventEnvelope) => void;
  onControl?: (frame: ControlFrame) => void;
  onStatus?: (status: ConnectionStatus) => void;
}

export class TauriConnection implements Transport {
  readonly seq = new SeqTracker();
  status: ConnectionStatus = 'closed';
  private unlisten: (() => void) | null = null;
  private readonly opts: TauriConnectionOptions;

  constructor(opts: TauriConnectionOptions) {
    this.opts = opts;
  }

  start(): void {
    void this.open('connecting');
  }

  stop(): void {
    this.unlisten?.();
    this.unlisten = null;
    this.setStatus('closed');
  }

  send(op: Op): boolean {
    if (this.status !== 'open') return false;
    void this.opts.ipc.sendOp(op).then(
      (error) => {
        if (error !== null) this.refused(error);
      },
      (e: unknown) => this.refused(e instanceof Error ? e.message : String(e)),
    );
    return true;
  }

  /** Re-runs the replay handshake as a reloaded webview would (tests). */
  dropForTest(): void {
    this.unlisten?.();
    this.unlisten = null;
    void this.open('reconnecting');
  }

  private refused(message: string): void {
    this.opts.onControl?.({ type: 'error', code: 'invalid_op', message, recoverable: true });
  }

  private async open(status: ConnectionStatus): Promise<void> {
    this.setStatus(status);
    let buffering = true;
    const buffered: EventEnvelope[] = [];
    try {
      this.unlisten = await this.opts.ipc.listen((ev) => {
        if (buffering) buffered.push(ev);
        else this.deliver(ev);
      });
      const replay = await this.opts.ipc.eventsSince(this.seq.lastSeq ?? 0);
      this.seq.newConnection();
      if (replay.missed_from !== null && replay.missed_to !== null) {
        this.opts.onControl?.({ type: 'replay_gap', missed_from: replay.missed_from, missed_to: replay.missed_to });
      }
      for (const ev of replay.events) this.deliver(ev);
      for (const ev of buffered) this.deliver(ev);
      buffering = false;
      this.setStatus('open');
    } catch (e) {
      buffering = false;
      this.refused(e instanceof Error ? e.message : String(e));
      this.setStatus('closed');
    }
  }

  private deliver(ev: EventEnvelope): void {
    if (this.seq.accept(ev.seq, ev.type)) this.opts.onEvent(ev);
  }

  private setStatus(status: ConnectionStatus): void {
    if (this.status === status) return;
    this.status = status;
    this.opts.onStatus?.(status);
  }
}

/** Whether this page runs inside the desktop app. */
export function inTauri(): boolean {
  return typeof window !== 'undefined' && '__TAURI_INTERNALS__' in window;
}
