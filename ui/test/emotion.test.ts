import { describe, expect, it } from 'vitest';
import { Director } from '../src/director';
import { resolveEmotion } from '../src/emotion';
import type { EventEnvelope } from '../src/wire';
import { modelUrl, parseProfiles } from '../src/profiles';
import { loadSettings, saveSettings, setLlmOp, validateBaseUrl, validateKeyEnv } from '../src/settings';

const shizuku = { expressions: ['f01', 'f02', 'f03', 'f04'], motionGroups: ['idle', 'tap_body'] };
const hana = { joy: 'f01', angry: 'f02', sad: 'f03', surprised: 'f04', neutral: 'idle' };

describe('resolveEmotion', () => {
  it('maps through the profile map to expressions or motion groups', () => {
    expect(resolveEmotion('angry', hana, shizuku)).toEqual({ kind: 'expression', id: 'f02' });
    expect(resolveEmotion('Joy', hana, shizuku)).toEqual({ kind: 'expression', id: 'f01' });
    expect(resolveEmotion('neutral', hana, shizuku)).toEqual({ kind: 'motion', group: 'idle' });
  });
  it('falls back to expression ids, and ignores what neither knows', () => {
    expect(resolveEmotion('f03', null, shizuku)).toEqual({ kind: 'expression', id: 'f03' });
    expect(resolveEmotion('f03', hana, shizuku)).toEqual({ kind: 'expression', id: 'f03' });
    expect(resolveEmotion('smug', hana, shizuku)).toBeNull();
    expect(resolveEmotion('joy', { joy: 'f99' }, shizuku)).toBeNull();
  });
});

describe('Director', () => {
  const ev = (e: object) => ({ seq: 1, ...e }) as EventEnvelope;
  it('applies sentence emotions in text mode and waits for the audio once audio was seen', () => {
    const d = new Director();
    d.model = shizuku;
    d.emotionMap = hana;
    const sentence = ev({ type: 'sentence', turn_id: 1, sentence: { index: 0, display_text: 'x', tts_text: 'x', actions: [{ kind: 'emotion', name: 'sad' }] } });
    expect(d.commands(sentence)).toEqual([{ kind: 'expression', id: 'f03' }]);
    const audio = ev({ type: 'audio_started', turn_id: 1, sentence_index: 0, duration_ms: 100, frame_ms: 20, envelope: [1], actions: [{ kind: 'emotion', name: 'joy' }] });
    expect(d.commands(audio)).toEqual([
      { kind: 'expression', id: 'f01' },
      { kind: 'lipsync', envelope: [1], frameMs: 20, durationMs: 100 },
    ]);
    expect(d.commands(sentence)).toEqual([]);
    expect(d.commands(ev({ type: 'playback_drained', turn_id: 1 }))).toEqual([{ kind: 'stop_lipsync' }, { kind: 'rest' }]);
  });
  it("keeps the emotion of a sentence whose audio never started, and applies it when playback drains", () => {
    const d = new Director();
    d.model = shizuku;
    d.emotionMap = hana;
    const sentence = (index: number, name: string) =>
      ev({ type: 'sentence', turn_id: 2, sentence: { index, display_text: 'x', tts_text: 'x', actions: [{ kind: 'emotion', name }] } });
    const audio = (index: number, name: string) =>
      ev({ type: 'audio_started', turn_id: 2, sentence_index: index, duration_ms: 100, frame_ms: 20, envelope: [1], actions: [{ kind: 'emotion', name }] });
    d.commands(ev({ type: 'turn_started', turn_id: 2 }));
    expect(d.commands(audio(0, 'joy'))[0]).toEqual({ kind: 'expression', id: 'f01' });
    // Sentences 1 and 2 are shown; only 1 is heard (2's synthesis failed).
    expect(d.commands(sentence(1, 'sad'))).toEqual([]);
    expect(d.commands(sentence(2, 'angry'))).toEqual([]);
    expect(d.commands(audio(1, 'sad'))[0]).toEqual({ kind: 'expression', id: 'f03' });
    expect(d.commands(ev({ type: 'playback_drained', turn_id: 2 }))).toEqual([{ kind: 'expression', id: 'f02' }, { kind: 'stop_lipsync' }, { kind: 'rest' }]);
    // Once only: the next drain has nothing left over.
    expect(d.commands(ev({ type: 'playback_drained', turn_id: 2 }))).toEqual([{ kind: 'stop_lipsync' }, { kind: 'rest' }]);
    // A later sentence without an emotion is heard after an unheard [sad]: the face turns sad with it.
    d.commands(ev({ type: 'turn_started', turn_id: 4 }));
    d.commands(audio(0, 'joy'));
    d.commands(sentence(1, 'sad'));
    const plain = ev({ type: 'audio_started', turn_id: 4, sentence_index: 2, duration_ms: 100, frame_ms: 20, envelope: [1], actions: [] });
    expect(d.commands(plain)[0]).toEqual({ kind: 'expression', id: 'f03' });
    expect(d.commands(ev({ type: 'playback_drained', turn_id: 4 }))).toEqual([{ kind: 'stop_lipsync' }, { kind: 'rest' }]);
    // Everything heard: nothing extra at the drain.
    d.commands(ev({ type: 'turn_started', turn_id: 3 }));
    d.commands(sentence(0, 'angry'));
    d.commands(audio(0, 'angry'));
    expect(d.commands(ev({ type: 'playback_drained', turn_id: 3 }))).toEqual([{ kind: 'stop_lipsync' }, { kind: 'rest' }]);
  });
  it('holds the mouth while the user talks over the answer and lets it go on with the sound', () => {
    const d = new Director();
    expect(d.commands(ev({ type: 'answer_held', turn_id: 5 }))).toEqual([{ kind: 'hold_lipsync' }]);
    expect(d.commands(ev({ type: 'answer_resumed', turn_id: 5, why: 'backchannel' }))).toEqual([{ kind: 'resume_lipsync' }]);
    // Held when its last sound had already played: the drain gives the mouth back to idle motions.
    expect(d.commands(ev({ type: 'playback_drained', turn_id: 5 }))).toContainEqual({ kind: 'stop_lipsync' });
  });
});

describe('profiles and settings', () => {
  it('parses /api/profiles in either shape and maps model paths into the UI tree', () => {
    const list = parseProfiles({ profiles: [{ path: 'profiles/kuro.toml', character: { name: 'Kuro' }, live2d: { model: 'assets/live2d/shizuku/shizuku.model.json', emotion_map: { smug: 'f01' } } }, { nope: 1 }] });
    expect(list).toEqual([{ path: 'profiles/kuro.toml', name: 'Kuro', agentId: null, live2dModel: 'assets/live2d/shizuku/shizuku.model.json', emotionMap: { smug: 'f01' } }]);
    expect(modelUrl('assets/live2d/shizuku/shizuku.model.json')).toBe('live2d/shizuku/shizuku.model.json');
    expect(modelUrl('https://evil.example/m.json')).toBe('live2d/shizuku/shizuku.model.json');
    expect(modelUrl('assets/live2d/../../secret')).toBe('live2d/shizuku/shizuku.model.json');
  });
  it('stores only URL, model and the key variable name, and refuses plain http to remote hosts', () => {
    const store = new Map<string, string>();
    const storage = { getItem: (k: string) => store.get(k) ?? null, setItem: (k: string, v: string) => void store.set(k, v) };
    saveSettings(storage, { baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini', keyEnv: 'OPENAI_API_KEY', apiKey: 'sk-secret' } as never);
    expect([...store.values()].join()).not.toContain('sk-secret');
    expect(loadSettings(storage)).toEqual({ baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini', keyEnv: 'OPENAI_API_KEY' });
    expect(validateBaseUrl('http://127.0.0.1:11434/v1')).toBeNull();
    expect(validateBaseUrl('http://192.168.1.5:11434/v1')).toMatch(/https/);
    expect(validateBaseUrl('nonsense')).toMatch(/Not a URL/);
  });
  it('applies settings with set_llm, naming the key variable but never carrying a key', () => {
    expect(setLlmOp({ baseUrl: 'https://api.deepseek.com/v1', model: 'deepseek-chat', keyEnv: ' DEEPSEEK_API_KEY ' })).toEqual({
      type: 'set_llm', base_url: 'https://api.deepseek.com/v1', model: 'deepseek-chat', api_key_env: 'DEEPSEEK_API_KEY',
    });
    expect(setLlmOp({ baseUrl: 'http://127.0.0.1:11434/v1', model: 'qwen2.5:3b', keyEnv: '' })).toEqual({
      type: 'set_llm', base_url: 'http://127.0.0.1:11434/v1', model: 'qwen2.5:3b',
    });
    expect(validateKeyEnv('OPENAI_API_KEY')).toBeNull();
    expect(validateKeyEnv('')).toBeNull();
    expect(validateKeyEnv('HOME')).toMatch(/API_KEY/);
  });
});
