//! Tests of the sentence divider (kept in their own file so the divider stays readable).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use proptest::prelude::*;
use tomo_protocol::{ToolCallEvent, ToolStatus};

/// Feeds `chunks` as deltas and returns the raw text of every draft, finish included.
fn divide_chunks(chunks: &[&str], fast: bool) -> Vec<String> {
    let mut d = SentenceDivider::new(fast);
    let mut out = Vec::new();
    for c in chunks {
        d.push(PipelineItem::Text((*c).to_owned()), &mut out);
    }
    d.finish(&mut out);
    raws(&out)
}

fn raws(items: &[PipelineItem]) -> Vec<String> {
    items
        .iter()
        .map(|i| match i {
            PipelineItem::Draft(d) => d.raw.clone(),
            other => panic!("unexpected item {other:?}"),
        })
        .collect()
}

/// Divides `text` (fast path off) both as one delta and one char at a time; both must agree.
fn divide(text: &str) -> Vec<String> {
    let whole = divide_chunks(&[text], false);
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(
        whole,
        divide_chunks(&refs, false),
        "chunking changed the result for {text:?}"
    );
    whole
}

fn fast(text: &str) -> Vec<String> {
    divide_chunks(&[text], true)
}

#[test]
fn splits_on_latin_terminators() {
    assert_eq!(
        divide("Hello there. How are you? Great!"),
        ["Hello there.", "How are you?", "Great!"]
    );
    assert_eq!(divide("Really?! Yes!!! Ok."), ["Really?!", "Yes!!!", "Ok."]);
}

#[test]
fn emits_a_sentence_as_soon_as_its_end_is_certain() {
    let mut d = SentenceDivider::new(false);
    let mut out = Vec::new();
    d.push(PipelineItem::Text("Hello world.".into()), &mut out);
    assert!(
        out.is_empty(),
        "`.` at the end of the buffer could still be `3.14`-like"
    );
    d.push(PipelineItem::Text(" ".into()), &mut out);
    assert_eq!(raws(&out), ["Hello world."], "a space after `.` decides it");
    out.clear();
    d.push(PipelineItem::Text("Wow!".into()), &mut out);
    d.push(PipelineItem::Text(" A".into()), &mut out);
    assert_eq!(raws(&out), ["Wow!"]);
    let mut d = SentenceDivider::new(false);
    let mut out = Vec::new();
    d.push(PipelineItem::Text("你好。".into()), &mut out);
    assert!(out.is_empty(), "a closing quote could still follow");
    d.push(PipelineItem::Text("今".into()), &mut out);
    assert_eq!(raws(&out), ["你好。"]);
}

#[test]
fn keeps_decimals_and_thousands_together() {
    assert_eq!(
        divide("Pi is 3.14 roughly. It costs 1,000 dollars."),
        ["Pi is 3.14 roughly.", "It costs 1,000 dollars."]
    );
    assert_eq!(
        divide("Version 2.0.1 is out. Yes."),
        ["Version 2.0.1 is out.", "Yes."]
    );
}

#[test]
fn titles_never_end_a_sentence() {
    for t in ["Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "St."] {
        let text = format!("I met {t} Smith today. Then I left.");
        assert_eq!(
            divide(&text),
            [format!("I met {t} Smith today."), "Then I left.".into()]
        );
    }
}

#[test]
fn latin_abbreviations_continue() {
    assert_eq!(
        divide("Use a fruit, e.g. Apples or pears. Ok."),
        ["Use a fruit, e.g. Apples or pears.", "Ok."]
    );
    assert_eq!(
        divide("One thing, i.e. This one. Ok."),
        ["One thing, i.e. This one.", "Ok."]
    );
    assert_eq!(
        divide("Cats vs. Dogs is old. Ok."),
        ["Cats vs. Dogs is old.", "Ok."]
    );
}

#[test]
fn lowercase_abbreviations_depend_on_the_next_word() {
    assert_eq!(
        divide("Apples, pears, etc. are fruit. Ok."),
        ["Apples, pears, etc. are fruit.", "Ok."]
    );
    assert_eq!(
        divide("Apples, pears, etc. Then more."),
        ["Apples, pears, etc.", "Then more."]
    );
    assert_eq!(
        divide("At 9 a.m. we eat. Ok."),
        ["At 9 a.m. we eat.", "Ok."]
    );
    assert_eq!(
        divide("We eat at 9 p.m. Then sleep."),
        ["We eat at 9 p.m.", "Then sleep."]
    );
    assert_eq!(
        divide("The U.S. economy grew. Ok."),
        ["The U.S. economy grew.", "Ok."]
    );
    // Case-sensitive titles: `ms` is milliseconds here and may end a sentence.
    assert_eq!(divide("It took 5 ms. Fast."), ["It took 5 ms.", "Fast."]);
}

#[test]
fn ellipsis_continues_before_lowercase_only() {
    assert_eq!(
        divide("Well... maybe not. Ok."),
        ["Well... maybe not.", "Ok."]
    );
    assert_eq!(divide("Well... Maybe not."), ["Well...", "Maybe not."]);
    assert_eq!(
        divide("Hmm… let me think… Right."),
        ["Hmm… let me think…", "Right."]
    );
    assert_eq!(divide("Wait...what? Ok."), ["Wait...what?", "Ok."]);
    assert_eq!(divide("The end..."), ["The end..."]);
}

#[test]
fn urls_do_not_split() {
    assert_eq!(
        divide("See https://example.com/a.b?x=1 for more. Ok."),
        ["See https://example.com/a.b?x=1 for more.", "Ok."]
    );
    assert_eq!(
        divide("Go to example.com. Then login."),
        ["Go to example.com.", "Then login."]
    );
}

#[test]
fn quotes_and_brackets() {
    assert_eq!(
        divide("He said \"stop.\" Then we left."),
        ["He said \"stop.\"", "Then we left."]
    );
    assert_eq!(
        divide("\"Hi!\" she said. Ok."),
        ["\"Hi!\" she said.", "Ok."]
    );
    assert_eq!(
        divide("(\"Wait. What?\") Yes."),
        ["(\"Wait. What?\")", "Yes."]
    );
    assert_eq!(
        divide("She said “No. Never.” Fine."),
        ["She said “No. Never.”", "Fine."]
    );
    assert_eq!(
        divide("他说「你好。」然后走了。"),
        ["他说「你好。」", "然后走了。"]
    );
    // A closing bracket after a terminator is part of the sentence even without an opener we track.
    assert_eq!(divide("Done.) Next."), ["Done.)", "Next."]);
}

#[test]
fn emphasis_and_emoji_after_a_terminator_stay_with_it() {
    assert_eq!(
        divide("**Note.** This is it."),
        ["**Note.**", "This is it."]
    );
    assert_eq!(
        divide("Great job!🎉🎉 Next one."),
        ["Great job!🎉🎉", "Next one."]
    );
    assert_eq!(
        divide("Great job! 🎉 Next one."),
        ["Great job!", "🎉 Next one."]
    );
}

#[test]
fn stray_quote_and_emoticons_do_not_swallow_text() {
    assert_eq!(
        divide("I'm sad :( but okay. Next one."),
        ["I'm sad :( but okay.", "Next one."]
    );
    assert_eq!(
        divide("He is 6'2\" tall. Yes.\nNew line. Ok."),
        ["He is 6'2\" tall. Yes.", "New line.", "Ok."]
    );
}

#[test]
fn code_spans_and_fences_do_not_split() {
    assert_eq!(
        divide("Call `a.b()` now. Done."),
        ["Call `a.b()` now.", "Done."]
    );
    assert_eq!(
        divide("Use ``x. y`` here. Ok."),
        ["Use ``x. y`` here.", "Ok."]
    );
    let text = "Look:\n```rust\nlet x = 1. ;\n\nfoo();\n```\nDone.";
    assert_eq!(
        divide(text),
        ["Look:", "```rust\nlet x = 1. ;\n\nfoo();\n```", "Done."]
    );
    assert_eq!(
        divide("Text ```a. b``` after. Ok."),
        ["Text", "```a. b```", "after.", "Ok."]
    );
}

#[test]
fn cjk_without_spaces() {
    assert_eq!(divide("你好。今天天气很好！"), ["你好。", "今天天气很好！"]);
    assert_eq!(divide("真的吗？是的；好。"), ["真的吗？", "是的；", "好。"]);
    assert_eq!(divide("こんにちは。元気？"), ["こんにちは。", "元気？"]);
    assert_eq!(divide("Hello.你好。"), ["Hello.", "你好。"]);
}

#[test]
fn newlines_end_sentences_and_blank_ones_vanish() {
    assert_eq!(
        divide("Title\nFirst line\n\n  \nSecond line"),
        ["Title", "First line", "Second line"]
    );
    assert_eq!(divide("  \n\n "), Vec::<String>::new());
    assert_eq!(
        divide("Steps:\n1. Open the app.\n2. Click it."),
        ["Steps:", "1. Open the app.", "2. Click it."]
    );
}

#[test]
fn finish_flushes_the_remainder() {
    assert_eq!(divide("No terminator here"), ["No terminator here"]);
    let mut d = SentenceDivider::new(false);
    let mut out = Vec::new();
    d.push(PipelineItem::Text("Tail etc.".into()), &mut out);
    assert!(out.is_empty());
    d.finish(&mut out);
    assert_eq!(raws(&out), ["Tail etc."]);
}

#[test]
fn fast_path_cuts_first_clause_once() {
    let text = "Well, I think that we should go, because it is late. Next sentence, with a comma in it, too.";
    assert_eq!(
        fast(text),
        [
            "Well, I think that we should go,",
            "because it is late.",
            "Next sentence, with a comma in it, too."
        ]
    );
    assert_eq!(divide(text).len(), 2, "no cut when the fast path is off");
}

#[test]
fn fast_path_needs_enough_words() {
    assert_eq!(fast("Yes, sure thing. Ok."), ["Yes, sure thing.", "Ok."]);
    assert_eq!(fast("你好，世界。"), ["你好，世界。"]);
    assert_eq!(
        fast("今天天气很好，我们去公园吧。"),
        ["今天天气很好，", "我们去公园吧。"]
    );
    assert_eq!(
        fast("一二三、四五六七八、九。"),
        ["一二三、四五六七八、", "九。"]
    );
}

#[test]
fn fast_path_skips_thousands_quotes_and_tags() {
    assert_eq!(
        fast("I have exactly 1,000 apples, and more."),
        ["I have exactly 1,000 apples,", "and more."]
    );
    assert_eq!(
        fast("He said \"one two three four, five\" and left."),
        ["He said \"one two three four, five\" and left."]
    );
    // A tag-only first line neither counts as words nor disarms the fast path.
    assert_eq!(
        fast("[joy]\nOh well you know, it is fine."),
        ["[joy]", "Oh well you know,", "it is fine."]
    );
}

#[test]
fn fast_path_ignores_reasoning() {
    let text = "<think>I think that we should, maybe.</think> Sure thing my friend, here it is. Next, one.";
    assert_eq!(
        fast(text),
        [
            "<think>I think that we should, maybe.</think> Sure thing my friend,",
            "here it is.",
            "Next, one."
        ]
    );
    let text = "<think>\nOne two three four, five.\n</think>\nWell you know what, I mean it.";
    assert_eq!(
        fast(text),
        [
            "<think>",
            "One two three four, five.",
            "</think>",
            "Well you know what,",
            "I mean it."
        ]
    );
}

#[test]
fn non_text_items_flush_first_and_keep_order() {
    let call = PipelineItem::ToolCall(ToolCallEvent {
        tool_id: "1".into(),
        tool_name: "search".into(),
        args: serde_json::json!({}),
        status: ToolStatus::Running,
        result: None,
        round: 1,
    });
    let mut d = SentenceDivider::new(false);
    let mut out = Vec::new();
    d.push(PipelineItem::Text("Let me check. One mo".into()), &mut out);
    d.push(call.clone(), &mut out);
    d.push(PipelineItem::Text("ment. Found it.".into()), &mut out);
    d.finish(&mut out);
    let kinds: Vec<String> = out
        .iter()
        .map(|i| match i {
            PipelineItem::Draft(d) => d.raw.clone(),
            PipelineItem::ToolCall(_) => "<tool>".into(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["Let me check.", "One mo", "<tool>", "ment.", "Found it."]
    );
    // No text buffered: the tool call passes straight through.
    let mut out = Vec::new();
    d.push(call.clone(), &mut out);
    assert_eq!(out, [call]);
}

#[test]
fn drafts_start_with_all_texts_equal() {
    let mut d = SentenceDivider::new(false);
    let mut out = Vec::new();
    d.push(PipelineItem::Text("  Hi there.  ".into()), &mut out);
    d.finish(&mut out);
    assert_eq!(
        out,
        [PipelineItem::Draft(SentenceDraft {
            raw: "Hi there.".into(),
            display_text: "Hi there.".into(),
            tts_text: "Hi there.".into(),
            actions: vec![],
            display_spans: vec![],
        })]
    );
}

// ---- properties ----

/// Pieces the random texts are made of: the cases the rules above care about.
#[rustfmt::skip]
const PIECES: &[&str] = &[
    "hello", "World", "the", "cat", "I", "Mr.", "Dr.", "e.g.", "etc.", "a.m.", "U.S.", "3.14", "1,000",
    "2.0.1", ".", "!", "?", "?!", "...", "…", ",", "，", "、", "。", "！", "？", "；", "你好", "今天天气很好",
    "\"", "“", "”", "(", ")", "「", "」", "[joy]", "`a.b()`", "`", "```", "https://example.com/a.b",
    "\n", "\n\n", ":(", "1.", "ms.", "**", "🎉", "<think>", "</think>",
];

/// Mostly single spaces, sometimes none (CJK, glued punctuation), double spaces or newlines.
const SEPARATORS: &[&str] = &[" ", " ", " ", "", "  ", "\n"];

fn text_strategy() -> impl Strategy<Value = String> {
    let piece = proptest::sample::select(PIECES);
    let sep = proptest::sample::select(SEPARATORS);
    proptest::collection::vec((piece, sep), 0..40)
        .prop_map(|v| v.into_iter().flat_map(|(p, s)| [p, s]).collect::<String>())
}

/// Splits `text` at the given (scaled) positions, snapped to char boundaries.
fn chunk(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut i = c % (text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    points.extend([0, text.len()]);
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| text[w[0]..w[1]].to_owned())
        .collect()
}

/// The reconstruction property, precisely: every sentence is non-empty and has no leading/trailing
/// whitespace, and the input is `w0 s0 w1 s1 … sn wn+1` where the `s` are the sentences in order and
/// each `w` is a (possibly empty) run of whitespace. So nothing is lost, duplicated or reordered, and
/// only whitespace at sentence boundaries may be dropped.
fn assert_reconstructs(input: &str, sentences: &[String]) -> Result<(), TestCaseError> {
    let mut rest = input;
    for s in sentences {
        prop_assert!(!s.is_empty() && s.trim() == s, "bad sentence {s:?}");
        rest = rest.trim_start();
        prop_assert!(
            rest.starts_with(s.as_str()),
            "{s:?} is not next in {rest:?}"
        );
        rest = &rest[s.len()..];
    }
    prop_assert!(rest.trim().is_empty(), "lost text {rest:?}");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn sentences_reconstruct_the_input(text in text_strategy(), cuts in proptest::collection::vec(any::<usize>(), 0..20), fast in any::<bool>()) {
        let chunks = chunk(&text, &cuts);
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        assert_reconstructs(&text, &divide_chunks(&refs, fast))?;
    }

    #[test]
    fn chunking_does_not_change_the_sentences(text in text_strategy(), cuts in proptest::collection::vec(any::<usize>(), 0..20), fast in any::<bool>()) {
        let whole = divide_chunks(&[&text], fast);
        let chunks = chunk(&text, &cuts);
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        prop_assert_eq!(&whole, &divide_chunks(&refs, fast));
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        prop_assert_eq!(&whole, &divide_chunks(&refs, fast));
    }
}
