//! How well the end of a turn is decided: the fixed hangover against Smart Turn, on the paused-speech set
//! made by `scripts/make-turn-set.py` (real Silero VAD, real Smart Turn, audio time throughout), and the
//! model's speed.
//!
//! `cargo run --release -p tomo-audio --example turn_eval -- <set dir> [--speed 20]`
//! The model store is `$TOMO_MODELS_DIR` or `~/.local/share/tomo/models`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tomo_audio::turn::smart_turn::model_path;
use tomo_audio::{
    EndOfTurn, FRAME_SAMPLES, Segmenter, SegmenterConfig, SegmenterEvent, SileroVad, SmartTurn,
    TurnConfig, TurnError, read_wav_16k,
};

/// Wraps the model to time each call (wall clock: this is a benchmark, not a test).
struct Timed {
    inner: SmartTurn,
    calls: Vec<f64>,
}

/// The segmenter owns its model (`'static`); the benchmark keeps a handle to read the timings.
#[derive(Clone)]
struct Shared(Arc<Mutex<Timed>>);

impl EndOfTurn for Shared {
    fn probability_done(&mut self, utterance: &[f32]) -> Result<f32, TurnError> {
        let mut timed = self
            .0
            .lock()
            .map_err(|_| TurnError::Inference("poisoned".into()))?;
        let started = Instant::now();
        let p = timed.inner.probability_done(utterance);
        timed.calls.push(started.elapsed().as_secs_f64() * 1000.0);
        p
    }
}

#[derive(Clone)]
struct Recording {
    file: String,
    paused: bool,
    speech_end: usize,
}

#[derive(Default)]
struct Tally {
    paused: usize,
    cut_early: usize,
    paused_waits: Vec<f64>,
    complete_waits: Vec<f64>,
    missed: usize,
}

fn models_root() -> PathBuf {
    std::env::var_os("TOMO_MODELS_DIR").map_or_else(
        || {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(".local/share/tomo/models")
        },
        PathBuf::from,
    )
}

fn load_set(dir: &Path) -> anyhow::Result<Vec<Recording>> {
    let set: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("set.json"))?)?;
    let mut out = Vec::new();
    for r in set["recordings"].as_array().into_iter().flatten() {
        out.push(Recording {
            file: r["file"].as_str().unwrap_or_default().to_string(),
            paused: r["kind"] == "paused",
            speech_end: r["speech_end"].as_u64().unwrap_or(0) as usize,
        });
    }
    Ok(out)
}

/// Segments of one recording (2.5 s of faint noise appended), with the sample at which each was emitted.
fn segment(
    audio: &[f32],
    vad: &mut SileroVad,
    config: &SegmenterConfig,
    model: Option<Shared>,
) -> anyhow::Result<Vec<usize>> {
    use tomo_audio::VoiceActivity;
    vad.reset();
    let mut padded = audio.to_vec();
    let mut seed = 7_u32;
    padded.extend((0..40_000).map(|_| {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as f32 / (1 << 24) as f32 * 0.001 - 0.0005
    }));
    let mut segmenter = Segmenter::new(vad, config);
    if let Some(model) = model {
        segmenter = segmenter.with_end_of_turn(Box::new(model));
    }
    let mut emitted = Vec::new();
    for (i, frame) in padded.chunks_exact(FRAME_SAMPLES).enumerate() {
        for event in segmenter.push(frame)? {
            if let SegmenterEvent::Segment(_) = event {
                emitted.push((i + 1) * FRAME_SAMPLES);
            }
        }
    }
    Ok(emitted)
}

fn evaluate(
    dir: &Path,
    set: &[Recording],
    vad: &mut SileroVad,
    config: &SegmenterConfig,
    model: Option<Shared>,
) -> anyhow::Result<Tally> {
    let mut tally = Tally::default();
    for recording in set {
        let audio = read_wav_16k(&dir.join(&recording.file))?;
        let emitted = segment(&audio, vad, config, model.clone())?;
        let Some(&last) = emitted.last() else {
            tally.missed += 1;
            continue;
        };
        let wait = (last as f64 - recording.speech_end as f64) / 16.0;
        if recording.paused {
            tally.paused += 1;
            // A turn declared over before the speaker's last word: the rest becomes another turn.
            if emitted.iter().any(|&at| at < recording.speech_end) {
                tally.cut_early += 1;
            }
            tally.paused_waits.push(wait);
        } else {
            tally.complete_waits.push(wait);
        }
    }
    Ok(tally)
}

fn stats(values: &[f64]) -> String {
    if values.is_empty() {
        return "-".into();
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
    let at = |p: usize| sorted[((sorted.len() * p).div_ceil(100)).clamp(1, sorted.len()) - 1];
    format!("mean {mean:5.0} ms  p50 {:5.0}  p90 {:5.0}", at(50), at(90))
}

fn report(name: &str, tally: &Tally) {
    println!(
        "{name:<34} cut early {:>2}/{:<2}  complete: wait {}  |  paused, final end: wait {}{}",
        tally.cut_early,
        tally.paused,
        stats(&tally.complete_waits),
        stats(&tally.paused_waits),
        if tally.missed > 0 {
            format!("  ({} never ended)", tally.missed)
        } else {
            String::new()
        }
    );
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(args.first().map_or("turn-set", String::as_str));
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let root = models_root();
    let runtime = root.join("runtime/libonnxruntime.so");
    let mut vad = SileroVad::new(&root.join("vad/silero_vad.onnx"), &runtime)?;
    let threads = flag("--threads").unwrap_or(2) as usize;
    let shared = Shared(Arc::new(Mutex::new(Timed {
        inner: SmartTurn::with_threads(&model_path(&root), &runtime, threads)?,
        calls: Vec::new(),
    })));

    if let Some(runs) = flag("--speed") {
        let mut timed = shared.0.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let speech: Vec<f32> = (0..128_000)
            .map(|i| ((i as f32) * 0.031).sin() * 0.2)
            .collect();
        let mut extract = Vec::new();
        let mut infer = Vec::new();
        for _ in 0..runs {
            let started = Instant::now();
            let features = timed.inner.features(&speech);
            extract.push(started.elapsed().as_secs_f64() * 1000.0);
            let started = Instant::now();
            timed.inner.probability_for_features(features)?;
            infer.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        println!("Smart Turn, {threads} thread(s), {runs} runs on 8 s of audio:");
        println!("  features   {}", stats(&extract[1..]));
        println!("  inference  {}", stats(&infer[1..]));
        return Ok(());
    }

    let set = load_set(&dir)?;
    println!(
        "{} recordings ({} paused) from {}",
        set.len(),
        set.iter().filter(|r| r.paused).count(),
        dir.display()
    );
    let hangover = flag("--hangover").unwrap_or(600);
    let config = SegmenterConfig {
        hangover: Duration::from_millis(hangover),
        ..SegmenterConfig::default()
    };
    let tally = evaluate(&dir, &set, &mut vad, &config, None)?;
    report(&format!("fixed hangover {hangover} ms"), &tally);
    // (min silence, max silence, recheck, threshold in percent)
    let grid: Vec<(u64, u64, Option<u64>, u64)> = match (flag("--min"), flag("--max")) {
        (Some(min), Some(max)) => vec![(
            min,
            max,
            flag("--recheck"),
            flag("--threshold").unwrap_or(50),
        )],
        _ => vec![
            (200, 1_500, Some(400), 50),
            (200, 1_500, None, 50),
            (200, 1_000, None, 90),
            (200, 900, None, 95),
            (200, 1_000, None, 95),
            (200, 800, None, 95),
            (200, 1_000, Some(400), 98),
        ],
    };
    for (min, max, recheck, threshold) in grid {
        let config = SegmenterConfig {
            turn: TurnConfig {
                min_silence: Duration::from_millis(min),
                max_silence: Duration::from_millis(max),
                recheck: recheck.map(Duration::from_millis),
                threshold: threshold as f32 / 100.0,
            },
            ..SegmenterConfig::default()
        };
        shared
            .0
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .calls
            .clear();
        let tally = evaluate(&dir, &set, &mut vad, &config, Some(shared.clone()))?;
        let calls = shared
            .0
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .calls
            .clone();
        let recheck = recheck.map_or("once".to_string(), |r| format!("every {r}"));
        report(
            &format!("Smart Turn {min}/{max} ms, {recheck}, p>={threshold}%"),
            &tally,
        );
        println!("{:<34} {} calls: {}", "", calls.len(), stats(&calls));
    }
    Ok(())
}
