//! Tests of the TTS filter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::pipeline::SentenceDraft;
use tomo_protocol::{Action, ToolCallEvent, ToolStatus};

fn say(text: &str) -> Option<String> {
    speakable(text)
}

fn some(text: &str) -> Option<String> {
    Some(text.to_owned())
}

#[test]
fn markdown_emphasis_and_headings() {
    assert_eq!(
        say("**Bold** and *em* and __strong__ and ~~gone~~."),
        some("Bold and em and strong and gone.")
    );
    assert_eq!(say("## Getting started"), some("Getting started"));
    assert_eq!(say("> quoted text"), some("quoted text"));
}

#[test]
fn list_markers() {
    assert_eq!(say("- Buy milk."), some("Buy milk."));
    assert_eq!(say("* Star item"), some("Star item"));
    assert_eq!(say("1. Open the app."), some("Open the app."));
    assert_eq!(say("12) Twelfth"), some("Twelfth"));
    assert_eq!(
        say("1.5 liters"),
        some("1.5 liters"),
        "a decimal is not a list marker"
    );
}

#[test]
fn code() {
    // Inline code keeps its words: "call `render`" is meaningful speech.
    assert_eq!(say("Call `render()` now."), some("Call render() now."));
    assert_eq!(say("Set `my_var` to 1."), some("Set my var to 1."));
    assert_eq!(say("```rust\nfn main() {}\n```"), None);
    assert_eq!(say("Run ```ls -la``` then done."), some("Run then done."));
    assert_eq!(say("Unclosed ```python\nprint(1)"), some("Unclosed"));
}

#[test]
fn links_and_images() {
    assert_eq!(
        say("[the docs](https://docs.rs/x) say so."),
        some("the docs say so.")
    );
    assert_eq!(say("![a cat](cat.png) Cute."), some("Cute."));
    assert_eq!(
        say("See [1] and [citation needed]."),
        some("See [1] and [citation needed].")
    );
}

#[test]
fn html_tags_and_urls() {
    assert_eq!(say("<b>Bold</b> text<br/>more"), some("Bold text more"));
    assert_eq!(say("x < y is true"), some("x < y is true"));
    assert_eq!(say("See https://example.com/a.b?x=1."), some("See."));
    assert_eq!(
        say("Visit www.rust-lang.org for more."),
        some("Visit for more.")
    );
    assert_eq!(say("Link: (HTTPS://x.io/path) ok"), some("Link: () ok"));
    assert_eq!(say("https://example.com"), None);
}

#[test]
fn emoji_and_pictographs() {
    assert_eq!(say("Great job 🎉🎉!"), some("Great job!"));
    assert_eq!(say("I ❤️ Rust 👍🏽"), some("I Rust"));
    assert_eq!(say("🇯🇵 Japan ✨"), some("Japan"));
    assert_eq!(say("👨‍👩‍👧 family"), some("family"));
    assert_eq!(say("1️⃣ first"), some("1 first"));
    assert_eq!(say("→ next ▶"), some("next"));
    assert_eq!(say("🎉🎉"), None);
}

#[test]
fn keeps_numbers_units_and_names() {
    let text = "It's 25°C, 50% off, $5, C# and C++ at 3.14 or 1,000 items — ok?";
    assert_eq!(say(text), some(text));
    assert_eq!(say("你好，世界！"), some("你好，世界！"));
}

#[test]
fn stray_symbols_go() {
    assert_eq!(say("a | b ~ c # d > e _ f"), some("a b c d e f"));
    assert_eq!(say("| Name | Age |"), some("Name Age"));
    assert_eq!(say("#hashtag and #1"), some("hashtag and 1"));
}

#[test]
fn whitespace_collapses() {
    assert_eq!(say("  lots \t of\n\n space  "), some("lots of space"));
}

#[test]
fn nothing_speakable_is_none_never_empty() {
    for text in [
        "",
        "   ",
        "***",
        "---",
        "| --- |",
        "<br>",
        "...",
        "🎉",
        "```\n```",
        "![x](y.png)",
    ] {
        assert_eq!(say(text), None, "{text:?}");
    }
}

fn draft(display: &str, tts: &str, actions: Vec<Action>) -> PipelineItem {
    PipelineItem::Draft(SentenceDraft {
        raw: display.into(),
        display_text: display.into(),
        tts_text: tts.into(),
        actions,
        display_spans: vec![],
    })
}

#[test]
fn stage_finishes_drafts_into_numbered_sentences() {
    let call = PipelineItem::ToolCall(ToolCallEvent {
        tool_id: "t".into(),
        tool_name: "clock".into(),
        args: serde_json::Value::Null,
        status: ToolStatus::Completed,
        result: Some("noon".into()),
        round: 1,
    });
    let joy = vec![Action::Emotion { name: "joy".into() }];
    let mut f = TtsFilter::new();
    let mut out = Vec::new();
    f.push(
        draft("  **Hi** there  ", "  **Hi** there  ", vec![]),
        &mut out,
    );
    f.push(call.clone(), &mut out);
    f.push(draft("🎉", "🎉", vec![]), &mut out);
    f.push(draft("", "", joy.clone()), &mut out);
    f.push(draft("", "", vec![]), &mut out);
    f.finish(&mut out);
    assert_eq!(
        out,
        [
            PipelineItem::Sentence(Sentence {
                index: 0,
                display_text: "**Hi** there".into(),
                tts_text: some("Hi there"),
                actions: vec![],
                display_spans: vec![],
            }),
            call,
            PipelineItem::Sentence(Sentence {
                index: 1,
                display_text: "🎉".into(),
                tts_text: None,
                actions: vec![],
                display_spans: vec![],
            }),
            PipelineItem::Sentence(Sentence {
                index: 2,
                display_text: String::new(),
                tts_text: None,
                display_spans: vec![],
                actions: joy
            }),
        ]
    );
}
