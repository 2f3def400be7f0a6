import { describe, expect, it } from 'vitest';
import type { Event, EventEnvelope } from '../src/wire';
import { sentenceParts } from '../src/spans';
import { initialState, isWatching, reduce, subtitleParts, subtitleText, type UiState } from '../src/state';
import { cleanStreaming, consumeSentence } from '../src/subtitles';

function run(events: Event[]): UiState {
  return events.reduce<UiState>((s, e, i) => reduce(s, { seq: i + 1, ...e } as EventEnvelope), initialState());
}

const sentence = (turn_id: number, index: number, text: string, emotion?: string): Event => ({
  type: 'sentence',
  turn_id,
  sentence: { index, display_text: text, tts_text: text, actions: emotion ? [{ kind: 'emotion', name: emotion }] : [] },
});

describe('reducer', () => {
  it('streams the live line, commits sentences, keeps the next sentence start', () => {
    let s = run([
      { type: 'turn_started', turn_id: 1, user_text: 'hi' },
      { type: 'text_delta', turn_id: 1, delta: '[joy] Hel' },
      { type: 'text_delta', turn_id: 1, delta: 'lo there.' },
    ]);
    expect(subtitleText(s)).toEqual({ committed: '', live: 'Hello there.' });
    s = reduce(s, { seq: 10, type: 'text_delta', turn_id: 1, delta: ' [sa' });
    expect(subtitleText(s).live).toBe('Hello there. '); // half a tag never shows
    s = reduce(s, { seq: 11, type: 'text_delta', turn_id: 1, delta: 'd] Bye' });
    s = reduce(s, { seq: 12, ...sentence(1, 0, 'Hello there.', 'joy') } as EventEnvelope);
    expect(subtitleText(s)).toEqual({ committed: 'Hello there.', live: 'Bye' });
    expect(s.transcript.map((m) => [m.role, m.text, m.streaming])).toEqual([
      ['user', 'hi', undefined],
      ['assistant', 'Hello there.', true],
    ]);
  });

  it('finishes the assistant message and resets subtitles on the next turn', () => {
    const s = run([
      { type: 'turn_started', turn_id: 1, user_text: 'hi' },
      { type: 'text_delta', turn_id: 1, delta: 'A. B.' },
      sentence(1, 0, 'A.'),
      sentence(1, 1, 'B.'),
      { type: 'turn_finished', turn_id: 1, end: 'completed', text: 'A. B.' },
      { type: 'turn_started', turn_id: 2, user_text: 'again' },
    ]);
    expect(s.transcript.map((m) => [m.role, m.text])).toEqual([
      ['user', 'hi'],
      ['assistant', 'A. B.'],
      ['user', 'again'],
    ]);
    expect(s.transcript[1].streaming).toBe(false);
    expect(subtitleText(s)).toEqual({ committed: '', live: '' });
  });

  it('marks an interrupted turn and uses the partial text when no sentence came', () => {
    const s = run([
      { type: 'turn_started', turn_id: 3, user_text: 'tell me a story' },
      { type: 'text_delta', turn_id: 3, delta: '[joy] Once upon' },
      { type: 'turn_aborted', turn_id: 3, partial_text: '[joy] Once upon' },
    ]);
    expect(s.transcript[1]).toMatchObject({ role: 'assistant', text: 'Once upon', interrupted: true, streaming: false });
    expect(subtitleText(s).live).toBe('');
  });

  it('moves tool chips running -> completed / error, one chip per call', () => {
    const call = (id: string, status: 'running' | 'completed' | 'error', result?: string): Event => ({
      type: 'tool_call',
      turn_id: 1,
      call: { tool_id: id, tool_name: id === 'a' ? 'get_time' : 'web_fetch', args: {}, status, result, round: 1 },
    });
    let s = run([call('a', 'running'), call('b', 'running')]);
    expect(s.chips.map((c) => [c.name, c.status])).toEqual([
      ['get_time', 'running'],
      ['web_fetch', 'running'],
    ]);
    s = run([call('a', 'running'), call('b', 'running'), call('a', 'completed', '12:00'), call('b', 'error', 'timeout')]);
    expect(s.chips.map((c) => [c.name, c.status, c.result])).toEqual([
      ['get_time', 'completed', '12:00'],
      ['web_fetch', 'error', 'timeout'],
    ]);
  });

  it('turns error and hook events into readable notices, keeps the latest latency', () => {
    const s = run([
      { type: 'error', code: 'llm_unreachable', message: 'connection refused at http://127.0.0.1:11434/v1', recoverable: true },
      { type: 'hook_failed', turn_id: 1, hook: 'diary', stage: 'after_turn', message: 'disk full' },
      { type: 'latency_report', turn_id: 1, origin: 'turn_start', asr_done_ms: null, first_token_ms: 300, first_sentence_ms: 500, first_audio_ms: null },
    ]);
    expect(s.notices.map((n) => [n.level, n.text])).toEqual([
      ['error', 'Cannot reach the language model: connection refused at http://127.0.0.1:11434/v1'],
      ['warning', 'Plugin hook "diary" failed (after_turn): disk full'],
    ]);
    expect(s.latency).toMatchObject({ turnId: 1, firstTokenMs: 300, firstAudioMs: null });
  });
});

describe('subtitle helpers', () => {
  it('cleans tags and keeps text after a committed sentence', () => {
    expect(cleanStreaming('[surprised] Oh! [jo')).toBe('Oh! ');
    expect(consumeSentence('[joy] One. Two', 'One.')).toBe('Two');
    expect(consumeSentence('something else', 'One.')).toBe('');
  });
});

describe('game companion and settings events', () => {
  it('shows the watcher while it reads the screen, marks proactive turns, tracks mood, mute and endpoint', () => {
    let s = run([
      { type: 'session_ready', character: 'Kuma', agent_id: 'kuma', tools: [] },
      { type: 'sensor_status', plugin: 'screen_watch', state: 'waiting', reason: 'no window chosen' },
    ]);
    expect(isWatching(s)).toBe(false);
    s = reduce(s, { seq: 2, type: 'sensor_targets', plugin: 'screen_watch', targets: [{ title: 'My Game', detail: 'game', width: 1280, height: 720 }] });
    expect(s.sensorTargets.map((t) => t.title)).toEqual(['My Game']);
    s = reduce(s, { seq: 3, type: 'sensor_status', plugin: 'screen_watch', state: 'watching', target: 'My Game' });
    expect(isWatching(s)).toBe(true);
    expect(s.sensors).toEqual([{ plugin: 'screen_watch', state: 'watching', detail: 'My Game' }]);
    s = reduce(s, { seq: 4, type: 'observation', source: 'screen_watch', at_ms: 1, window: 'My Game', text: 'Boss defeated' });
    expect(s.lastObservation).toBe('Boss defeated');
    s = reduce(s, { seq: 5, type: 'proactive', turn_id: 7, reason: 'new text on "My Game", mood 85' });
    s = reduce(s, { seq: 6, type: 'turn_started', turn_id: 7, user_text: '[proactive] new text on "My Game", mood 85' });
    expect(s.transcript[s.transcript.length - 1]).toMatchObject({ role: 'system', proactive: true, text: 'Kuma speaks up (new text on "My Game", mood 85)' });
    s = reduce(s, { seq: 7, type: 'plugin_state', plugin: 'mood_chat', state: { label: 'mood', value: 62.4, reason: 'joy' } });
    s = reduce(s, { seq: 8, type: 'mode_changed', mic_muted: true, do_not_disturb: true, push_to_talk: true });
    expect([s.plugins.mood_chat?.value, s.micMuted, s.doNotDisturb, s.pushToTalk]).toEqual([62.4, true, true, true]);
    expect(s.halfDuplex).toBe(false);
    s = reduce(s, { seq: 9, type: 'mode_changed', mic_muted: true, do_not_disturb: true, push_to_talk: true, half_duplex: true });
    expect(s.halfDuplex).toBe(true);
    s = reduce(s, { seq: 9, type: 'sensor_status', plugin: 'screen_watch', state: 'stopped' });
    expect(isWatching(s)).toBe(false);
    expect(s.lastObservation).toBeNull();
    s = reduce(s, { seq: 10, type: 'llm_changed', base_url: 'https://api.deepseek.com/v1', model: 'deepseek-chat' });
    expect(s.transcript[s.transcript.length - 1]?.text).toBe('Now thinking with deepseek-chat at https://api.deepseek.com/v1.');
    s = reduce(s, { seq: 12, type: 'notice', level: 'warning', message: 'microphone lost; retrying' });
    expect(s.notices[s.notices.length - 1]).toMatchObject({ level: 'warning', text: 'microphone lost; retrying' });
    s = reduce(s, { seq: 13, type: 'notice', level: 'info', message: 'microphone back: USB headset' });
    expect(s.transcript[s.transcript.length - 1]).toMatchObject({ role: 'system', text: 'microphone back: USB headset' });
    // A new character reports its own sensors and mood.
    s = reduce(s, { seq: 14, type: 'session_ready', character: 'Hana', agent_id: 'hana', tools: [] });
    expect([s.sensors, s.plugins]).toEqual([[], {}]);
  });
});

describe('narration', () => {
  it('commits narration as styled parts, not raw asterisks, and keeps the live line clean', () => {
    let s = run([
      { type: 'turn_started', turn_id: 1, user_text: 'hi' },
      { type: 'text_delta', turn_id: 1, delta: '*smiles* Hello! I *really* missed you.' },
    ]);
    expect(subtitleText(s).live).toBe('smiles Hello! I really missed you.');
    s = reduce(s, {
      seq: 10,
      type: 'sentence',
      turn_id: 1,
      sentence: {
        index: 0,
        display_text: '*smiles* Hello!',
        tts_text: 'Hello!',
        actions: [],
        display_spans: [
          { text: 'smiles', style: 'narration' },
          { text: ' Hello!', style: 'speech' },
        ],
      },
    } as EventEnvelope);
    expect(subtitleParts(s)).toEqual([
      { text: 'smiles', style: 'narration' },
      { text: ' Hello!', style: 'speech' },
    ]);
    expect(subtitleText(s).live).toBe('I really missed you.');
    s = reduce(s, { seq: 11, ...sentence(1, 1, 'Plain words.') } as EventEnvelope);
    const message = s.transcript[1];
    expect(message.text).toBe('*smiles* Hello! Plain words.');
    expect(message.parts).toEqual([
      { text: 'smiles', style: 'narration' },
      { text: ' Hello!', style: 'speech' },
      { text: ' ', style: 'speech' },
      { text: 'Plain words.', style: 'speech' },
    ]);
  });

  it('leaves plain sentences without parts', () => {
    const s = run([{ type: 'turn_started', turn_id: 1, user_text: 'hi' }, sentence(1, 0, 'Hi.')]);
    expect(s.transcript[1].parts).toBeUndefined();
    expect(sentenceParts('Hi.', undefined)).toEqual([{ text: 'Hi.', style: 'speech' }]);
  });
});
