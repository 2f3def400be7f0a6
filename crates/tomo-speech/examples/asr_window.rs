//! Word error rate and time of whisper base on spoken turns grouped by length (under 1.5 s, about 2 s,
//! 2-3 s, 3-3.6 s), in flite's and espeak-ng's voices: what the encoder window sized to the audio
//! (`audio_context` in src/asr/whisper.rs) costs in words and saves in time. Every miss is printed.
//!
//! `cargo run --release -p tomo-speech --example asr_window`   (needs flite and espeak-ng)
//! The model store is `$TOMO_MODELS_DIR` or `~/.local/share/tomo/models`; `TOMO_WHISPER_MODEL=ggml-tiny.en.bin`
//! picks another file of its `whisper/` folder.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use tomo_speech::asr::{SpeechToText, WhisperAsr, word_error_rate};

#[path = "../tests/fixtures/spoken_turns/sets.rs"]
mod spoken_turns;
use spoken_turns::turn_sets;

/// `text` said by `voice` ("flite" or "espeak-ng") into `wav`.
fn say(voice: &str, text: &str, wav: &Path) -> Result<(), String> {
    let mut command = Command::new(voice);
    if voice == "flite" {
        command.args(["-voice", "slt", "-t", text, "-o"]).arg(wav);
    } else {
        command.args(["-v", "en-us", "-w"]).arg(wav).arg(text);
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run {voice}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{voice} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let root = std::env::var_os("TOMO_MODELS_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("tomo").join("models")))
        .unwrap_or_default();
    let asr = match WhisperAsr::new(
        root.join("whisper").join(model_file()),
        Some("en".into()),
        2,
    ) {
        Ok(asr) => asr,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let wav = std::env::temp_dir().join(format!("tomo-asr-window-{}.wav", std::process::id()));
    for voice in ["flite", "espeak-ng"] {
        for (name, sentences) in turn_sets() {
            let (mut said, mut heard, mut millis, mut seconds) =
                (String::new(), String::new(), 0, 0.0);
            for sentence in &sentences {
                let samples = match say(voice, sentence, &wav)
                    .and_then(|()| tomo_audio::read_wav_16k(&wav).map_err(|e| e.to_string()))
                {
                    Ok(samples) => samples,
                    Err(e) => {
                        eprintln!("error: {e}");
                        let _ = std::fs::remove_file(&wav);
                        return ExitCode::FAILURE;
                    }
                };
                seconds += samples.len() as f64 / 16_000.0;
                let started = Instant::now();
                let text = match asr.transcribe(&samples) {
                    Ok(transcript) => transcript.text,
                    Err(e) => format!("<{e}>"),
                };
                let took = started.elapsed().as_millis();
                millis += took;
                if word_error_rate(sentence, &text) > 0.0 || took > 600 {
                    println!("  {voice}: {sentence:?} -> {text:?} ({took} ms)");
                }
                for (all, one) in [(&mut said, *sentence), (&mut heard, text.as_str())] {
                    all.push_str(one);
                    all.push(' ');
                }
            }
            let turns = sentences.len();
            println!(
                "{voice}, {name} (average {:.1} s): WER {:.3}, {} ms per turn",
                seconds / turns as f64,
                word_error_rate(&said, &heard),
                millis / turns as u128
            );
        }
    }
    let _ = std::fs::remove_file(&wav);
    ExitCode::SUCCESS
}

/// The whisper file in the store's `whisper/` folder: `$TOMO_WHISPER_MODEL`, else base 8-bit.
fn model_file() -> String {
    std::env::var("TOMO_WHISPER_MODEL").unwrap_or_else(|_| "ggml-base-q8_0.bin".to_owned())
}
