// A sentence as parts to draw: speech plainly, roleplay narration (`*smiles*`, `(laughs)`, `[sighs]`) styled
// and without its markers, emphasis stressed. The backend decides what is narration (its token pipeline
// keeps narration out of the speech) and sends the parts as `display_spans`; a sentence without them is
// all speech.
import type { DisplaySpan } from './bindings';

export type TextPart = DisplaySpan;

/** The parts of a sentence: its `display_spans`, or its display text as one speech part. */
export function sentenceParts(displayText: string, spans: DisplaySpan[] | null | undefined): TextPart[] {
  if (spans && spans.length > 0) return spans.map((s) => ({ text: s.text, style: s.style }));
  return displayText === '' ? [] : [{ text: displayText, style: 'speech' }];
}

/** Parts of several sentences in a row, a space between sentences. */
export function joinParts(sentences: TextPart[][]): TextPart[] {
  const out: TextPart[] = [];
  sentences.forEach((parts, i) => {
    if (i > 0) out.push({ text: ' ', style: 'speech' });
    out.push(...parts);
  });
  return out;
}

/** The text of the parts as read in a plain line (narration in asterisks, as in a chat log). */
export function plainText(parts: TextPart[]): string {
  return parts.map((p) => (p.style === 'narration' ? `*${p.text.trim()}*` : p.text)).join('');
}
