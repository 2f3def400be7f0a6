//! Synthesis time of a voice once it is loaded and warm: per text, the median of `runs` syntheses, the
//! audio length and the real-time factor.
//! `cargo run --release -p tomo-speech --example tts_bench -- kokoro af_heart 5 "Of course!" "Hello there."`
//! Run it alone (`flock -x /tmp/tomo-cpu.lock ...`): it measures wall-clock time.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [engine, voice, runs, texts @ ..] = args.as_slice() else {
        eprintln!("usage: tts_bench <engine> <voice> <runs> <text>...");
        return ExitCode::FAILURE;
    };
    let runs: usize = runs.parse().unwrap_or(3).max(1);
    let root = std::env::var_os("TOMO_MODELS_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("tomo").join("models")))
        .unwrap_or_default();
    let loaded = Instant::now();
    let tts = match tomo_speech::tts::from_config(engine, voice, 1.0, &root) {
        Ok(tts) => tts,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let load_s = loaded.elapsed().as_secs_f64();
    let warm = Instant::now();
    if let Err(e) = tts.synthesize("Warm up.") {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    println!(
        "{} {voice}: loaded in {load_s:.2} s, first synthesis {:.2} s",
        tts.name(),
        warm.elapsed().as_secs_f64()
    );
    for text in texts {
        let mut times = Vec::with_capacity(runs);
        let mut audio_s = 0.0;
        for _ in 0..runs {
            let started = Instant::now();
            match tts.synthesize(text) {
                Ok(audio) => audio_s = audio.duration_secs(),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            }
            times.push(started.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "  {:>6.0} ms for {audio_s:>5.2} s of audio (RTF {:.2})  {text:?}",
            median * 1000.0,
            median / audio_s.max(f64::EPSILON)
        );
    }
    ExitCode::SUCCESS
}
