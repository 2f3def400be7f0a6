//! What idle listening costs: the microphone (default input; under PulseAudio pick the source with
//! `pactl set-default-source`) → 16 kHz → [echo canceller →] Silero VAD → segmenter, with nobody talking,
//! for a while; then the process's CPU time per thread from /proc.
//!
//! `cargo run --release -p tomo-audio --example listen_idle -- [seconds] [--aec] [--playback]`
//! `--playback` also opens the speakers (feeding the echo reference, playing nothing).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tomo_audio::{
    Capture, CaptureConfig, RenderReference, RodioOutput, Segmenter, SegmenterConfig, SileroVad,
};

/// (thread name, user + system clock ticks) of every thread of this process.
fn thread_ticks() -> BTreeMap<String, u64> {
    let mut ticks = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return ticks;
    };
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        // "tid (name) state ..." — the name may hold spaces; fields after it are space-separated.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = format!("{} [{}]", &stat[open + 1..close], stat[..open].trim());
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let used = fields
            .get(11)
            .and_then(|u| u.parse::<u64>().ok())
            .unwrap_or(0)
            + fields
                .get(12)
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0);
        ticks.insert(name, used);
    }
    ticks
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(30);
    let aec = args.iter().any(|a| a == "--aec");
    let playback = args.iter().any(|a| a == "--playback");
    let root = std::env::var_os("TOMO_MODELS_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".local/share/tomo/models")
        },
        PathBuf::from,
    );
    let vad = SileroVad::new(
        &root.join("vad/silero_vad.onnx"),
        &root.join("runtime/libonnxruntime.so"),
    )?;
    let reference = RenderReference::new();
    let _output = if playback {
        Some(RodioOutput::open_with_reference(
            None,
            Some(reference.clone()),
        )?)
    } else {
        None
    };
    let (capture, streams) = Capture::spawn(CaptureConfig {
        echo_reference: aec.then(|| reference.clone()),
        ..CaptureConfig::default()
    })?;
    let device = capture.start()?;
    let mut segmenter = Segmenter::new(vad, &SegmenterConfig::default());
    // Settle (the first callbacks, model warm-up) before measuring.
    let settle = Instant::now() + Duration::from_secs(2);
    while Instant::now() < settle {
        if let Ok(frame) = streams.frames.recv_timeout(Duration::from_millis(500)) {
            segmenter.push(&frame.samples)?;
        }
    }
    let before = thread_ticks();
    let started = Instant::now();
    let mut frames = 0_u64;
    let mut events = 0_usize;
    while started.elapsed() < Duration::from_secs(seconds) {
        if let Ok(frame) = streams.frames.recv_timeout(Duration::from_millis(500)) {
            events += segmenter.push(&frame.samples)?.len();
            frames += 1;
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let after = thread_ticks();
    let tick = 100.0; // USER_HZ on Linux
    let mut total = 0.0;
    println!(
        "listening on {device} for {wall:.1} s (echo canceller: {aec}, speakers open: {playback}): {frames} frames ({:.1}/s), {events} segmenter events, {} dropped",
        frames as f64 / wall,
        capture.dropped_frames()
    );
    for (name, ticks) in &after {
        let used = ticks - before.get(name).copied().unwrap_or(0);
        let share = used as f64 / tick / wall * 100.0;
        total += share;
        if used > 0 {
            println!("  {name:<32} {share:5.1} % of one core");
        }
    }
    println!("  total                            {total:5.1} % of one core");
    Ok(())
}
