//! Narration: the roleplay text LLMs write around a companion's speech — `*smiles*`, `(laughs softly)`,
//! `[sighs]`, `（微笑）`, `【叹气】` — is shown but not spoken.
//!
//! Runs after the action extractor, so `[emotion]` tags of the profile are gone and any bracket left is a
//! stage direction. What counts as narration:
//! - `*…*` (one asterisk each side, the opener followed and the closer preceded by a non-space): narration,
//!   except a single word between words of speech (`I *really* mean it`), which is emphasis and is spoken.
//!   An opener whose closer has not come yet starts narration that goes on into the next sentences (the
//!   divider may cut `*She nods. Then she smiles.*` in two) until the closer or the end of the turn.
//! - `[…]` and `【…】` whose content starts with a letter (`[1]`, `[2023]` are citations, spoken as written)
//!   and that is not the label of a markdown link `[text](url)`.
//! - `(…)` and `（…）` whose content starts with a letter, at the start or the end of the sentence (only
//!   punctuation and spaces before or after it), and not a link's target. A parenthesis inside speech
//!   (`at 3 (or 4) today`) is an aside and is spoken.
//!
//! `display_text` keeps the sentence as written; [`DisplaySpan`]s give it part by part (markers removed)
//! so a UI can style narration and emphasis. `tts_text` loses the narration.

use super::{PipelineItem, SentenceDraft, Stage};
use tomo_protocol::{DisplaySpan, SpanStyle};

/// Longest bracketed stage direction; longer bracket text is left alone.
const MAX_BRACKET_CHARS: usize = 200;

/// Narration state of one text stream (display and TTS each keep their own, like `<think>`).
#[derive(Debug, Clone, Default)]
pub(crate) struct NarrationState {
    /// Inside a `*…*` span that began in an earlier sentence.
    in_star: bool,
}

fn closing_bracket(open: char) -> Option<char> {
    Some(match open {
        '[' => ']',
        '【' => '】',
        '(' => ')',
        '（' => '）',
        _ => return None,
    })
}

fn has_words(text: &str) -> bool {
    text.chars().any(char::is_alphanumeric)
}

/// Appends `text` with `style` to `spans`, merging with the previous span of the same style.
fn push(spans: &mut Vec<DisplaySpan>, text: &str, style: SpanStyle) {
    if text.is_empty() {
        return;
    }
    match spans.last_mut() {
        Some(last) if last.style == style => last.text.push_str(text),
        _ => spans.push(DisplaySpan {
            text: text.to_owned(),
            style,
        }),
    }
}

/// Byte index of the `*` closing a span whose content starts at `from`: a single `*` right after a
/// non-space.
fn star_closer(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    (from..text.len()).find(|&i| {
        bytes[i] == b'*'
            && i > from
            && !text[..i].ends_with(char::is_whitespace)
            && bytes.get(i + 1) != Some(&b'*')
            && bytes[i - 1] != b'*'
    })
}

impl NarrationState {
    /// `text` as spans (speech, narration, emphasis), markers of narration and emphasis removed.
    pub(crate) fn split(&mut self, text: &str) -> Vec<DisplaySpan> {
        let mut spans = Vec::new();
        let mut rest = text;
        if self.in_star {
            match star_closer(rest, 0) {
                Some(close) => {
                    push(&mut spans, &rest[..close], SpanStyle::Narration);
                    rest = &rest[close + 1..];
                    self.in_star = false;
                }
                None => {
                    push(&mut spans, rest, SpanStyle::Narration);
                    return spans;
                }
            }
        }
        let mut speech = String::new();
        while let Some(c) = rest.chars().next() {
            let len = c.len_utf8();
            let spoken_before = has_words(&speech) || spans_have_speech(&spans);
            if c == '*'
                && let Some((inner, after, closed)) = star_span(rest)
            {
                let emphasis = closed
                    && !inner.contains(char::is_whitespace)
                    && spoken_before
                    && has_words(after);
                if emphasis || closed || !spoken_before {
                    push(&mut spans, &std::mem::take(&mut speech), SpanStyle::Speech);
                    let style = if emphasis {
                        SpanStyle::Emphasis
                    } else {
                        SpanStyle::Narration
                    };
                    push(&mut spans, inner, style);
                    self.in_star = !closed;
                    rest = after;
                    continue;
                }
            }
            if let Some(close) = closing_bracket(c)
                && let Some((inner, after)) = bracketed(rest, c, close)
            {
                let link_target = c == '(' && (speech.ends_with(']') || inner.contains("://"));
                let direction = if matches!(c, '(' | '（') {
                    !link_target && (!spoken_before || !has_words(after))
                } else {
                    !after.starts_with('(')
                };
                if direction && inner.trim_start().starts_with(char::is_alphabetic) {
                    push(&mut spans, &std::mem::take(&mut speech), SpanStyle::Speech);
                    push(&mut spans, inner, SpanStyle::Narration);
                    rest = after;
                    continue;
                }
            }
            speech.push(c);
            rest = &rest[len..];
        }
        push(&mut spans, &speech, SpanStyle::Speech);
        spans
    }
}

fn spans_have_speech(spans: &[DisplaySpan]) -> bool {
    spans
        .iter()
        .any(|s| s.style != SpanStyle::Narration && has_words(&s.text))
}

/// At a `*` that opens a span (`text` starts with it): (content, text after the span, whether it closed).
/// `None` when this `*` opens nothing (`**`, `* item`, `5 * 3`).
fn star_span(text: &str) -> Option<(&str, &str, bool)> {
    let after_open = &text[1..];
    if after_open.starts_with(['*', ' ', '\t', '\n']) || after_open.is_empty() {
        return None;
    }
    Some(match star_closer(after_open, 0) {
        Some(close) => (&after_open[..close], &after_open[close + 1..], true),
        None => (after_open, "", false),
    })
}

/// At an opening bracket (`text` starts with `open`): (content, text after the closer), if it closes on
/// this line within [`MAX_BRACKET_CHARS`] without another opener inside.
fn bracketed(text: &str, open: char, close: char) -> Option<(&str, &str)> {
    let body = &text[open.len_utf8()..];
    let end = body.find([close, open, '\n'])?;
    if !body[end..].starts_with(close) || body[..end].chars().count() > MAX_BRACKET_CHARS {
        return None;
    }
    Some((&body[..end], &body[end + close.len_utf8()..]))
}

/// The spoken part of `spans`: everything but narration, emphasis without its markers.
pub(crate) fn spoken(spans: &[DisplaySpan]) -> String {
    spans
        .iter()
        .filter(|s| s.style != SpanStyle::Narration)
        .map(|s| s.text.as_str())
        .collect()
}

/// Pipeline stage between display processing and the TTS filter: narration out of `tts_text`, display
/// spans for the UI.
#[derive(Debug, Clone, Default)]
pub struct NarrationFilter {
    display: NarrationState,
    tts: NarrationState,
}

impl NarrationFilter {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Stage for NarrationFilter {
    fn push(&mut self, item: PipelineItem, out: &mut Vec<PipelineItem>) {
        let PipelineItem::Draft(draft) = item else {
            out.push(item);
            return;
        };
        let display_spans = self.display.split(draft.display_text.trim());
        let tts_text = spoken(&self.tts.split(&draft.tts_text));
        // Only worth sending when something is styled; plain speech is the display text itself.
        let styled = display_spans.iter().any(|s| s.style != SpanStyle::Speech);
        out.push(PipelineItem::Draft(SentenceDraft {
            tts_text,
            display_spans: if styled { display_spans } else { Vec::new() },
            ..draft
        }));
    }

    fn finish(&mut self, _out: &mut Vec<PipelineItem>) {
        // An unclosed `*` ends with the turn.
        *self = Self::default();
    }
}

#[cfg(test)]
#[path = "narration_tests.rs"]
mod tests;
