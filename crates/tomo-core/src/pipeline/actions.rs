//! Action extractor: `[emotion]` tags naming a configured emotion become [`Action::Emotion`]s, and
//! `[key:value]` tags a plugin of the character claims (e.g. mood_chat's `[mood:+10]`) become
//! [`Action::Tag`]s: the plugin reads them from the sentences, and they are never shown or spoken.
//!
//! Only names from the profile's emotion map are tags; any other bracket text (`[1]`, `[citation
//! needed]`) is ordinary text and left alone. Matching is case-insensitive, the action carries the
//! canonical name as configured.
//!
//! A sentence that consists only of tags (the model often writes `[joy]` on a line of its own) is not
//! emitted: its actions are held and attached, first, to the next sentence, because that is the sentence
//! the expression belongs to. Tags still pending at the end of the turn come out as a draft with empty text
//! and only actions (the TTS filter turns that into `tts_text: None`, so it is shown but never spoken).

use super::{PipelineItem, SentenceDraft, Stage};
use tomo_plugin_api::TagSpec;
use tomo_protocol::Action;

/// Longest bracket content considered as a tag; longer bracket text is certainly prose.
const MAX_TAG_LEN: usize = 48;

/// Pipeline stage 2: extracts emotion tags into actions.
#[derive(Debug, Clone, Default)]
pub struct ActionExtractor {
    /// (lowercased, canonical) emotion names.
    emotions: Vec<(String, String)>,
    /// Tags claimed by the character's plugins.
    tags: Vec<TagSpec>,
    /// Actions of tag-only sentences, waiting for the next sentence.
    pending: Vec<Action>,
}

impl ActionExtractor {
    pub fn new(emotions: &[String], tags: &[TagSpec]) -> Self {
        let emotions = emotions
            .iter()
            .map(|e| (e.trim().to_lowercase(), e.trim().to_owned()))
            .collect();
        Self {
            emotions,
            tags: tags.to_vec(),
            pending: Vec::new(),
        }
    }

    /// The canonical emotion named by the bracket content `inner`, if it is one.
    fn emotion(&self, inner: &str) -> Option<&str> {
        let key = inner.trim().to_lowercase();
        self.emotions
            .iter()
            .find(|(lower, _)| *lower == key)
            .map(|(_, canonical)| canonical.as_str())
    }

    /// The `[key:value]` tag `inner` is, if a plugin claims it.
    fn plugin_tag(&self, inner: &str) -> Option<Action> {
        self.tags.iter().find_map(|spec| {
            spec.read(inner).map(|value| Action::Tag {
                key: spec.key.to_owned(),
                value: value.to_owned(),
            })
        })
    }

    /// Removes known tags from `text`, appending their actions to `actions` in order of appearance.
    pub fn strip_tags(&self, text: &str, actions: &mut Vec<Action>) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(open) = rest.find('[') {
            let after_open = &rest[open + 1..];
            let close = after_open
                .find([']', '[', '\n'])
                .filter(|&i| after_open[i..].starts_with(']') && i <= MAX_TAG_LEN);
            let action = close.and_then(|i| {
                let inner = &after_open[..i];
                self.emotion(inner)
                    .map(|name| Action::Emotion {
                        name: name.to_owned(),
                    })
                    .or_else(|| self.plugin_tag(inner))
            });
            let Some(action) = action else {
                out.push_str(&rest[..=open]);
                rest = after_open;
                continue;
            };
            actions.push(action);
            out.push_str(&rest[..open]);
            rest = &after_open[close.map_or(0, |i| i + 1)..];
            // Keep the text readable where the tag was: "a [joy] b" → "a b", "a [joy]." → "a.",
            // "[joy] a" → "a".
            let next = rest.chars().next();
            let spaced =
                next.is_some_and(char::is_whitespace) && out.ends_with(char::is_whitespace);
            if out.trim().is_empty() || spaced {
                rest = rest.trim_start();
            } else if next.is_none_or(|c| is_closing_punct(c) || c.is_whitespace()) {
                out.truncate(out.trim_end().len());
            }
        }
        out.push_str(rest);
        out
    }
}

fn is_closing_punct(c: char) -> bool {
    matches!(
        c,
        '.' | ',' | '!' | '?' | ';' | ':' | '…' | '。' | '，' | '！' | '？' | '；' | '、'
    )
}

impl Stage for ActionExtractor {
    fn push(&mut self, item: PipelineItem, out: &mut Vec<PipelineItem>) {
        let PipelineItem::Draft(draft) = item else {
            out.push(item);
            return;
        };
        let mut found = Vec::new();
        let display_text = self.strip_tags(&draft.display_text, &mut found);
        // Same tags, already counted from the display text.
        let tts_text = self.strip_tags(&draft.tts_text, &mut Vec::new());
        if !found.is_empty() && display_text.trim().is_empty() && tts_text.trim().is_empty() {
            self.pending.extend(draft.actions);
            self.pending.extend(found);
            return;
        }
        let mut actions = std::mem::take(&mut self.pending);
        actions.extend(draft.actions);
        actions.extend(found);
        out.push(PipelineItem::Draft(SentenceDraft {
            display_text,
            tts_text,
            actions,
            ..draft
        }));
    }

    fn finish(&mut self, out: &mut Vec<PipelineItem>) {
        if !self.pending.is_empty() {
            out.push(PipelineItem::Draft(SentenceDraft {
                actions: std::mem::take(&mut self.pending),
                ..SentenceDraft::default()
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn extractor() -> ActionExtractor {
        ActionExtractor::new(
            &[
                "Joy".to_owned(),
                "sad".to_owned(),
                "very surprised".to_owned(),
            ],
            &[tomo_plugins::mood_chat::MOOD_TAG],
        )
    }

    fn draft(text: &str) -> PipelineItem {
        PipelineItem::Draft(SentenceDraft::new(text))
    }

    fn emotion(name: &str) -> Action {
        Action::Emotion { name: name.into() }
    }

    fn mood(value: &str) -> Action {
        Action::Tag {
            key: "mood".into(),
            value: value.into(),
        }
    }

    fn run(items: Vec<PipelineItem>) -> Vec<PipelineItem> {
        let mut x = extractor();
        let mut out = Vec::new();
        for i in items {
            x.push(i, &mut out);
        }
        x.finish(&mut out);
        out
    }

    fn only_draft(items: Vec<PipelineItem>) -> SentenceDraft {
        match items.as_slice() {
            [PipelineItem::Draft(d)] => d.clone(),
            other => panic!("expected one draft, got {other:?}"),
        }
    }

    #[test]
    fn known_tags_become_actions_anywhere() {
        let d = only_draft(run(vec![draft(
            "[joy] I'm so happy [SAD] and sad [Very Surprised].",
        )]));
        assert_eq!(
            d.actions,
            [emotion("Joy"), emotion("sad"), emotion("very surprised")]
        );
        assert_eq!(d.display_text, "I'm so happy and sad.");
        assert_eq!(d.tts_text, "I'm so happy and sad.");
        assert_eq!(
            d.raw, "[joy] I'm so happy [SAD] and sad [Very Surprised].",
            "raw stays as written"
        );
    }

    #[test]
    fn tag_at_the_end() {
        let d = only_draft(run(vec![draft("See you! [joy]")]));
        assert_eq!(d.display_text, "See you!");
        assert_eq!(d.actions, [emotion("Joy")]);
    }

    #[test]
    fn unknown_brackets_are_left_alone() {
        let text = "As shown [1], this is [citation needed] true [joy ] [ x [sad].";
        let d = only_draft(run(vec![draft(text)]));
        assert_eq!(
            d.display_text,
            "As shown [1], this is [citation needed] true [ x."
        );
        assert_eq!(d.actions, [emotion("Joy"), emotion("sad")]);
        let d = only_draft(run(vec![draft("[happy] [1]")]));
        assert_eq!(d.display_text, "[happy] [1]");
        assert!(d.actions.is_empty());
    }

    #[test]
    fn tag_only_sentence_attaches_to_the_next() {
        let out = run(vec![draft("[joy]"), draft("[sad]"), draft("Hello there.")]);
        let d = only_draft(out);
        assert_eq!(d.display_text, "Hello there.");
        assert_eq!(d.actions, [emotion("Joy"), emotion("sad")]);
    }

    #[test]
    fn pending_tags_wait_across_tool_calls_and_flush_at_finish() {
        let marker = PipelineItem::Sentence(tomo_protocol::Sentence {
            index: 7,
            display_text: "x".into(),
            tts_text: None,
            actions: vec![],
            display_spans: vec![],
        });
        let out = run(vec![draft("[joy]"), marker.clone()]);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0], marker,
            "other items pass untouched and are not delayed"
        );
        let d = match &out[1] {
            PipelineItem::Draft(d) => d.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(d.actions, [emotion("Joy")]);
        assert!(d.display_text.is_empty() && d.tts_text.is_empty());
    }

    #[test]
    fn mood_tags_become_actions_and_leave_the_text() {
        let d = only_draft(run(vec![draft("[joy] Great move! [mood:+10]")]));
        assert_eq!(d.display_text, "Great move!");
        assert_eq!(d.tts_text, "Great move!");
        assert_eq!(d.actions, [emotion("Joy"), mood("+10")]);
        let d = only_draft(run(vec![draft("[Mood: -5] Oh no. [mood:70]")]));
        assert_eq!(d.display_text, "Oh no.");
        assert_eq!(d.actions, [mood("-5"), mood("70")]);
        // Not mood tags: out of range, not a number, another key.
        let d = only_draft(run(vec![draft("[mood:170] [mood:up] [note:1]")]));
        assert_eq!(d.display_text, "[mood:170] [mood:up] [note:1]");
        assert!(d.actions.is_empty());
    }

    #[test]
    fn no_emotions_configured_means_no_tags() {
        let mut x = ActionExtractor::new(&[], &[]);
        let mut out = Vec::new();
        x.push(draft("[joy] Hi."), &mut out);
        assert_eq!(only_draft(out).display_text, "[joy] Hi.");
    }
}
