import { describe, expect, it } from 'vitest';
import { Connection, SeqTracker, backoffMs, socketUrl, type SocketLike } from '../src/connection';
import type { EventEnvelope } from '../src/wire';
import { parseFrame } from '../src/wire';

class FakeSocket implements SocketLike {
  readyState = 0;
  onopen: SocketLike['onopen'] = null;
  onclose: SocketLike['onclose'] = null;
  onerror: SocketLike['onerror'] = null;
  onmessage: SocketLike['onmessage'] = null;
  sent: string[] = [];
  constructor(readonly url: string) {}
  send(d: string) {
    this.sent.push(d);
  }
  close() {
    this.readyState = 3;
    this.onclose?.({});
  }
  open() {
    this.readyState = 1;
    this.onopen?.({});
  }
  deliver(...seqs: number[]) {
    for (const seq of seqs) this.onmessage?.({ data: JSON.stringify({ seq, type: 'text_delta', turn_id: 1, delta: `d${seq}` }) });
  }
}

describe('SeqTracker', () => {
  it('applies each seq once and counts duplicates and gaps', () => {
    const t = new SeqTracker();
    t.newConnection();
    expect([1, 2, 3].map((s) => t.accept(s))).toEqual([true, true, true]);
    t.newConnection();
    expect([4, 3, 5, 7].map((s) => t.accept(s))).toEqual([true, false, true, true]);
    expect(t).toMatchObject({ lastSeq: 7, duplicates: 1, gaps: 1 });
  });
  it('starts over when a new connection begins with an old seq (server restarted)', () => {
    const t = new SeqTracker();
    t.newConnection();
    t.accept(40);
    t.newConnection();
    expect(t.accept(1, 'session_ready')).toBe(true);
    expect(t.accept(2)).toBe(true);
    expect(t.lastSeq).toBe(2);
    t.newConnection();
    expect(t.accept(2, 'text_delta')).toBe(false); // an overlapping replay is not a restart
  });
});

describe('Connection', () => {
  it('reconnects with last_seq and applies overlapping replays once', () => {
    const sockets: FakeSocket[] = [];
    const timers: (() => void)[] = [];
    const applied: number[] = [];
    const statuses: string[] = [];
    const c = new Connection({
      url: 'ws://127.0.0.1:7860/ws?token=abc',
      onEvent: (e: EventEnvelope) => applied.push(e.seq),
      onStatus: (s) => statuses.push(s),
      makeSocket: (u) => {
        const s = new FakeSocket(u);
        sockets.push(s);
        return s;
      },
      setTimer: (fn) => timers.push(fn),
    });
    c.start();
    expect(sockets[0].url).toBe('ws://127.0.0.1:7860/ws?token=abc');
    sockets[0].open();
    sockets[0].deliver(1, 2, 3);
    sockets[0].close(); // network drop mid-turn
    expect(c.status).toBe('reconnecting');
    expect(c.send({ type: 'interrupt' })).toBe(false);
    timers.shift()?.();
    expect(sockets[1].url).toBe('ws://127.0.0.1:7860/ws?token=abc&last_seq=3');
    sockets[1].open();
    sockets[1].deliver(3, 4, 5); // the replay overlaps one already-applied event
    expect(applied).toEqual([1, 2, 3, 4, 5]);
    expect(c.seq.duplicates).toBe(1);
    expect(statuses).toEqual(['connecting', 'open', 'reconnecting', 'open']);
    expect(c.send({ type: 'user_text', text: 'hi' })).toBe(true);
    expect(sockets[1].sent).toEqual(['{"type":"user_text","text":"hi"}']);
  });

  it('ignores malformed frames and routes control frames separately', () => {
    const sockets: FakeSocket[] = [];
    const applied: number[] = [];
    const control: string[] = [];
    const c = new Connection({
      url: 'ws://h/ws',
      onEvent: (e) => applied.push(e.seq),
      onControl: (f) => control.push(f.type),
      makeSocket: (u) => {
        const s = new FakeSocket(u);
        sockets.push(s);
        return s;
      },
      setTimer: () => undefined,
    });
    c.start();
    sockets[0].open();
    sockets[0].onmessage?.({ data: 'not json' });
    sockets[0].onmessage?.({ data: '{"type":"replay_gap","message":"too old"}' });
    sockets[0].onmessage?.({ data: '{"seq":1,"type":"unknown_future_event"}' });
    sockets[0].deliver(1);
    expect(applied).toEqual([1]);
    expect(control).toEqual(['replay_gap', 'unknown_future_event']);
  });

  it('backs off exponentially up to 5 s', () => {
    expect([0, 1, 2, 3, 4, 5, 10].map(backoffMs)).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
    expect(socketUrl('ws://h/ws', null)).toBe('ws://h/ws');
    expect(parseFrame('[1]')).toBeNull();
  });
});
