//! The Rust Smart Turn v3 port against pipecat's Python reference (numbers made by
//! `tests/fixtures/smart-turn-reference/make_reference.py`): the same log-mel features and the same
//! probability, on synthesized and on real speech, with the real model through ONNX Runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use tomo_audio::turn::features::{FRAMES, MEL_BANDS};
use tomo_audio::{EndOfTurn, SmartTurn, read_wav_16k};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smart-turn-reference")
}

fn read_features(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.len(), MEL_BANDS * FRAMES * 4, "{}", path.display());
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[test]
fn features_and_probabilities_match_the_python_reference() {
    let Some(model) = common::smart_turn() else {
        return;
    };
    let mut model = model;
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_dir().join("reference.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    for clip in reference["clips"].as_array().unwrap() {
        let name = clip["name"].as_str().unwrap();
        let source = clip["source"].as_str().unwrap();
        let local = fixture_dir().join(source);
        let path = if local.is_file() {
            local
        } else {
            common::models_dir().join(source)
        };
        if !path.is_file() {
            common::skip_or_fail(&format!(
                "{} is missing (install it with `tomo models install --test-data`)",
                path.display()
            ));
            continue;
        }
        let audio = read_wav_16k(&path).unwrap();
        let expected = read_features(&fixture_dir().join(clip["features"].as_str().unwrap()));
        let features = model.features(&audio);
        let worst = features
            .iter()
            .zip(&expected)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0_f32, f32::max);
        assert!(worst < 1e-4, "{name}: features differ by up to {worst}");

        let want = clip["probability"].as_f64().unwrap() as f32;
        let from_reference_features = model.probability_for_features(expected).unwrap();
        assert!(
            (from_reference_features - want).abs() < 1e-5,
            "{name}: the same features give {from_reference_features}, the reference {want}"
        );
        let got = model.probability_done(&audio).unwrap();
        assert!(
            (got - want).abs() < 2e-4,
            "{name}: probability {got}, the reference {want}"
        );
        eprintln!("{name:12} features within {worst:.2e}, p(done) {got:.5} (reference {want:.5})");
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} clips checked");
}

#[test]
fn a_finished_question_is_done_and_a_broken_off_sentence_is_not() {
    let Some(mut model) = common::smart_turn() else {
        return;
    };
    let complete = read_wav_16k(&fixture_dir().join("complete.wav")).unwrap();
    let incomplete = read_wav_16k(&fixture_dir().join("incomplete.wav")).unwrap();
    let done = model.probability_done(&complete).unwrap();
    let not_done = model.probability_done(&incomplete).unwrap();
    assert!(done >= 0.5, "\"What time is it right now?\" → {done}");
    assert!(
        not_done < 0.5,
        "\"I was thinking that maybe we could\" → {not_done}"
    );
}

#[test]
fn a_missing_model_is_a_clear_error() {
    let Some((_, runtime)) = common::silero_paths() else {
        return;
    };
    let error = SmartTurn::new(Path::new("/nonexistent/smart-turn.onnx"), &runtime).unwrap_err();
    assert!(
        error.to_string().contains("/nonexistent/smart-turn.onnx"),
        "{error}"
    );
}
