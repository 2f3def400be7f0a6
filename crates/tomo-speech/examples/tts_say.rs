//! Speaks text to a WAV file with a profile-style voice, for listening and for checking voices by hand:
//! `cargo run -p tomo-speech --example tts_say -- piper en_US-joe-medium "Hello there." out.wav [speed]`.
//! The model store is `$TOMO_MODELS_DIR` or `~/.local/share/tomo/models`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [engine, voice, text, out, rest @ ..] = args.as_slice() else {
        eprintln!("usage: tts_say <engine> <voice> <text> <out.wav> [speed]");
        return ExitCode::FAILURE;
    };
    let speed = rest.first().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let root = std::env::var_os("TOMO_MODELS_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("tomo").join("models")))
        .unwrap_or_default();
    let result = tomo_speech::tts::from_config(engine, voice, speed, &root).and_then(|tts| {
        let started = std::time::Instant::now();
        let audio = tts.synthesize(text)?;
        eprintln!(
            "{}: {:.2} s of audio at {} Hz in {:.2} s",
            tts.name(),
            audio.duration_secs(),
            audio.sample_rate,
            started.elapsed().as_secs_f64()
        );
        Ok(audio)
    });
    let audio = match result {
        Ok(audio) => audio,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: audio.sample_rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let written = hound::WavWriter::create(out, spec).and_then(|mut w| {
        for s in &audio.samples {
            w.write_sample((s.clamp(-1.0, 1.0) * 32767.0) as i16)?;
        }
        w.finalize()
    });
    if let Err(e) = written {
        eprintln!("error: cannot write {out}: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
