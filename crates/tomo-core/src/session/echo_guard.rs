//! Keeps a copied `[memory context]` block out of the answer. The block is Tomo's own note to the model
//! (memory, diary, the clock) at the top of the user message; a small local model sometimes starts its
//! answer by copying it out (Qwen2.5-Coder-1.5B did, answering "What is my cat called?"). Copied, it would
//! be shown, spoken, and stored in the history, where the next turns see it and copy it again. So it is
//! removed from the text stream before the pipeline and the UI see it, and from the turn's transcript.

use tomo_llm::ChatMessage;
use tomo_llm::agent::TurnTranscript;

use super::prompt::{CONTEXT_CLOSE, CONTEXT_OPEN};

/// Streaming filter over the model's text deltas.
#[derive(Debug)]
pub struct EchoGuard {
    /// Text that may be the start of a marker, not passed on yet.
    held: String,
    /// Inside a copied block: text is dropped until the closing marker.
    inside: bool,
    out: Emitted,
}

impl Default for EchoGuard {
    fn default() -> Self {
        Self {
            held: String::new(),
            inside: false,
            out: Emitted {
                after_block: false,
                line_start: true,
            },
        }
    }
}

/// What the text passed on so far ends with.
#[derive(Debug)]
struct Emitted {
    /// Right after a block: the blank lines that followed it are dropped too.
    after_block: bool,
    /// At the start of the answer or of a line: only there does the marker open a copied block (the
    /// block is copied whole; a sentence that merely names it is kept).
    line_start: bool,
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
                let end = at + marker.len();
                if self.inside {
                    self.inside = false;
                    self.out.after_block = true;
                } else if self.out.opens_block(&self.held[..at]) {
                    self.out.emit(&self.held[..at], &mut out);
                    self.inside = true;
                } else {
                    self.out.emit(&self.held[..end], &mut out);
                }
                self.held.drain(..end);
                continue;
            }
            // Keep the longest tail that could still grow into the marker.
            let keep = partial_suffix(&self.held, marker);
            let ready = self.held.len() - keep;
            if !self.inside {
                self.out.emit(&self.held[..ready], &mut out);
            }
            self.held.drain(..ready);
            return out;
        }
    }

    /// End of the answer: what was held back, unless it is inside a block that never closed (a copy
    /// cut off by the answer's end).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.held);
        let mut out = String::new();
        if !self.inside {
            self.out.emit(&rest, &mut out);
        }
        self.inside = false;
        out
    }
}

impl Emitted {
    /// Whether a marker after `before` (the text not yet passed on) stands at a line start.
    fn opens_block(&self, before: &str) -> bool {
        let tail = before.trim_end_matches([' ', '\t']);
        if tail.is_empty() {
            self.line_start
        } else {
            tail.ends_with('\n')
        }
    }

    /// Appends answer text; right after a block, its leading blank lines are dropped.
    fn emit(&mut self, text: &str, out: &mut String) {
        let text = if self.after_block {
            let trimmed = text.trim_start();
            if trimmed.is_empty() {
                return;
            }
            self.after_block = false;
            trimmed
        } else {
            text
        };
        if text.is_empty() {
            return;
        }
        let tail = text.trim_end_matches([' ', '\t']);
        if !tail.is_empty() {
            self.line_start = tail.ends_with('\n');
        }
        out.push_str(text);
    }
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
                        Things you remember about the user (when you learned them):\n- today: The user's cat \
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
    fn a_block_on_its_own_line_goes_and_a_copy_cut_off_by_the_end_goes_too() {
        assert_eq!(
            strip("Sure!\n[memory context]\nfacts\n[/memory context]\nMochi."),
            "Sure!\nMochi."
        );
        assert_eq!(
            strip("Well.\n  [memory context]\nfacts that never end"),
            "Well.\n  "
        );
    }

    #[test]
    fn a_sentence_that_names_the_block_is_kept() {
        let prose = "I keep notes in a [memory context] block, see? And [/memory context] too.";
        assert_eq!(strip(prose), prose);
        let mut guard = EchoGuard::default();
        let mut out = String::new();
        for piece in ["I read my [mem", "ory context] notes.", "\nDone."] {
            out.push_str(&guard.push(piece));
        }
        out.push_str(&guard.finish());
        assert_eq!(out, "I read my [memory context] notes.\nDone.");
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
