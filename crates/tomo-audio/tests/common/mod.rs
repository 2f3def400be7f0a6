//! Shared helpers: the model store, generated speech, the PulseAudio null sink.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod echo;

pub use tomo_testkit::prereq::{models_dir, skip_or_fail};

/// Paths of the Silero model and the ONNX Runtime library, if installed.
pub fn silero_paths() -> Option<(PathBuf, PathBuf)> {
    let root = models_dir();
    let model = root.join("vad/silero_vad.onnx");
    let runtime = root.join("runtime/libonnxruntime.so");
    for path in [&model, &runtime] {
        if !path.is_file() {
            skip_or_fail(&format!(
                "{} is missing (install the models with `tomo models install`)",
                path.display()
            ));
            return None;
        }
    }
    Some((model, runtime))
}

/// Speaks `text` into a WAV with espeak-ng (22 050 Hz mono).
pub fn espeak(text: &str, out: &Path) -> bool {
    let status = Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "150", "-w"])
        .arg(out)
        .arg(text)
        .status();
    match status {
        Ok(s) if s.success() => true,
        other => {
            skip_or_fail(&format!(
                "espeak-ng failed ({other:?}); install Debian espeak-ng"
            ));
            false
        }
    }
}

/// Speaks `text` into a WAV with flite (16 kHz mono).
pub fn flite(text: &str, out: &Path) -> bool {
    let status = Command::new("flite")
        .args(["-t", text, "-o"])
        .arg(out)
        .status();
    match status {
        Ok(s) if s.success() => true,
        other => {
            skip_or_fail(&format!("flite failed ({other:?}); install Debian flite"));
            false
        }
    }
}

/// Starts the PulseAudio null sink (scripts/pulse-null.sh, idempotent).
pub fn pulse_null_sink() -> bool {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pulse-null.sh");
    match Command::new("bash").arg(&script).output() {
        Ok(out) if out.status.success() => true,
        other => {
            skip_or_fail(&format!(
                "cannot start PulseAudio with a null sink ({}): {other:?}",
                script.display()
            ));
            false
        }
    }
}

/// Writes mono f32 samples as a 16-bit WAV.
pub fn write_wav(path: &Path, samples: &[f32], sample_rate: u32) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(path, spec).unwrap();
    for &s in samples {
        writer
            .write_sample((s.clamp(-1.0, 1.0) * 32767.0) as i16)
            .unwrap();
    }
    writer.finalize().unwrap();
}

/// Root mean square of a block.
pub fn rms(samples: &[f32]) -> f32 {
    if samples.is_empty() {
        return 0.0;
    }
    (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt()
}

/// Index of the first 10 ms window whose RMS exceeds `threshold`.
pub fn energy_onset(samples: &[f32], sample_rate: u32, threshold: f32) -> Option<usize> {
    let window = (sample_rate / 100) as usize;
    samples
        .chunks(window)
        .position(|w| rms(w) > threshold)
        .map(|i| i * window)
}

/// End (exclusive sample index) of the last 10 ms window whose RMS exceeds `threshold`.
pub fn energy_offset(samples: &[f32], sample_rate: u32, threshold: f32) -> Option<usize> {
    let window = (sample_rate / 100) as usize;
    let chunks: Vec<&[f32]> = samples.chunks(window).collect();
    chunks
        .iter()
        .rposition(|w| rms(w) > threshold)
        .map(|i| (i + 1) * window)
}

pub fn tone(freq: f32, sample_rate: u32, secs: f32) -> Vec<f32> {
    let n = (sample_rate as f32 * secs) as usize;
    (0..n)
        .map(|i| (2.0 * std::f32::consts::PI * freq * i as f32 / sample_rate as f32).sin() * 0.3)
        .collect()
}

/// The Smart Turn v3 model from the store (ONNX Runtime loaded), if installed.
pub fn smart_turn() -> Option<tomo_audio::SmartTurn> {
    let (_, runtime) = silero_paths()?;
    let model = tomo_audio::turn::smart_turn::model_path(&models_dir());
    if !model.is_file() {
        skip_or_fail(&format!(
            "{} is missing (install it with `tomo models install`)",
            model.display()
        ));
        return None;
    }
    Some(tomo_audio::SmartTurn::new(&model, &runtime).expect("Smart Turn loads"))
}
