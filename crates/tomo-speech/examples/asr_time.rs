//! How long whisper takes on one utterance, cold and warm, with a given thread count — to compare with what
//! the live path reports (`asr_ms`): `cargo run --release -p tomo-speech --example asr_time -- <wav> [threads] [runs]`.
//! Run it once alone and once beside a listening process to see the contention. `TOMO_WHISPER_MODEL` names
//! another file of the store's `whisper/` folder (default `ggml-base-q8_0.bin`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use tomo_speech::asr::{SpeechToText, WhisperAsr};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(wav) = args.first() else {
        eprintln!("usage: asr_time <wav> [threads] [runs]");
        return ExitCode::FAILURE;
    };
    let threads: usize = args.get(1).and_then(|t| t.parse().ok()).unwrap_or(2);
    let runs: usize = args.get(2).and_then(|t| t.parse().ok()).unwrap_or(5);
    let root = std::env::var_os("TOMO_MODELS_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("tomo").join("models")))
        .unwrap_or_default();
    let samples = match tomo_audio::read_wav_16k(std::path::Path::new(wav)) {
        Ok(samples) => samples,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let loaded = Instant::now();
    let asr = match WhisperAsr::new(
        root.join("whisper").join(model_file()),
        Some("en".into()),
        threads,
    ) {
        Ok(asr) => asr,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "loaded in {} ms; {:.2} s of audio, {threads} thread(s)",
        loaded.elapsed().as_millis(),
        samples.len() as f64 / 16_000.0
    );
    for run in 0..runs {
        let started = Instant::now();
        match asr.transcribe(&samples) {
            Ok(t) => println!(
                "run {run}: {:4} ms  {:?}",
                started.elapsed().as_millis(),
                t.text
            ),
            Err(e) => println!("run {run}: error {e}"),
        }
    }
    ExitCode::SUCCESS
}

/// The whisper file in the store's `whisper/` folder: `$TOMO_WHISPER_MODEL`, else base 8-bit.
fn model_file() -> String {
    std::env::var("TOMO_WHISPER_MODEL").unwrap_or_else(|_| "ggml-base-q8_0.bin".to_owned())
}
