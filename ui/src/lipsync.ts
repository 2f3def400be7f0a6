// Lip sync from the `audio_started` loudness envelope: one RMS value per `frame_ms`, loudest frame = 1.0.
// The clock starts when the event arrives (the server sends it as playback starts), so the mouth follows
// the sound without the browser ever touching the audio.

/** Envelope value at `tMs` after the start, linearly interpolated between frame centres; 0 outside. */
export function sampleEnvelope(envelope: readonly number[], frameMs: number, tMs: number): number {
  if (envelope.length === 0 || frameMs <= 0 || tMs < 0 || tMs >= envelope.length * frameMs) return 0;
  const pos = tMs / frameMs - 0.5;
  if (pos <= 0) return clamp01(envelope[0]);
  const i = Math.floor(pos);
  const frac = pos - i;
  const a = envelope[i];
  const b = i + 1 < envelope.length ? envelope[i + 1] : a;
  return clamp01(a + (b - a) * frac);
}

function clamp01(v: number): number {
  if (!Number.isFinite(v)) return 0;
  return Math.min(1, Math.max(0, v));
}

/** Maps loudness to mouth opening: quiet frames (breath, room noise) stay closed; speech opens quickly. */
export function mouthOpenness(level: number): number {
  const gated = (level - 0.08) / 0.92;
  return clamp01(Math.sqrt(clamp01(gated)) * 1.1);
}

interface Utterance {
  envelope: number[];
  frameMs: number;
  durationMs: number;
  startedAt: number;
  /** The answer is held (the user talks over it): the mouth is shut and the clock stands still. */
  heldAt: number | null;
}

/** The current utterance's mouth value; `null` when silent so idle motions own the mouth again. */
export class LipSync {
  private current: Utterance | null = null;

  start(envelope: number[], frameMs: number, durationMs: number, now: number): void {
    // A sentence the device took up just as the answer was held starts held.
    const held = this.current !== null && this.current.heldAt !== null;
    this.current = { envelope, frameMs, durationMs, startedAt: now, heldAt: held ? now : null };
  }

  stop(): void {
    this.current = null;
  }

  /** The sound stopped where it was (`answer_held`): shut the mouth and keep the place. */
  hold(now: number): void {
    if (this.current && this.current.heldAt === null) this.current.heldAt = now;
  }

  /** The sound goes on from where it stopped (`answer_resumed`). */
  resume(now: number): void {
    const u = this.current;
    if (!u || u.heldAt === null) return;
    u.startedAt += now - u.heldAt;
    u.heldAt = null;
  }

  speaking(now: number): boolean {
    const u = this.current;
    return u !== null && u.heldAt === null && now - u.startedAt < u.durationMs;
  }

  value(now: number): number | null {
    const u = this.current;
    if (!u) return null;
    if (u.heldAt !== null) return 0;
    const t = now - u.startedAt;
    if (t >= u.durationMs) {
      this.current = null;
      return null;
    }
    return mouthOpenness(sampleEnvelope(u.envelope, u.frameMs, t));
  }
}
