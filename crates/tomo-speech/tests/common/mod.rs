//! Shared test helpers: models from the store (skip or fail clearly when absent), speech from
//! flite/espeak-ng, WAV loading at 16 kHz.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod http;

use std::path::{Path, PathBuf};
use std::process::Command;

use tomo_models::ModelStore;

/// A file of the model store, or `None` after printing "skipped" (outside CI). In CI a missing model fails.
pub fn store_file(relative: &str, test: &str) -> Option<PathBuf> {
    let path = ModelStore::default_root().join(relative);
    if path.is_file() {
        return Some(path);
    }
    let message = format!(
        "{test}: {} is missing; run `tomo models install --test-data`",
        path.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{message}");
    }
    eprintln!("skipped: {message}");
    None
}

/// 16 kHz mono f32 samples of a WAV file; other rates are converted with sox first.
pub fn load_16k(path: &Path) -> Vec<f32> {
    let reader = hound::WavReader::open(path).unwrap();
    let spec = reader.spec();
    if spec.sample_rate != 16_000 || spec.channels != 1 {
        let dir = tempfile::tempdir().unwrap();
        let converted = dir.path().join("16k.wav");
        run(Command::new("sox")
            .arg(path)
            .args(["-r", "16000", "-c", "1", "-b", "16"])
            .arg(&converted));
        return load_16k(&converted);
    }
    match spec.sample_format {
        hound::SampleFormat::Int => {
            let scale = (1i64 << (spec.bits_per_sample - 1)) as f32;
            reader
                .into_samples::<i32>()
                .map(|s| s.unwrap() as f32 / scale)
                .collect()
        }
        hound::SampleFormat::Float => reader.into_samples::<f32>().map(|s| s.unwrap()).collect(),
    }
}

pub enum Voice {
    /// flite's `slt` voice (clear female US English).
    FliteSlt,
    /// espeak-ng's default English voice (robotic, a harder test).
    EspeakEn,
}

/// `text` spoken by `voice`, as 16 kHz samples.
pub fn speak(voice: Voice, text: &str) -> Vec<f32> {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("speech.wav");
    match voice {
        Voice::FliteSlt => run(Command::new("flite")
            .args(["-voice", "slt", "-t", text, "-o"])
            .arg(&wav)),
        Voice::EspeakEn => run(Command::new("espeak-ng")
            .args(["-v", "en-us", "-w"])
            .arg(&wav)
            .arg(text)),
    }
    load_16k(&wav)
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
