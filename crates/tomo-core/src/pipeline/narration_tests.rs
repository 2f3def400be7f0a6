//! Tests of the narration filter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use proptest::prelude::*;

fn span(text: &str, style: SpanStyle) -> DisplaySpan {
    DisplaySpan {
        text: text.into(),
        style,
    }
}

fn speech(text: &str) -> DisplaySpan {
    span(text, SpanStyle::Speech)
}

fn narration(text: &str) -> DisplaySpan {
    span(text, SpanStyle::Narration)
}

fn split(text: &str) -> Vec<DisplaySpan> {
    NarrationState::default().split(text)
}

fn said(text: &str) -> String {
    spoken(&split(text)).trim().to_owned()
}

#[test]
fn asterisk_narration_is_not_spoken() {
    assert_eq!(
        split("*smiles warmly* Hello there!"),
        [narration("smiles warmly"), speech(" Hello there!")]
    );
    assert_eq!(said("Good night! *waves*"), "Good night!");
    assert_eq!(said("*nods*"), "");
    assert_eq!(said("*摸摸你的头* 好啦，别难过。"), "好啦，别难过。");
}

#[test]
fn a_single_word_between_words_is_emphasis_and_spoken() {
    assert_eq!(
        split("I *really* mean it."),
        [
            speech("I "),
            span("really", SpanStyle::Emphasis),
            speech(" mean it.")
        ]
    );
    assert_eq!(said("I *really* mean it."), "I really mean it.");
    // At the edge of the sentence, one word is still an action.
    assert_eq!(said("*sighs* Fine."), "Fine.");
}

#[test]
fn asterisks_that_open_nothing_stay() {
    assert_eq!(said("5 * 3 is 15"), "5 * 3 is 15");
    assert_eq!(said("It is **very** good."), "It is **very** good.");
    assert_eq!(said("x*y"), "x*y");
}

#[test]
fn narration_across_sentences_carries_over() {
    let mut state = NarrationState::default();
    assert_eq!(
        state.split("*She looks at you."),
        [narration("She looks at you.")]
    );
    assert_eq!(
        state.split("Then she smiles.*"),
        [narration("Then she smiles.")]
    );
    assert_eq!(state.split("Hi!"), [speech("Hi!")]);
}

#[test]
fn bracketed_stage_directions_but_not_citations_or_links() {
    assert_eq!(said("[sighs] Okay, okay."), "Okay, okay.");
    assert_eq!(said("【叹气】好吧。"), "好吧。");
    assert_eq!(said("As shown [1], it works."), "As shown [1], it works.");
    assert_eq!(
        said("Read [the docs](https://x.y) now."),
        "Read [the docs](https://x.y) now."
    );
}

#[test]
fn parentheses_at_the_edges_are_narration_inside_speech_an_aside() {
    assert_eq!(said("(laughs) That's funny."), "That's funny.");
    assert_eq!(said("That's funny (laughs)."), "That's funny .");
    assert_eq!(said("（微笑）你好呀！"), "你好呀！");
    assert_eq!(
        said("Meet me at 3 (or 4) today."),
        "Meet me at 3 (or 4) today."
    );
    assert_eq!(said("(42) is the answer"), "(42) is the answer");
}

#[test]
fn the_stage_keeps_display_text_and_sends_spans_only_when_styled() {
    let mut stage = NarrationFilter::new();
    let mut out = Vec::new();
    stage.push(
        PipelineItem::Draft(SentenceDraft::new("*grins* Sure.")),
        &mut out,
    );
    stage.push(PipelineItem::Draft(SentenceDraft::new("Plain.")), &mut out);
    let drafts: Vec<SentenceDraft> = out
        .into_iter()
        .map(|i| match i {
            PipelineItem::Draft(d) => d,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(drafts[0].display_text, "*grins* Sure.");
    assert_eq!(drafts[0].tts_text, " Sure.");
    assert_eq!(
        drafts[0].display_spans,
        [narration("grins"), speech(" Sure.")]
    );
    assert!(drafts[1].display_spans.is_empty());
}

#[test]
fn an_unclosed_asterisk_ends_with_the_turn() {
    let mut stage = NarrationFilter::new();
    let mut out = Vec::new();
    stage.push(
        PipelineItem::Draft(SentenceDraft::new("*walks away")),
        &mut out,
    );
    stage.finish(&mut out);
    stage.push(
        PipelineItem::Draft(SentenceDraft::new("New turn.")),
        &mut out,
    );
    match out.last() {
        Some(PipelineItem::Draft(d)) => assert_eq!(d.tts_text, "New turn."),
        other => panic!("{other:?}"),
    }
}

#[rustfmt::skip]
const PIECES: &[&str] = &[
    "Hello", "you", "*", "**", "*smiles*", "(", ")", "（", "）", "[", "]", "【", "】", "laughs", "42", "你好",
    ".", ",", " ", "\n", "(see", "x)", "[1]", "*nods", "softly*",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Whatever the text, the spans put back together (with markers) never invent text, narration is never
    /// in the spoken text, and nothing panics on odd bracket and asterisk mixes.
    #[test]
    fn spans_cover_the_text_and_narration_is_never_spoken(
        pieces in proptest::collection::vec(proptest::sample::select(PIECES), 0..30),
    ) {
        let text: String = pieces.concat();
        let spans = split(&text);
        let joined: String = spans.iter().map(|s| s.text.as_str()).collect();
        // Spans only drop markers: every character of the spans appears in the text in order.
        let mut rest = text.chars();
        for c in joined.chars() {
            prop_assert!(rest.any(|t| t == c), "{joined:?} is not a subsequence of {text:?}");
        }
        let said = spoken(&spans);
        for s in spans.iter().filter(|s| s.style == SpanStyle::Narration) {
            if s.text.chars().any(char::is_alphanumeric) {
                prop_assert!(said.len() + s.text.len() <= joined.len());
            }
        }
        prop_assert!(spans.windows(2).all(|w| w[0].style != w[1].style), "{spans:?}");
    }
}
