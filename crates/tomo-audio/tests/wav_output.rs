//! `WavOutput`: clips written in order into one WAV, callbacks at once, a valid file after `drained()`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use tomo_audio::output::{AudioOutput, Clip, OutputError};
use tomo_audio::{Audio, WavOutput, read_wav_mono};

fn clip(samples: Vec<f32>, rate: u32, name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> Clip {
    let (a, b) = (Arc::clone(log), Arc::clone(log));
    Clip {
        audio: Audio::new(samples, rate),
        on_start: Some(Box::new(move || {
            a.lock().unwrap().push(format!("start {name}"))
        })),
        on_finish: Some(Box::new(move || {
            b.lock().unwrap().push(format!("finish {name}"))
        })),
    }
}

#[test]
fn clips_are_written_in_order_at_the_first_clips_rate() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reply.wav");
    let out = WavOutput::create(&path).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    // 0.5 s of +0.5 at 22 050 Hz, then 0.25 s of -0.5 at 48 kHz (resampled), then silence.
    out.play(clip(vec![0.5; 11025], 22050, "a", &log)).unwrap();
    out.play(clip(vec![-0.5; 12000], 48000, "b", &log)).unwrap();
    out.play(clip(vec![0.0; 2205], 22050, "c", &log)).unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            "start a", "finish a", "start b", "finish b", "start c", "finish c"
        ]
    );
    futures::executor::block_on(out.drained());

    // Valid on disk after drained(), before finish().
    let written = read_wav_mono(&path).unwrap();
    assert_eq!(written.sample_rate, 22050);
    assert_eq!(out.sample_rate(), Some(22050));
    let s = &written.samples;
    assert_eq!(s.len(), 11025 + 5513 + 2205, "length {}", s.len());
    // Away from the edges (the resampler rings briefly at a step), each part has its own level.
    assert!(s[100..10900].iter().all(|v| (v - 0.5).abs() < 0.01));
    assert!(s[11300..16300].iter().all(|v| (v + 0.5).abs() < 0.02));
    assert!(s[16800..].iter().all(|v| v.abs() < 0.01));

    // More clips after drained() are appended; finish() finalizes and later clips are refused.
    out.play(clip(vec![0.25; 2205], 22050, "d", &log)).unwrap();
    out.finish().unwrap();
    assert_eq!(read_wav_mono(&path).unwrap().samples.len(), s.len() + 2205);
    let refused = out.play(clip(vec![0.0; 10], 22050, "e", &log));
    assert!(
        matches!(refused, Err(OutputError::File { .. })),
        "{refused:?}"
    );
}

#[test]
fn an_output_without_clips_is_an_empty_valid_wav() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.wav");
    WavOutput::create(&path).unwrap().finish().unwrap();
    let written = read_wav_mono(&path).unwrap();
    assert!(written.samples.is_empty());
}

#[test]
fn an_unwritable_path_is_an_error_naming_it() {
    let error = WavOutput::create(std::path::Path::new("/nonexistent/dir/out.wav"))
        .err()
        .unwrap();
    assert!(matches!(error, OutputError::File { .. }));
    assert!(
        error.to_string().contains("/nonexistent/dir/out.wav"),
        "{error}"
    );
}

#[test]
fn the_file_is_finalized_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dropped.wav");
    {
        let out = WavOutput::create(&path).unwrap();
        out.play(Clip {
            audio: Audio::new(common::tone(440.0, 24000, 0.3), 24000),
            on_start: None,
            on_finish: None,
        })
        .unwrap();
    }
    assert_eq!(read_wav_mono(&path).unwrap().samples.len(), 7200);
}
