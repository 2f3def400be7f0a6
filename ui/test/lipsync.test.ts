import { describe, expect, it } from 'vitest';
import { LipSync, mouthOpenness, sampleEnvelope } from '../src/lipsync';

describe('sampleEnvelope', () => {
  const env = [0, 1, 0.5];
  it('hits frame values at frame centres and interpolates between them', () => {
    expect(sampleEnvelope(env, 20, 10)).toBeCloseTo(0); // centre of frame 0
    expect(sampleEnvelope(env, 20, 30)).toBeCloseTo(1); // centre of frame 1
    expect(sampleEnvelope(env, 20, 20)).toBeCloseTo(0.5); // halfway 0 -> 1
    expect(sampleEnvelope(env, 20, 40)).toBeCloseTo(0.75); // halfway 1 -> 0.5
  });
  it('is silent outside the envelope and robust to bad input', () => {
    expect(sampleEnvelope(env, 20, -1)).toBe(0);
    expect(sampleEnvelope(env, 20, 60)).toBe(0);
    expect(sampleEnvelope([], 20, 5)).toBe(0);
    expect(sampleEnvelope([2, Number.NaN], 0, 5)).toBe(0);
    expect(sampleEnvelope([2, Number.NaN], 20, 10)).toBe(1);
    expect(sampleEnvelope([Number.NaN], 20, 10)).toBe(0);
  });
});

describe('LipSync', () => {
  it('follows a clock started at the event and lets go after duration_ms', () => {
    const ls = new LipSync();
    expect(ls.value(0)).toBeNull();
    ls.start([0, 1, 1, 0], 100, 400, 1000);
    expect(ls.value(1050)).toBe(mouthOpenness(0));
    expect(ls.value(1150)).toBeCloseTo(mouthOpenness(1));
    expect(ls.speaking(1399)).toBe(true);
    expect(ls.value(1400)).toBeNull(); // idle motions own the mouth again
    expect(ls.speaking(1400)).toBe(false);
  });
  it('holds its place while the user talks over the answer, mouth shut, and goes on from there', () => {
    const ls = new LipSync();
    ls.start([0, 1, 1, 0], 100, 400, 1000);
    ls.hold(1150);
    expect(ls.value(1300)).toBe(0);
    expect(ls.speaking(1300)).toBe(false);
    expect(ls.value(2000)).toBe(0); // however long the hold, the utterance is not over
    ls.resume(2000);
    // 150 ms were played before the hold: 2000 + 0 ms of hold later is still t = 150 ms.
    expect(ls.value(2000)).toBeCloseTo(mouthOpenness(sampleEnvelope([0, 1, 1, 0], 100, 150)));
    expect(ls.speaking(2249)).toBe(true);
    expect(ls.value(2250)).toBeNull();
  });
  it('starts a sentence the device took up during a hold held', () => {
    const ls = new LipSync();
    ls.start([1, 1], 100, 200, 0);
    ls.hold(50);
    ls.start([1, 1], 100, 200, 80);
    expect(ls.value(500)).toBe(0);
    ls.resume(500);
    expect(ls.value(500)).toBeCloseTo(mouthOpenness(1));
    expect(ls.speaking(699)).toBe(true);
  });
  it('mouth stays shut for noise and opens fully for loud frames', () => {
    expect(mouthOpenness(0.05)).toBe(0);
    expect(mouthOpenness(1)).toBe(1);
    expect(mouthOpenness(0.5)).toBeGreaterThan(0.5);
  });
});
