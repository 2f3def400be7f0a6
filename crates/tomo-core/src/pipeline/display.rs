//! Display processor: separates what is shown from what is spoken, as far as control tags go.
//!
//! - `<think>…</think>` / `<thinking>…</thinking>` (any case) is reasoning: never spoken, shown only when
//!   the profile sets `show_think`. The block usually spans many drafts, so whether we are inside one is
//!   state carried from draft to draft. When shown, the tags themselves are dropped and the content kept.
//! - `<|…|>` special tokens (`<|im_end|>`, `<|endoftext|>`) leaking from the model are removed from both.
//! - A tag cut at the end of a draft (`<thi` … `nk>`; the divider normally keeps tags whole, but a flush
//!   for a tool call can cut anywhere) is carried over and completed with the next draft.
//!
//! A draft that ends up with nothing to show, nothing to say and no actions is dropped.
//!
//! A `</think>` without an opening tag (some models omit it) only removes the tag: the text before it
//! has already gone out, and guessing that it was reasoning could hide a real answer.

use super::{PipelineItem, SentenceDraft, Stage};

/// Longest `<|…|>` special token we recognise; longer text is not a token.
const MAX_SPECIAL_LEN: usize = 64;

const THINK_TAGS: &[(&str, bool)] = &[
    ("<think>", true),
    ("</think>", false),
    ("<thinking>", true),
    ("</thinking>", false),
];

/// What a `<` starts.
enum Tag {
    /// A think tag of this byte length; `true` opens a block.
    Think(usize, bool),
    /// A special token of this byte length.
    Special(usize),
    /// The text ends inside what may still become a tag.
    Partial,
    /// Just a `<`.
    None,
}

/// Classifies the text `s`, which starts with `<`.
fn classify(s: &str) -> Tag {
    if let Some(body) = s.strip_prefix("<|") {
        return match body.find("|>") {
            Some(i) if i <= MAX_SPECIAL_LEN && !body[..i].contains(char::is_whitespace) => {
                Tag::Special(i + 4)
            }
            Some(_) => Tag::None,
            None if body.len() <= MAX_SPECIAL_LEN && !body.contains(char::is_whitespace) => {
                Tag::Partial
            }
            None => Tag::None,
        };
    }
    for &(form, open) in THINK_TAGS {
        if s.get(..form.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(form))
        {
            return Tag::Think(form.len(), open);
        }
    }
    let partial = s.len() >= 2
        && THINK_TAGS.iter().any(|(form, _)| {
            form.get(..s.len())
                .is_some_and(|f| f.eq_ignore_ascii_case(s))
        });
    if partial { Tag::Partial } else { Tag::None }
}

/// Think-block state of one text stream (display and TTS each have their own; the divider keeps one to
/// keep reasoning out of the first-clause fast path).
#[derive(Debug, Clone, Default)]
pub(crate) struct TagState {
    pub(crate) in_think: bool,
    /// The unfinished tag at the end of the previous draft.
    carry: String,
}

impl TagState {
    /// Removes control tags from one draft's text (and think content unless `keep_think`).
    pub(crate) fn process(&mut self, text: &str, keep_think: bool) -> String {
        let input = std::mem::take(&mut self.carry) + text;
        let mut out = String::with_capacity(input.len());
        let mut rest = input.as_str();
        while let Some(lt) = rest.find('<') {
            let (before, tagged) = rest.split_at(lt);
            if keep_think || !self.in_think {
                out.push_str(before);
            }
            rest = match classify(tagged) {
                Tag::Think(len, open) => {
                    self.in_think = open;
                    // Shown reasoning must not run into the answer once the tag is gone.
                    if keep_think && !out.is_empty() && !out.ends_with(char::is_whitespace) {
                        out.push(' ');
                    }
                    &tagged[len..]
                }
                Tag::Special(len) => &tagged[len..],
                Tag::Partial => {
                    self.carry = tagged.to_owned();
                    ""
                }
                Tag::None => {
                    if keep_think || !self.in_think {
                        out.push('<');
                    }
                    &tagged[1..]
                }
            };
        }
        if keep_think || !self.in_think {
            out.push_str(rest);
        }
        out
    }
}

/// Pipeline stage 3: control tags and `<think>` blocks.
#[derive(Debug, Clone, Default)]
pub struct DisplayProcessor {
    show_think: bool,
    display: TagState,
    tts: TagState,
}

impl DisplayProcessor {
    pub fn new(show_think: bool) -> Self {
        Self {
            show_think,
            ..Self::default()
        }
    }
}

impl Stage for DisplayProcessor {
    fn push(&mut self, item: PipelineItem, out: &mut Vec<PipelineItem>) {
        let PipelineItem::Draft(draft) = item else {
            out.push(item);
            return;
        };
        let display_text = self.display.process(&draft.display_text, self.show_think);
        let tts_text = self.tts.process(&draft.tts_text, false);
        if display_text.trim().is_empty() && tts_text.trim().is_empty() && draft.actions.is_empty()
        {
            return;
        }
        out.push(PipelineItem::Draft(SentenceDraft {
            display_text,
            tts_text,
            ..draft
        }));
    }

    fn finish(&mut self, _out: &mut Vec<PipelineItem>) {
        // An unclosed think block ends with the turn; an unfinished tag fragment is dropped.
        self.display = TagState::default();
        self.tts = TagState::default();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use tomo_protocol::Action;

    fn draft(text: &str) -> PipelineItem {
        PipelineItem::Draft(SentenceDraft::new(text))
    }

    /// (display_text, tts_text) of every draft that comes out.
    fn run(show_think: bool, texts: &[&str]) -> Vec<(String, String)> {
        let mut p = DisplayProcessor::new(show_think);
        let mut out = Vec::new();
        for t in texts {
            p.push(draft(t), &mut out);
        }
        p.finish(&mut out);
        out.into_iter()
            .map(|i| match i {
                PipelineItem::Draft(d) => (d.display_text, d.tts_text),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn pair(d: &str, t: &str) -> (String, String) {
        (d.into(), t.into())
    }

    #[test]
    fn think_block_across_drafts_is_hidden() {
        let out = run(
            false,
            &[
                "<think>",
                "Let me reason.",
                "More reasoning.",
                "</think>",
                "The answer.",
            ],
        );
        assert_eq!(out, [pair("The answer.", "The answer.")]);
        let out = run(false, &["<think>Hmm. ok</think>Yes, 42."]);
        assert_eq!(out, [pair("Yes, 42.", "Yes, 42.")]);
    }

    #[test]
    fn think_block_is_shown_but_never_spoken_when_asked() {
        let out = run(
            true,
            &[
                "<thinking>Let me reason.",
                "Done.</THINKING>",
                "The answer.",
            ],
        );
        assert_eq!(
            out,
            [
                pair("Let me reason.", ""),
                pair("Done. ", ""),
                pair("The answer.", "The answer.")
            ]
        );
    }

    #[test]
    fn tags_cut_across_drafts_are_reassembled() {
        let out = run(
            false,
            &[
                "Before <thi",
                "nk>secret",
                "still secret</th",
                "ink> After.",
            ],
        );
        assert_eq!(
            out,
            [pair("Before ", "Before "), pair(" After.", " After.")]
        );
    }

    #[test]
    fn special_tokens_are_removed_from_both() {
        let out = run(
            true,
            &["Bye!<|im_end|>", "<|endoftext|>", "a <| not a token |> b"],
        );
        assert_eq!(
            out,
            [
                pair("Bye!", "Bye!"),
                pair("a <| not a token |> b", "a <| not a token |> b")
            ]
        );
    }

    #[test]
    fn other_angle_brackets_stay() {
        let out = run(false, &["1 < 2 and <b>bold</b> <t"]);
        // `<t` could only start a tag at the end of a draft; at the end of the turn it is dropped.
        assert_eq!(
            out,
            [pair("1 < 2 and <b>bold</b> ", "1 < 2 and <b>bold</b> ")]
        );
        let out = run(false, &["x <t", "here."]);
        assert_eq!(out, [pair("x ", "x "), pair("<there.", "<there.")]);
    }

    #[test]
    fn empty_drafts_are_dropped_unless_they_carry_actions() {
        let mut p = DisplayProcessor::new(false);
        let mut out = Vec::new();
        let mut with_action = SentenceDraft::default();
        with_action
            .actions
            .push(Action::Emotion { name: "joy".into() });
        p.push(PipelineItem::Draft(with_action.clone()), &mut out);
        p.push(draft("<|im_end|>"), &mut out);
        assert_eq!(out, [PipelineItem::Draft(with_action)]);
    }

    #[test]
    fn unclosed_think_ends_with_the_turn() {
        let mut p = DisplayProcessor::new(false);
        let mut out = Vec::new();
        p.push(draft("<think>never closed"), &mut out);
        p.finish(&mut out);
        p.push(draft("Next turn."), &mut out);
        assert_eq!(out, [draft("Next turn.")]);
    }
}
