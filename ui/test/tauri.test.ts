import { describe, expect, it } from 'vitest';
import { TauriConnection, type TauriIpc } from '../src/tauri';
import type { EventEnvelope } from '../src/wire';

const ev = (seq: number): EventEnvelope =>
  ({ seq, type: 'text_delta', turn_id: 1, delta: `d${seq}` }) as EventEnvelope;

/** A backend that keeps every event and can emit live ones, also in the middle of a replay request. */
class FakeBackend implements TauriIpc {
  kept: EventEnvelope[] = [];
  listeners: ((ev: EventEnvelope) => void)[] = [];
  sent: unknown[] = [];
  /** Emitted live while `eventsSince` is in flight (the race the buffering handles). */
  duringReplay: EventEnvelope[] = [];

  emit(e: EventEnvelope): void {
    this.kept.push(e);
    for (const l of this.listeners) l(e);
  }
  async listen(onEvent: (ev: EventEnvelope) => void): Promise<() => void> {
    this.listeners.push(onEvent);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== onEvent);
    };
  }
  async eventsSince(lastSeq: number) {
    const events = this.kept.filter((e) => e.seq > lastSeq);
    for (const e of this.duringReplay.splice(0)) this.emit(e);
    return { events, missed_from: null, missed_to: null, latest_seq: this.kept[this.kept.length - 1]?.seq ?? 0 };
  }
  async sendOp(op: unknown): Promise<string | null> {
    this.sent.push(op);
    return (op as { type: string }).type === 'shutdown' ? 'refused' : null;
  }
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('TauriConnection', () => {
  it('applies replayed, racing and live events exactly once and in order', async () => {
    const backend = new FakeBackend();
    backend.emit(ev(1));
    backend.emit(ev(2));
    backend.duringReplay = [ev(3)];
    const applied: number[] = [];
    const conn = new TauriConnection({ ipc: backend, onEvent: (e) => applied.push(e.seq) });
    conn.start();
    await settle();
    expect(conn.status).toBe('open');
    backend.emit(ev(4));
    expect(applied).toEqual([1, 2, 3, 4]);

    // A reload-like reconnect replays after the last applied seq only.
    conn.dropForTest();
    backend.duringReplay = [ev(5)];
    await settle();
    backend.emit(ev(6));
    expect(applied).toEqual([1, 2, 3, 4, 5, 6]);
    expect(conn.seq.duplicates).toBeGreaterThanOrEqual(0);
    expect(backend.listeners).toHaveLength(1);
  });

  it('reports refused ops as error control frames and sends nothing before it is open', async () => {
    const backend = new FakeBackend();
    const frames: unknown[] = [];
    const conn = new TauriConnection({ ipc: backend, onEvent: () => {}, onControl: (f) => frames.push(f) });
    expect(conn.send({ type: 'interrupt' })).toBe(false);
    conn.start();
    await settle();
    expect(conn.send({ type: 'shutdown' })).toBe(true);
    await settle();
    expect(frames).toEqual([{ type: 'error', code: 'invalid_op', message: 'refused', recoverable: true }]);
  });
});
