//! Keeps a copied `[memory context]` block out of the answer. The block is Tomo's own note to the model
//! (memory, diary, the clock) at the top of the user message; a small local model sometimes starts its
//! answer by copying it out (Qwen2.5-Coder-1.5B did, answering "What is my cat called?"). Copied, it would
//! be shown, spoken, and stored in the history, where the next turns see it and copy it again. So it is
//! removed from the text stream before the pipeline and the UI see it, and from the turn's transcript.

use tomo_llm::ChatMessage;
use tomo_llm::agent::TurnTranscript;

use super::prompt::{CONTEXT_CLOSE, CONTEXT_OPEN};

/// Streaming filter over the model's text deltas.
#[derive(Debug, Default)]
pub struct EchoGuard {
    /// Text that may be the start of a marker, not passed on yet.
    held: String,
    /// Inside a copied block: text is dropped until the closing marker.
    inside: bool,
    /// Right after a block: the blank lines that followed it are dropped too.
    after_block: bool,
}

impl EchoGuard {
    /// The part of `delta` (with what was held back) that is answer text.
    pub fn push(&mut self, delta: &str) -> String {
        self.held.push_str(delta);
        let mut out = String::new();
        loop {
            let marker = if self.inside {
                CONTEXT_CLOSE
            } else {
                CONTEXT_OPEN
            };
            if let Some(at) = self.held.find(marker) {
                if !self.inside {
                    emit(&mut self.after_block, &self.held[..at], &mut out);
                }
                self.held.drain(..at + marker.len());
                self.inside = !self.inside;
                self.after_block = !self.inside;
                continue;
            }
            // Keep the longest tail that could still grow into the marker.
            let keep = partial_suffix(&self.held, marker);
            let ready = self.held.len() - keep;
            if !self.inside {
                emit(&mut self.after_block, &self.held[..ready], &mut out);
            }
            self.held.drain(..ready);
            return out;
        }
    }

    /// End of the answer: what was held back, unless it is inside a block that never closed.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.held);
        let mut out = String::new();
        if !self.inside {
            emit(&mut self.after_block, &rest, &mut out);
        }
        self.inside = false;
        out
    }
}

/// Appends answer text; right after a block, its leading blank lines are dropped.
fn emit(after_block: &mut bool, text: &str, out: &mut String) {
    let text = if *after_block {
        let trimmed = text.trim_start();
        if trimmed.is_empty() {
            return;
        }
        *after_block = false;
        trimmed
    } else {
        text
    };
    out.push_str(text);
}

/// Length of the longest suffix of `text` that is a proper prefix of `marker`.
fn partial_suffix(text: &str, marker: &str) -> usize {
    (1..marker.len().min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && marker.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

/// `text` without copied blocks.
pub fn strip(text: &str) -> String {
    let mut guard = EchoGuard::default();
    let mut out = guard.push(text);
    out.push_str(&guard.finish());
    out
}

/// The transcript as it is stored and reported: no copied block in its text or its assistant messages.
pub fn clean_transcript(transcript: &mut TurnTranscript) {
    if !transcript.text.contains(CONTEXT_OPEN) {
        return;
    }
    transcript.text = strip(&transcript.text);
    transcript.unfinished_text = strip(&transcript.unfinished_text);
    for message in &mut transcript.messages {
        if let ChatMessage::Assistant {
            content: Some(content),
            ..
        } = message
        {
            *content = strip(content);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const ECHO: &str = "[memory context]\nThe local time now: 2026-12-01 17:15 (Tuesday), UTC+00:00.\n\n\
                        Things you remember about the user (date learned):\n- 2026-12-01: The user's cat \
                        is called Mochi\n[/memory context]\n\nThe user's cat is called Mochi.";

    #[test]
    fn a_copied_block_is_dropped_whole_however_the_stream_is_cut() {
        assert_eq!(strip(ECHO), "The user's cat is called Mochi.");
        for size in [1, 2, 3, 5, 7, 16, 17, 40] {
            let mut guard = EchoGuard::default();
            let chars: Vec<char> = ECHO.chars().collect();
            let mut out = String::new();
            for piece in chars.chunks(size) {
                out.push_str(&guard.push(&piece.iter().collect::<String>()));
            }
            out.push_str(&guard.finish());
            assert_eq!(out, "The user's cat is called Mochi.", "pieces of {size}");
        }
    }

    #[test]
    fn ordinary_text_passes_unchanged_and_unheld_where_it_cannot_be_a_marker() {
        let mut guard = EchoGuard::default();
        assert_eq!(guard.push("[joy] Hello"), "[joy] Hello");
        assert_eq!(guard.push(" there [me"), " there ");
        assert_eq!(guard.push("ow] cat"), "[meow] cat");
        assert_eq!(guard.finish(), "");
        let mut guard = EchoGuard::default();
        assert_eq!(guard.push("a [memory"), "a ");
        assert_eq!(
            guard.finish(),
            "[memory",
            "an unfinished marker at the end is text"
        );
        assert_eq!(strip("héllo wörld"), "héllo wörld");
    }

    #[test]
    fn text_around_a_block_is_kept_and_an_unclosed_block_is_dropped_to_the_end() {
        assert_eq!(
            strip("Sure! [memory context]\nfacts\n[/memory context] Mochi."),
            "Sure! Mochi."
        );
        assert_eq!(
            strip("Well. [memory context]\nfacts that never end"),
            "Well. "
        );
    }

    #[test]
    fn the_transcript_is_cleaned_in_its_text_and_its_messages() {
        let mut transcript = TurnTranscript {
            text: ECHO.to_owned(),
            messages: vec![ChatMessage::assistant(ECHO)],
            unfinished_text: String::new(),
            rounds: 1,
        };
        clean_transcript(&mut transcript);
        assert_eq!(transcript.text, "The user's cat is called Mochi.");
        assert_eq!(
            transcript.messages,
            vec![ChatMessage::assistant("The user's cat is called Mochi.")]
        );
    }
}
