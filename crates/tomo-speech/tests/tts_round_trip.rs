//! Round trip: what a voice says is recognized back as the same words. This is the test that proves the
//! phonemes, ids and scales are right (a wrong alphabet still makes sound, just not words).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "tts_common/mod.rs"]
mod common;

use tomo_speech::asr::SpeechToText;
use tomo_speech::asr::whisper::WhisperAsr;
use tomo_speech::tts::{FliteTts, TextToSpeech};

/// Whisper base (multilingual) from the model store; missing → skipped outside CI, a failure in CI.
fn recognizer() -> Option<Box<dyn SpeechToText>> {
    let model = common::models_root().join("whisper/ggml-base-q8_0.bin");
    if !model.is_file() {
        let message = format!("{} is missing (run `tomo models install`)", model.display());
        assert!(std::env::var_os("CI").is_none(), "{message}");
        println!("skipped: {message}");
        return None;
    }
    Some(Box::new(
        WhisperAsr::new(&model, Some("en".into()), 2).unwrap(),
    ))
}

const SENTENCES: [&str; 3] = [
    "Hello there, how are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "Please remind me to call my sister tomorrow morning.",
];

/// Words of `expected` that the transcript missed (order-insensitive, punctuation and case ignored).
fn missed(expected: &str, heard: &str) -> Vec<String> {
    let heard = common::words(heard);
    common::words(expected)
        .into_iter()
        .filter(|w| !heard.contains(w))
        .collect()
}

/// Takes of one sentence tried before it counts as unintelligible. Piper samples noise on every synthesis
/// (noise_scale, noise_w), so one take in a few dozen comes out slurred enough for whisper base to miss two
/// words ("quit-bram fox"); a wrong phoneme alphabet or id map misses most words in every take.
const TAKES: usize = 3;

fn round_trip(tts: &dyn TextToSpeech, asr: &dyn SpeechToText) {
    for text in SENTENCES {
        let mut heard = Vec::new();
        for _ in 0..TAKES {
            let audio = tts.synthesize(text).unwrap();
            let samples = common::resample(&audio.samples, audio.sample_rate, 16_000);
            let transcript = asr.transcribe(&samples).unwrap();
            let missed = missed(text, &transcript.text);
            // At most one word may be misheard per sentence (tiny models confuse e.g. "fox"/"fax").
            if missed.len() <= 1 {
                break;
            }
            heard.push((transcript.text, missed));
        }
        assert!(
            heard.len() < TAKES,
            "{}: said {text:?}, heard in {TAKES} takes {heard:?}",
            tts.name()
        );
    }
}

#[test]
fn tts_round_trip() {
    let Some(asr) = recognizer() else {
        return;
    };
    if let Some(piper) = common::piper(1.0) {
        round_trip(&piper, asr.as_ref());
    }
    round_trip(&FliteTts::new("slt", 1.0).unwrap(), asr.as_ref());
}

#[test]
fn transcript_comparison_ignores_case_and_punctuation() {
    assert!(missed("Hello there, how are you?", "hello there how are you").is_empty());
    assert_eq!(missed("The quick fox.", "the quick box"), ["fox"]);
}
