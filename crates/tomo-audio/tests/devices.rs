//! Real audio devices: PulseAudio with a null sink (scripts/pulse-null.sh). Audio played through rodio
//! goes to `nullsink`; capture reads `nullsink.monitor` (the default source), a real loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tomo_audio::output::{AudioOutput, Clip, OutputError};
use tomo_audio::{
    Audio, Capture, CaptureConfig, CaptureError, CaptureStatus, FRAME_SAMPLES, RodioOutput,
    Segmenter, SegmenterConfig, SegmenterEvent, SileroVad, list_input_devices,
};

type Log = Arc<Mutex<Vec<(String, Instant)>>>;

fn clip(audio: Audio, name: &str, log: &Log) -> Clip {
    let (start_log, finish_log) = (Arc::clone(log), Arc::clone(log));
    let (start, finish) = (format!("start {name}"), format!("finish {name}"));
    Clip {
        audio,
        on_start: Some(Box::new(move || {
            start_log.lock().unwrap().push((start, Instant::now()));
        })),
        on_finish: Some(Box::new(move || {
            finish_log.lock().unwrap().push((finish, Instant::now()));
        })),
    }
}

fn names(log: &Log) -> Vec<String> {
    log.lock().unwrap().iter().map(|(n, _)| n.clone()).collect()
}

/// The null sink, to one test at a time: tests that record it must hear only their own sound.
struct Speakers {
    out: RodioOutput,
    _alone: std::sync::MutexGuard<'static, ()>,
}

impl std::ops::Deref for Speakers {
    type Target = RodioOutput;
    fn deref(&self) -> &RodioOutput {
        &self.out
    }
}

fn output() -> Option<Speakers> {
    static PLAYING: Mutex<()> = Mutex::new(());
    if !common::pulse_null_sink() {
        return None;
    }
    let alone = PLAYING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Some(Speakers {
        out: RodioOutput::open(None).unwrap(),
        _alone: alone,
    })
}

/// Waits for `future` on another thread; `None` if it did not resolve within `limit` (a hang check,
/// not a speed target).
fn wait(future: futures::future::BoxFuture<'static, ()>, limit: Duration) -> Option<Duration> {
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        futures::executor::block_on(future);
        let _ = tx.send(started.elapsed());
    });
    rx.recv_timeout(limit).ok()
}

#[test]
fn a_one_second_tone_drains_no_sooner_than_one_second() {
    let Some(out) = output() else { return };
    let log = Log::default();
    let started = Instant::now();
    out.play(clip(
        Audio::new(common::tone(440.0, 24000, 1.0), 24000),
        "tone",
        &log,
    ))
    .unwrap();
    futures::executor::block_on(out.drained());
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(1),
        "drained after {elapsed:?}"
    );
    assert_eq!(names(&log), vec!["start tone", "finish tone"]);
    // `on_start` runs when the playback thread hears of the first pull, which a loaded machine can delay
    // by more than the device buffer that `on_finish` waits on top of the clip's length.
    let events = log.lock().unwrap().clone();
    let start_to_finish = events[1].1 - events[0].1;
    assert!(
        start_to_finish >= Duration::from_millis(900),
        "finished {start_to_finish:?} after it started"
    );
}

#[test]
fn clips_at_different_rates_play_strictly_in_order() {
    let Some(out) = output() else { return };
    let log = Log::default();
    let started = Instant::now();
    for (name, rate, secs) in [("a", 22050, 0.4), ("b", 48000, 0.3), ("c", 16000, 0.3)] {
        out.play(clip(
            Audio::new(common::tone(300.0, rate, secs), rate),
            name,
            &log,
        ))
        .unwrap();
    }
    // An empty clip still gets both callbacks, in its place in the queue.
    out.play(clip(Audio::new(Vec::new(), 22050), "empty", &log))
        .unwrap();
    futures::executor::block_on(out.drained());
    // 1.0 s of audio in all. The device's pull clock may run a few tens of milliseconds ahead of the wall
    // clock when PulseAudio fills its buffer at the start, so the bound leaves 10 %: what it catches is
    // `drained()` resolving when clips were queued or skipped, not when they were heard.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900),
        "drained after {elapsed:?}"
    );
    assert_eq!(
        names(&log),
        vec![
            "start a",
            "finish a",
            "start b",
            "finish b",
            "start c",
            "finish c",
            "start empty",
            "finish empty"
        ]
    );
    // Nothing queued: resolves at once.
    assert!(wait(out.drained(), Duration::from_secs(1)).is_some());
}

#[test]
fn stop_mid_clip_drains_soon_and_drops_the_queue() {
    let Some(out) = output() else { return };
    let log = Log::default();
    out.play(clip(
        Audio::new(common::tone(440.0, 24000, 3.0), 24000),
        "long",
        &log,
    ))
    .unwrap();
    out.play(clip(
        Audio::new(common::tone(440.0, 24000, 1.0), 24000),
        "next",
        &log,
    ))
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !names(&log).contains(&"start long".to_string()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let drained = out.drained();
    out.stop();
    assert!(
        wait(drained, Duration::from_secs(2)).is_some(),
        "drained() did not resolve after stop()"
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(names(&log), vec!["start long"], "the queue was not dropped");

    // The output keeps working after a stop.
    out.play(clip(
        Audio::new(common::tone(440.0, 24000, 0.2), 24000),
        "after",
        &log,
    ))
    .unwrap();
    assert!(wait(out.drained(), Duration::from_secs(5)).is_some());
    assert_eq!(
        names(&log),
        vec!["start long", "start after", "finish after"]
    );
}

#[test]
fn an_unknown_output_device_is_a_clear_error() {
    if !common::pulse_null_sink() {
        return;
    }
    let error = RodioOutput::open(Some("no-such-speaker-xyz"))
        .err()
        .unwrap();
    let message = error.to_string();
    assert!(message.contains("no-such-speaker-xyz"), "{message}");
    assert!(message.contains("available"), "{message}");
    assert!(matches!(error, OutputError::NoDevice(_)), "{error:?}");
}

#[test]
fn an_unknown_input_device_is_a_clear_error_listing_the_devices() {
    if !common::pulse_null_sink() {
        return;
    }
    let (capture, _streams) = Capture::spawn(CaptureConfig {
        device: Some("no-such-mic-xyz".into()),
        ..CaptureConfig::default()
    })
    .unwrap();
    let error = capture.start().unwrap_err();
    let CaptureError::NoDevice { available, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(!available.is_empty());
    let message = error.to_string();
    assert!(message.contains("no-such-mic-xyz"), "{message}");
    for name in list_input_devices() {
        assert!(message.contains(&name), "{message} lacks {name}");
    }
    capture.shutdown();
}

/// The default microphone is read from the sound server itself (PulseAudio's simple API).
#[test]
fn speech_played_to_the_null_sink_is_captured_back_at_16k() {
    if let Some(device) = speech_is_captured_back(CaptureConfig::default()) {
        assert_eq!(device, "sound server default source");
    }
}

/// Without the sound server's API (or for a named device), through cpal and ALSA's pulse plugin.
#[test]
fn speech_is_captured_back_through_alsa_too() {
    if let Some(device) = speech_is_captured_back(CaptureConfig {
        sound_server: false,
        ..CaptureConfig::default()
    }) {
        assert!(!device.contains("sound server"), "{device}");
    }
}

/// Plays a spoken sentence to the null sink and checks it comes back through `config`'s capture as 16 kHz
/// frames the VAD finds speech in. Returns the capture's device name (`None`: skipped).
fn speech_is_captured_back(config: CaptureConfig) -> Option<String> {
    let out = output()?;
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("speech.wav");
    if !common::espeak(
        "Good morning, I would like a cup of green tea, please.",
        &wav,
    ) {
        return None;
    }
    let speech = tomo_audio::read_wav_mono(&wav).unwrap();
    let speech_secs = speech.duration_secs();

    let (capture, streams) = Capture::spawn(config).unwrap();
    let device = capture.start().unwrap();
    let status = streams.status.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        matches!(status, CaptureStatus::Started { .. }),
        "{status:?}"
    );
    // The first PulseAudio callback can take about a second.
    let first = streams
        .frames
        .recv_timeout(Duration::from_secs(10))
        .unwrap();
    assert_eq!(first.samples.len(), FRAME_SAMPLES);

    let log = Log::default();
    out.play(clip(speech, "speech", &log)).unwrap();
    let mut frames = Vec::new();
    let until = Instant::now() + Duration::from_secs_f64(speech_secs + 1.5);
    while Instant::now() < until {
        if let Ok(frame) = streams.frames.recv_timeout(Duration::from_millis(200)) {
            assert_eq!(frame.samples.len(), FRAME_SAMPLES);
            // No echo canceller here: every frame goes through untouched.
            assert_eq!(frame.echo, tomo_audio::FrameEcho::default());
            frames.push(frame.samples);
        }
    }
    capture.stop().unwrap();
    let captured_secs = frames.len() as f64 * 0.032;
    assert!(
        captured_secs >= speech_secs,
        "captured {captured_secs:.2} s from {device}, speech is {speech_secs:.2} s"
    );
    let loud = frames.iter().filter(|f| common::rms(f) > 0.01).count();
    assert!(
        loud as f64 * 0.032 >= speech_secs * 0.3,
        "only {loud} of {} frames carry speech energy",
        frames.len()
    );
    assert_eq!(capture.dropped_frames(), 0);

    let (model, runtime) = common::silero_paths()?;
    let vad = SileroVad::new(&model, &runtime).unwrap();
    let mut segmenter = Segmenter::new(vad, &SegmenterConfig::default());
    let mut segments = Vec::new();
    for frame in &frames {
        segments.extend(segmenter.push(frame).unwrap());
    }
    segments.extend(segmenter.flush());
    let found: Vec<_> = segments
        .iter()
        .filter_map(|e| match e {
            SegmenterEvent::Segment(s) => Some((s.start, s.end)),
            _ => None,
        })
        .collect();
    assert!(
        !found.is_empty(),
        "the VAD found no speech in the captured audio"
    );
    capture.shutdown();
    Some(device)
}

/// Splits a recording into runs of sound and silence: (is sound, length in 10 ms blocks).
fn sound_runs(samples: &[f32]) -> Vec<(bool, usize)> {
    let mut runs: Vec<(bool, usize)> = Vec::new();
    for block in samples.chunks(160) {
        let sound = common::rms(block) > 0.01;
        match runs.last_mut() {
            Some((kind, length)) if *kind == sound => *length += 1,
            _ => runs.push((sound, 1)),
        }
    }
    runs
}

#[test]
fn a_held_clip_stops_where_it_is_and_plays_the_rest_once_let_go() {
    let Some(out) = output() else { return };
    let (capture, streams) = Capture::spawn(CaptureConfig::default()).unwrap();
    capture.start().unwrap();
    streams
        .frames
        .recv_timeout(Duration::from_secs(10))
        .unwrap();
    let log = Log::default();
    out.play(clip(
        Audio::new(common::tone(440.0, 24000, 1.2), 24000),
        "tone",
        &log,
    ))
    .unwrap();
    let drained = out.drained();
    let mut recorded = Vec::new();
    let mut record_for = |time: Duration| {
        let until = Instant::now() + time;
        while Instant::now() < until {
            if let Ok(frame) = streams.frames.recv_timeout(Duration::from_millis(50)) {
                recorded.extend(frame.samples);
            }
        }
    };
    record_for(Duration::from_millis(500));
    out.pause(true);
    record_for(Duration::from_millis(1_000));
    out.pause(false);
    record_for(Duration::from_millis(1_500));
    capture.shutdown();
    assert!(
        wait(drained, Duration::from_secs(5)).is_some(),
        "the clip drained once let go"
    );
    assert_eq!(names(&log), vec!["start tone", "finish tone"]);
    // Sound, the hold's silence, sound again: the clip was not dropped, nor played twice.
    let runs: Vec<(bool, usize)> = sound_runs(&recorded)
        .into_iter()
        .skip_while(|(sound, _)| !sound)
        .filter(|(_, length)| *length > 2)
        .collect();
    assert!(runs.len() >= 3, "{runs:?}");
    assert!(runs[0].0 && !runs[1].0 && runs[2].0, "{runs:?}");
    assert!(runs[1].1 >= 50, "held for {} ms: {runs:?}", runs[1].1 * 10);
    let played: usize = runs
        .iter()
        .filter(|(sound, _)| *sound)
        .map(|(_, l)| l)
        .sum();
    assert!(
        (105..=135).contains(&played),
        "{} ms of the 1.2 s tone heard: {runs:?}",
        played * 10
    );
}
