// Decides what the character does for each session event, as plain commands (live2d.ts carries them out).
//
// Expressions come from sentence actions. In voice mode a sentence is shown before its audio plays, so once
// any `audio_started` was seen the expression waits for the audio's own actions and lands with the voice;
// in text mode (no audio ever) it changes when the sentence arrives. A sentence whose audio never starts
// (its synthesis failed, the device died) must not lose its emotion: when playback drains, the newest such
// sentence's emotion is applied, so the face ends where the text did.
import { resolveEmotion, type CharacterCue, type ModelCapabilities } from './emotion';
import type { Action, EventEnvelope } from './wire';

export type CharacterCommand =
  | CharacterCue
  | { kind: 'lipsync'; envelope: number[]; frameMs: number; durationMs: number }
  | { kind: 'stop_lipsync' }
  /** The user talks over the answer: its sound stopped where it was (`resume_lipsync` goes on from there). */
  | { kind: 'hold_lipsync' }
  | { kind: 'resume_lipsync' }
  /** Speaking is over: idle motions resume (the expression stays until the next turn). */
  | { kind: 'rest' }
  /** A new turn starts from the model's default expression. */
  | { kind: 'reset_expression' };

export class Director {
  private audioSeen = false;
  /** Emotion actions of this turn's sentences whose audio has not started, by sentence index. */
  private unvoiced = new Map<number, Action[]>();
  /** The newest sentence index of this turn whose audio started. */
  private heardUpTo = -1;
  emotionMap: Record<string, string> | null = null;
  model: ModelCapabilities = { expressions: [], motionGroups: [] };

  commands(ev: EventEnvelope): CharacterCommand[] {
    switch (ev.type) {
      case 'sentence':
        if (!this.audioSeen) return this.cues(ev.sentence.actions);
        if (ev.sentence.index > this.heardUpTo && ev.sentence.actions.some((a) => a.kind === 'emotion')) {
          this.unvoiced.set(ev.sentence.index, ev.sentence.actions);
        }
        return [];
      case 'audio_started': {
        this.audioSeen = true;
        // Audio plays in sentence order: earlier sentences still unheard never will be. The newest of them
        // sets the face unless this sentence brings its own emotion.
        const own = this.cues(ev.actions);
        const skipped = this.takeUnvoiced((index) => index < ev.sentence_index);
        this.heardUpTo = Math.max(this.heardUpTo, ev.sentence_index);
        this.unvoiced.delete(ev.sentence_index);
        return [
          ...(own.length > 0 ? own : skipped),
          // A frame the backend could not measure (NaN goes over JSON as null) is silent.
          { kind: 'lipsync', envelope: ev.envelope.map((v) => v ?? 0), frameMs: ev.frame_ms, durationMs: ev.duration_ms },
        ];
      }
      case 'answer_held':
        return [{ kind: 'hold_lipsync' }];
      case 'answer_resumed':
        return [{ kind: 'resume_lipsync' }];
      case 'turn_aborted':
        this.unvoiced.clear(); // what was cut off was never said
        return [{ kind: 'stop_lipsync' }, { kind: 'rest' }];
      case 'playback_drained':
        // A held answer can end without `answer_resumed` (its last sound had already been played).
        return [...this.takeUnvoiced(), { kind: 'stop_lipsync' }, { kind: 'rest' }];
      case 'turn_started':
        this.unvoiced.clear();
        this.heardUpTo = -1;
        return [{ kind: 'reset_expression' }];
      case 'session_ready':
        return [{ kind: 'stop_lipsync' }, { kind: 'reset_expression' }, { kind: 'rest' }];
      default:
        return [];
    }
  }

  /** The emotion of the newest never-heard sentence among those `which` picks (all by default), once; the
   * picked ones are forgotten. */
  private takeUnvoiced(which: (index: number) => boolean = () => true): CharacterCommand[] {
    const picked = [...this.unvoiced.keys()].filter(which);
    const actions = this.unvoiced.get(Math.max(-1, ...picked)) ?? [];
    for (const index of picked) this.unvoiced.delete(index);
    return this.cues(actions);
  }

  private cues(actions: Action[]): CharacterCommand[] {
    const out: CharacterCommand[] = [];
    for (const a of actions) {
      if (a.kind !== 'emotion') continue;
      const cue = resolveEmotion(a.name, this.emotionMap, this.model);
      if (cue) out.push(cue);
    }
    return out;
  }
}
