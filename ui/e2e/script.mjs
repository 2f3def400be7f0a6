// The scripted assistant turn the e2e tests expect (a real `tomo serve` under test must be given a scripted
// LLM that produces the same reply: "[angry] Hmm, let me check the time." + tool get_time + "[joy] It is
// noon, time for lunch!"). `{wait: n}` pauses n delay units between events.
export const SENTENCES = ['Hmm, let me check the time.', 'It is noon, time for lunch!'];

/** A loudness envelope that opens and closes the mouth: 20 ms frames over 2.4 s. */
export function envelope(frames = 120) {
  return Array.from({ length: frames }, (_, i) => Math.abs(Math.sin(i / 4)));
}

export function scriptedTurn(turnId, userText) {
  const t = turnId;
  const env = envelope();
  return [
    { type: 'state_changed', from: 'idle', to: 'thinking' },
    { type: 'turn_started', turn_id: t, user_text: userText },
    { type: 'tool_call', turn_id: t, call: { tool_id: `call_${t}`, tool_name: 'get_time', args: {}, status: 'running', round: 1 } },
    { wait: 12 },
    { type: 'tool_call', turn_id: t, call: { tool_id: `call_${t}`, tool_name: 'get_time', args: {}, status: 'completed', result: '12:00', round: 1 } },
    { type: 'text_delta', turn_id: t, delta: '[angry] Hmm,' },
    { wait: 4 },
    { type: 'text_delta', turn_id: t, delta: ' let me check' },
    { wait: 6 },
    { type: 'text_delta', turn_id: t, delta: ' the time.' },
    { wait: 1 },
    { type: 'text_delta', turn_id: t, delta: ' [joy] It' },
    { type: 'sentence', turn_id: t, sentence: { index: 0, display_text: SENTENCES[0], tts_text: SENTENCES[0], actions: [{ kind: 'emotion', name: 'angry' }] } },
    { type: 'state_changed', from: 'thinking', to: 'speaking' },
    { type: 'latency_report', turn_id: t, origin: 'turn_start', asr_done_ms: null, first_token_ms: 420, first_sentence_ms: 910, first_audio_ms: 1130 },
    { type: 'audio_started', turn_id: t, sentence_index: 0, duration_ms: 2400, frame_ms: 20, envelope: env, actions: [{ kind: 'emotion', name: 'angry' }] },
    { wait: 4 },
    { type: 'text_delta', turn_id: t, delta: ' is noon, time for lunch!' },
    { type: 'sentence', turn_id: t, sentence: { index: 1, display_text: SENTENCES[1], tts_text: SENTENCES[1], actions: [{ kind: 'emotion', name: 'joy' }] } },
    { type: 'turn_finished', turn_id: t, end: 'completed', text: `[angry] ${SENTENCES[0]} [joy] ${SENTENCES[1]}` },
    { wait: 16 },
    { type: 'audio_finished', turn_id: t, sentence_index: 0 },
    { type: 'audio_started', turn_id: t, sentence_index: 1, duration_ms: 1200, frame_ms: 20, envelope: envelope(60), actions: [{ kind: 'emotion', name: 'joy' }] },
    { wait: 10 },
    { type: 'audio_finished', turn_id: t, sentence_index: 1 },
    { type: 'playback_drained', turn_id: t },
    { type: 'state_changed', from: 'speaking', to: 'idle' },
  ];
}
