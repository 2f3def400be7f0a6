//! The corpus in tests/fixtures/speech_text/cases.toml through the whole token pipeline: what is shown and
//! what is spoken, streamed whole and one character at a time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde::Deserialize;
use tomo_core::pipeline::{Pipeline, PipelineItem, PipelineOutput, PipelineSettings};

#[derive(Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    text: String,
    sentences: Vec<Expected>,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Expected {
    display: String,
    tts: String,
}

fn run(deltas: impl IntoIterator<Item = String>) -> Vec<Expected> {
    let settings = PipelineSettings {
        emotions: ["joy", "sad", "angry", "surprised", "neutral"]
            .map(String::from)
            .to_vec(),
        ..PipelineSettings::default()
    };
    let mut pipeline = Pipeline::new(&settings);
    let mut items = Vec::new();
    for delta in deltas {
        items.extend(pipeline.push(PipelineItem::Text(delta)));
    }
    items.extend(pipeline.finish());
    items
        .into_iter()
        .filter_map(|item| match item {
            PipelineOutput::Sentence(s) => Some(Expected {
                display: s.display_text,
                tts: s.tts_text.unwrap_or_default(),
            }),
            _ => None,
        })
        .collect()
}

#[test]
fn corpus_of_speech_text_cases() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/speech_text/cases.toml"
    );
    let corpus: Corpus = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(corpus.case.len() >= 15);
    let mut failures = Vec::new();
    for case in &corpus.case {
        let whole = run([case.text.clone()]);
        let by_char = run(case.text.chars().map(String::from));
        if whole != case.sentences || by_char != whole {
            failures.push(format!(
                "{}:\n  expected {:?}\n  whole    {whole:?}\n  by char  {by_char:?}",
                case.name, case.sentences
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
