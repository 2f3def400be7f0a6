//! End-to-end tests of the chained [`Pipeline`].
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use proptest::prelude::*;
use tomo_protocol::ToolStatus;

fn settings(fast: bool, show_think: bool) -> PipelineSettings {
    PipelineSettings {
        emotions: vec!["joy".into(), "Sad".into()],
        tags: Vec::new(),
        show_think,
        first_clause_fast_path: fast,
    }
}

fn run(settings: &PipelineSettings, items: Vec<PipelineItem>) -> Vec<PipelineItem> {
    let mut p = Pipeline::new(settings);
    let mut out = Vec::new();
    for i in items {
        out.extend(p.push(i).into_iter().map(PipelineItem::from));
    }
    out.extend(p.finish().into_iter().map(PipelineItem::from));
    out
}

fn texts(chunks: &[&str]) -> Vec<PipelineItem> {
    chunks
        .iter()
        .map(|c| PipelineItem::Text((*c).to_owned()))
        .collect()
}

fn sentences(items: &[PipelineItem]) -> Vec<Sentence> {
    items
        .iter()
        .map(|i| match i {
            PipelineItem::Sentence(s) => s.clone(),
            other => panic!("expected only sentences, got {other:?}"),
        })
        .collect()
}

fn sentence(index: u32, display: &str, tts: Option<&str>, actions: &[&str]) -> Sentence {
    Sentence {
        index,
        display_text: display.into(),
        tts_text: tts.map(String::from),
        actions: actions
            .iter()
            .map(|a| Action::Emotion { name: (*a).into() })
            .collect(),
        display_spans: Vec::new(),
    }
}

fn tool(status: ToolStatus) -> PipelineItem {
    PipelineItem::ToolCall(ToolCallEvent {
        tool_id: "call_1".into(),
        tool_name: "weather".into(),
        args: serde_json::json!({"city": "Kyoto"}),
        status,
        result: None,
        round: 1,
    })
}

#[test]
fn a_realistic_turn() {
    let chunks = [
        "[jo",
        "y] Hello ",
        "there! I'm **To",
        "mo**, your friend",
        "ly companion",
        ", and I love ",
        "to chat 😊.",
        "\n\n- It is 25°C",
        " today.\n",
        "[SAD]\n",
        "Bye…",
    ];
    let out = sentences(&run(&settings(true, false), texts(&chunks)));
    assert_eq!(
        out,
        [
            sentence(0, "Hello there!", Some("Hello there!"), &["joy"]),
            sentence(
                1,
                "I'm **Tomo**, your friendly companion, and I love to chat 😊.",
                Some("I'm Tomo, your friendly companion, and I love to chat."),
                &[]
            ),
            sentence(2, "- It is 25°C today.", Some("It is 25°C today."), &[]),
            sentence(3, "Bye…", Some("Bye…"), &["Sad"]),
        ]
    );
}

#[test]
fn fast_path_through_the_pipeline() {
    let chunks = [
        "Well, I think ",
        "that we should go",
        ", because it is",
        " late.",
    ];
    let out = sentences(&run(&settings(true, false), texts(&chunks)));
    let shown: Vec<&str> = out.iter().map(|s| s.display_text.as_str()).collect();
    assert_eq!(
        shown,
        ["Well, I think that we should go,", "because it is late."]
    );
    let out = sentences(&run(&settings(false, false), texts(&chunks)));
    assert_eq!(out.len(), 1);
}

/// Pushes `chunks` and returns what `sentence_if_ended` says after the last one, and what then comes
/// out once the next delta (`next`) arrives.
fn predicted_then_emitted(chunks: &[&str], next: &str) -> (Option<Sentence>, Vec<Sentence>) {
    let mut p = Pipeline::new(&settings(true, false));
    for chunk in chunks {
        assert!(p.push(PipelineItem::Text((*chunk).into())).is_empty());
    }
    let predicted = p.sentence_if_ended();
    let emitted = p
        .push(PipelineItem::Text(next.into()))
        .into_iter()
        .map(|output| match output {
            PipelineOutput::Sentence(sentence) => sentence,
            other => panic!("{other:?}"),
        })
        .collect();
    (predicted, emitted)
}

#[test]
fn the_sentence_waiting_for_its_next_delta_is_known_before_it() {
    let hello = sentence(0, "Of course!", Some("Of course!"), &["joy"]);
    let (predicted, emitted) = predicted_then_emitted(&["[joy] Of", " course", "!"], " It");
    assert_eq!(predicted.as_ref(), Some(&hello));
    assert_eq!(emitted, [hello]);
    // The first clause's comma waits for the next character too (`1,000` is a number).
    let (predicted, emitted) =
        predicted_then_emitted(&["Well, I think that we should go", ","], " and");
    let clause = sentence(
        0,
        "Well, I think that we should go,",
        Some("Well, I think that we should go,"),
        &[],
    );
    assert_eq!(predicted.as_ref(), Some(&clause));
    assert_eq!(emitted, [clause]);
    // When the next delta says otherwise, the prediction was only a guess.
    let (predicted, emitted) = predicted_then_emitted(&["Really?"], "!");
    assert_eq!(predicted.unwrap().display_text, "Really?");
    assert_eq!(emitted, []);
}

#[test]
fn nothing_is_predicted_mid_sentence_or_at_an_abbreviation() {
    for chunks in [&["Of course"][..], &["I asked Dr."], &["It costs 3"], &[""]] {
        let (predicted, _) = predicted_then_emitted(chunks, " Smith");
        assert_eq!(predicted, None, "{chunks:?}");
    }
}

#[test]
fn tool_calls_keep_their_place() {
    let mut items = texts(&["Let me check", " the weather."]);
    items.extend([tool(ToolStatus::Running), tool(ToolStatus::Completed)]);
    items.extend(texts(&["It is sunny!"]));
    let out = run(&settings(true, false), items);
    assert_eq!(
        out,
        [
            PipelineItem::Sentence(sentence(
                0,
                "Let me check the weather.",
                Some("Let me check the weather."),
                &[]
            )),
            tool(ToolStatus::Running),
            tool(ToolStatus::Completed),
            PipelineItem::Sentence(sentence(1, "It is sunny!", Some("It is sunny!"), &[])),
        ]
    );
}

#[test]
fn tool_call_mid_sentence_flushes_what_was_said() {
    let mut p = Pipeline::new(&settings(false, false));
    assert!(p.push(PipelineItem::Text("Checking".into())).is_empty());
    let out: Vec<PipelineItem> = p
        .push(tool(ToolStatus::Running))
        .into_iter()
        .map(PipelineItem::from)
        .collect();
    assert_eq!(
        out,
        [
            PipelineItem::Sentence(sentence(0, "Checking", Some("Checking"), &[])),
            tool(ToolStatus::Running)
        ]
    );
    assert!(p.finish().is_empty());
}

#[test]
fn think_tags_split_across_chunks() {
    let chunks = [
        "Sure. <thi",
        "nk>I should be",
        " careful.</th",
        "ink>Here it is.",
    ];
    let out = sentences(&run(&settings(false, false), texts(&chunks)));
    assert_eq!(
        out,
        [
            sentence(0, "Sure.", Some("Sure."), &[]),
            sentence(1, "Here it is.", Some("Here it is."), &[]),
        ]
    );
    let out = sentences(&run(&settings(false, true), texts(&chunks)));
    assert_eq!(
        out[1],
        sentence(
            1,
            "I should be careful. Here it is.",
            Some("Here it is."),
            &[]
        )
    );
}

#[test]
fn multi_line_think_block_is_never_spoken() {
    let chunks = ["<think>\nStep one. Step", " two.\n</think>\n\nAnswer: 42."];
    let out = sentences(&run(&settings(true, false), texts(&chunks)));
    assert_eq!(out, [sentence(0, "Answer: 42.", Some("Answer: 42."), &[])]);
    let out = sentences(&run(&settings(true, true), texts(&chunks)));
    let spoken: Vec<Option<&str>> = out.iter().map(|s| s.tts_text.as_deref()).collect();
    assert_eq!(spoken, [None, None, Some("Answer: 42.")]);
    assert_eq!(out[0].display_text, "Step one.");
}

#[test]
fn tag_only_turn_is_shown_not_spoken() {
    let out = sentences(&run(&settings(true, false), texts(&["[joy]", "\n"])));
    assert_eq!(out, [sentence(0, "", None, &["joy"])]);
}

#[test]
fn unknown_tags_and_code_stay_visible() {
    let chunks = ["See [1].\n", "```sh\nls -la.\n```\n", "Done."];
    let out = sentences(&run(&settings(true, false), texts(&chunks)));
    assert_eq!(
        out,
        [
            sentence(0, "See [1].", Some("See [1]."), &[]),
            sentence(1, "```sh\nls -la.\n```", None, &[]),
            sentence(2, "Done.", Some("Done."), &[]),
        ]
    );
}

#[test]
fn ready_made_sentences_are_renumbered_in_order() {
    let mut p = Pipeline::new(&PipelineSettings::default());
    let mut out = p.push(PipelineItem::Text("One. Two".into()));
    out.extend(p.push(PipelineItem::Sentence(sentence(99, "x", None, &[]))));
    out.extend(p.finish());
    let out: Vec<PipelineItem> = out.into_iter().map(PipelineItem::from).collect();
    let indexed: Vec<(u32, String)> = sentences(&out)
        .into_iter()
        .map(|s| (s.index, s.display_text))
        .collect();
    assert_eq!(
        indexed,
        [(0, "One.".into()), (1, "Two".into()), (2, "x".into())]
    );
}

#[test]
fn default_settings() {
    let s = PipelineSettings::default();
    assert!(s.first_clause_fast_path && !s.show_think && s.emotions.is_empty());
}

// ---- properties over the whole pipeline ----

#[rustfmt::skip]
const PIECES: &[&str] = &[
    "Hello", "world", "I", "think", "Mr.", "e.g.", "3.14", "1,000", ".", "!", "?", "...", ",", "，", "。",
    "你好", "[joy]", "[Sad]", "[1]", "<think>", "</think>", "<|im_end|>", "**", "*", "#", "- ", "`x.y`",
    "```", "😊", "🎉", "https://example.com/a.b", "\"", "(", ")", "\n", "\n\n", "|", "_", "C#",
];
const SEPARATORS: &[&str] = &[" ", " ", "", "\n"];

fn text_strategy() -> impl Strategy<Value = String> {
    let piece = proptest::sample::select(PIECES);
    let sep = proptest::sample::select(SEPARATORS);
    proptest::collection::vec((piece, sep), 0..40)
        .prop_map(|v| v.into_iter().flat_map(|(p, s)| [p, s]).collect::<String>())
}

fn chunked(text: &str, sizes: &[usize]) -> Vec<PipelineItem> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    for size in sizes.iter().cycle() {
        if i >= chars.len() {
            break;
        }
        let end = (i + size).min(chars.len());
        out.push(PipelineItem::Text(chars[i..end].iter().collect()));
        i = end;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn output_is_well_formed_and_chunking_independent(
        text in text_strategy(),
        sizes in proptest::collection::vec(1usize..6, 1..8),
        fast in any::<bool>(),
        show_think in any::<bool>(),
    ) {
        let s = settings(fast, show_think);
        let whole = sentences(&run(&s, texts(&[&text])));
        for (i, sentence) in whole.iter().enumerate() {
            prop_assert_eq!(sentence.index as usize, i);
            prop_assert_eq!(sentence.display_text.trim(), sentence.display_text.as_str());
            if let Some(tts) = &sentence.tts_text {
                prop_assert!(tts.chars().any(char::is_alphanumeric), "unspeakable tts {:?}", tts);
                prop_assert_eq!(tts.trim(), tts.as_str());
                prop_assert!(!tts.contains(['*', '`', '|', '<', '😊', '🎉']), "tts {:?}", tts);
            }
            prop_assert!(
                !sentence.display_text.is_empty() || sentence.tts_text.is_some() || !sentence.actions.is_empty(),
                "empty sentence"
            );
        }
        prop_assert_eq!(&whole, &sentences(&run(&s, chunked(&text, &sizes))));
    }

    /// What `sentence_if_ended` predicts is exactly the first sentence that comes out if the next
    /// sentence begins there, and asking changes nothing.
    #[test]
    fn a_prediction_is_the_sentence_the_end_of_the_stream_would_give(
        text in text_strategy(),
        sizes in proptest::collection::vec(1usize..6, 1..8),
        fast in any::<bool>(),
    ) {
        let s = settings(fast, false);
        let mut p = Pipeline::new(&s);
        let mut out = Vec::new();
        for item in chunked(&text, &sizes) {
            out.extend(p.push(item).into_iter().map(PipelineItem::from));
            if let Some(predicted) = p.sentence_if_ended() {
                let mut next = p.clone();
                let mut ended = next.push(PipelineItem::Text(" A".into()));
                ended.extend(next.finish());
                let first = ended.iter().find_map(|o| match o {
                    PipelineOutput::Sentence(sentence) => Some(sentence),
                    PipelineOutput::ToolCall(_) => None,
                });
                prop_assert_eq!(Some(&predicted), first);
            }
        }
        out.extend(p.finish().into_iter().map(PipelineItem::from));
        prop_assert_eq!(sentences(&out), sentences(&run(&s, texts(&[&text]))));
    }
}
