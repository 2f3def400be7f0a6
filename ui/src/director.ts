// Decides what the character does for each session event, as plain commands (live2d.ts carries them out).
//
// Expressions come from sentence actions. In voice mode a sentence is shown before its audio plays, so once
// any `audio_started` was seen the expression waits for the audio's own actions and lands with the voice;
// in text mode (no audio ever) it changes when the sentence arrives.
import { resolveEmotion, type CharacterCue, type ModelCapabilities } from './emotion';
import type { Action, EventEnvelope } from './protocol';

export type CharacterCommand =
  | CharacterCue
  | { kind: 'lipsync'; envelope: number[]; frameMs: number; durationMs: number }
  | { kind: 'stop_lipsync' }
  /** Speaking is over: idle motions resume (the expression stays until the next turn). */
  | { kind: 'rest' }
  /** A new turn starts from the model's default expression. */
  | { kind: 'reset_expression' };

export class Director {
  private audioSeen = false;
  emotionMap: Record<string, string> | null = null;
  model: ModelCapabilities = { expressions: [], motionGroups: [] };

  commands(ev: EventEnvelope): CharacterCommand[] {
    switch (ev.type) {
      case 'sentence':
        return this.audioSeen ? [] : this.cues(ev.sentence.actions);
      case 'audio_started':
        this.audioSeen = true;
        return [
          ...this.cues(ev.actions),
          { kind: 'lipsync', envelope: ev.envelope, frameMs: ev.frame_ms, durationMs: ev.duration_ms },
        ];
      case 'turn_aborted':
        return [{ kind: 'stop_lipsync' }, { kind: 'rest' }];
      case 'playback_drained':
        return [{ kind: 'rest' }];
      case 'turn_started':
        return [{ kind: 'reset_expression' }];
      case 'session_ready':
        return [{ kind: 'stop_lipsync' }, { kind: 'reset_expression' }, { kind: 'rest' }];
      default:
        return [];
    }
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
