// Streaming subtitle text: raw `text_delta`s still contain `[emotion]` tags and may end inside one, while
// `sentence` events carry the clean display text. These helpers keep the live line readable and hand the
// not-yet-committed remainder over when a sentence is committed.

/** Removes complete `[tag]`s and a trailing, still-open `[...` so half a tag never flashes on screen, and the
 * asterisks of `*narration*` (the committed sentence then shows it styled). */
export function cleanStreaming(raw: string): string {
  return raw
    .replace(/\[[^\][\n]{0,40}\]/g, '')
    .replace(/\[[^\][\n]{0,40}$/, '')
    .replace(/(?<!\*)\*(?!\*)/g, '')
    .replace(/\s{2,}/g, ' ')
    .trimStart();
}

/** After `display` was committed, what is left of the streamed text for the live line. Deltas can run
 * ahead of sentence events (the splitter needs the next token to see a boundary), so the start of the next
 * sentence is kept. If the committed text can't be found, the live line restarts empty. */
export function consumeSentence(pendingRaw: string, display: string): string {
  const clean = cleanStreaming(pendingRaw);
  const needle = cleanStreaming(display).trim();
  if (needle === '') return pendingRaw;
  const at = clean.indexOf(needle);
  if (at < 0) return '';
  return clean.slice(at + needle.length).trimStart();
}
