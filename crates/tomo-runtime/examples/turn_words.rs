//! The end of the turn decided by sound alone (Smart Turn) against sound and the pause's words
//! (`turn_words.rs`), on the paused-speech set: the live segmenter configuration, real Silero VAD, Smart
//! Turn and whisper base (the English characters' 4-bit file); each pause's snapshot is recognised before the model is asked, as live
//! (the model waits for the recognition). Prints, for each way, how many mid-sentence pauses were taken for
//! the end of the turn, and how long finished sentences waited after their last word. Live, the model
//! waits for the recognition at most 500 ms and then decides without the words, so these are the words'
//! best case.
//!
//! `cargo run --release -p tomo-runtime --example turn_words -- ~/.cache/tomo/turn-set` (the set:
//! `scripts/make-turn-set.py`). The model store is `$TOMO_MODELS_DIR` or `~/.local/share/tomo/models`;
//! `TOMO_WHISPER_MODEL=ggml-base-q8_0.bin` picks another file of its `whisper/` folder.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result};
use tomo_audio::{
    EndOfTurn, FRAME_SAMPLES, Segmenter, SegmenterEvent, TurnError, VoiceActivity, read_wav_16k,
};
use tomo_runtime::turn_words::{weigh, words_end};
use tomo_speech::asr::{SpeechToText, WhisperAsr};

/// The words of the current pause, if any, shared between the loop and the model.
type Slot = Arc<Mutex<Option<String>>>;

/// The end-of-turn model, shared by the recordings' segmenters.
type Model = Arc<Mutex<Box<dyn EndOfTurn + Send>>>;

/// The end-of-turn model, weighed with the slot's words when `use_words`.
struct Judge {
    model: Model,
    words: Slot,
    use_words: bool,
}

impl EndOfTurn for Judge {
    fn probability_done(&mut self, utterance: &[f32]) -> Result<f32, TurnError> {
        let heard = self
            .model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .probability_done(utterance)?;
        if !self.use_words {
            return Ok(heard);
        }
        let words = self.words.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(weigh(
            heard,
            words
                .as_deref()
                .and_then(|text| words_end(text, Some("en"))),
        ))
    }
}

struct Recording {
    file: String,
    paused: bool,
    speech_end: usize,
}

#[derive(Default)]
struct Tally {
    paused: usize,
    cut_early: usize,
    complete_waits: Vec<f64>,
}

fn main() -> Result<()> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .context("usage: turn_words <set dir>")?,
    );
    let store = tomo_models::ModelStore::from_env()?;
    let asr = WhisperAsr::new(
        store.file_path(&format!(
            "whisper/{}",
            std::env::var("TOMO_WHISPER_MODEL").unwrap_or_else(|_| "ggml-base-iq4_nl.bin".into())
        )),
        Some("en".into()),
        2,
    )?;
    let set = load_set(&dir)?;
    let model: Model = Arc::new(Mutex::new(
        tomo_runtime::voice::end_of_turn(&store).context("no end-of-turn model")?,
    ));
    let mut vad = tomo_runtime::voice::vad(&store)?;
    let mut heard: HashMap<(String, usize), String> = HashMap::new();
    for use_words in [false, true] {
        let words: Slot = Arc::default();
        let mut tally = Tally::default();
        for recording in &set {
            // Each recording starts afresh, as `turn_eval` does.
            vad.reset();
            let judge = Judge {
                model: Arc::clone(&model),
                words: Arc::clone(&words),
                use_words,
            };
            let mut segmenter = Segmenter::new(&mut vad, &tomo_runtime::voice::segmenter_config())
                .with_end_of_turn(Box::new(judge));
            let audio = read_wav_16k(&dir.join(&recording.file))?;
            let mut ends = Vec::new();
            for (i, frame) in padded(&audio).chunks_exact(FRAME_SAMPLES).enumerate() {
                for event in segmenter.push(frame)? {
                    match event {
                        SegmenterEvent::Pause(snapshot) => {
                            let key = (recording.file.clone(), snapshot.samples.len());
                            let text = match heard.get(&key) {
                                Some(text) => text.clone(),
                                None => asr.transcribe(&snapshot.samples)?.text,
                            };
                            heard.insert(key, text.clone());
                            *words.lock().unwrap_or_else(PoisonError::into_inner) = Some(text);
                        }
                        SegmenterEvent::Resumed { .. } => {
                            *words.lock().unwrap_or_else(PoisonError::into_inner) = None;
                        }
                        SegmenterEvent::Segment(_) => {
                            *words.lock().unwrap_or_else(PoisonError::into_inner) = None;
                            ends.push((i + 1) * FRAME_SAMPLES);
                        }
                        _ => {}
                    }
                }
            }
            let Some(&last) = ends.last() else { continue };
            if recording.paused {
                tally.paused += 1;
                tally.cut_early += usize::from(ends.iter().any(|&at| at < recording.speech_end));
            } else {
                tally
                    .complete_waits
                    .push((last as f64 - recording.speech_end as f64) / 16.0);
            }
        }
        report(
            if use_words {
                "sound and words"
            } else {
                "sound alone"
            },
            &tally,
        );
    }
    Ok(())
}

/// The recording with 2.5 s of faint noise after it (the turn must end within it).
fn padded(audio: &[f32]) -> Vec<f32> {
    let mut padded = audio.to_vec();
    let mut seed = 7_u32;
    padded.extend((0..40_000).map(|_| {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as f32 / (1 << 24) as f32 * 0.001 - 0.0005
    }));
    padded
}

fn load_set(dir: &Path) -> Result<Vec<Recording>> {
    let set: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("set.json"))?)?;
    Ok(set["recordings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| Recording {
            file: r["file"].as_str().unwrap_or_default().to_string(),
            paused: r["kind"] == "paused",
            speech_end: r["speech_end"].as_u64().unwrap_or(0) as usize,
        })
        .collect())
}

fn report(name: &str, tally: &Tally) {
    let mut waits = tally.complete_waits.clone();
    waits.sort_by(f64::total_cmp);
    let at = |q: usize| {
        waits
            .get((waits.len() * q).div_ceil(100).max(1) - 1)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let mean = waits.iter().sum::<f64>() / waits.len().max(1) as f64;
    let quick = waits.iter().filter(|&&w| w < 500.0).count();
    println!(
        "{name:<16} mid-sentence pauses taken for the end: {:>2} of {:<2}  finished sentences: {quick} of {} ended within 500 ms, wait mean {mean:.0} ms, p50 {:.0}, p90 {:.0}",
        tally.cut_early,
        tally.paused,
        waits.len(),
        at(50),
        at(90),
    );
}
