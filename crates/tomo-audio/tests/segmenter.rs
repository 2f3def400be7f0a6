//! Segmenter logic with a scripted VAD: every frame is filled with its own index, so the samples of a
//! segment tell exactly which frames it holds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use tomo_audio::{
    FRAME_DURATION, FRAME_SAMPLES, ListenMode, Segmenter, SegmenterConfig, SegmenterEvent,
    SpeechSegment, VadError, VoiceActivity,
};

/// Returns scripted probabilities, one per call; counts calls and resets.
struct Scripted {
    probabilities: Vec<f32>,
    calls: usize,
    resets: usize,
}

impl Scripted {
    fn new(probabilities: Vec<f32>) -> Self {
        Self {
            probabilities,
            calls: 0,
            resets: 0,
        }
    }
}

impl VoiceActivity for Scripted {
    fn speech_probability(&mut self, _frame: &[f32]) -> Result<f32, VadError> {
        let p = self.probabilities.get(self.calls).copied().unwrap_or(0.0);
        self.calls += 1;
        Ok(p)
    }
    fn reset(&mut self) {
        self.resets += 1;
    }
}

/// Frames of 32 ms: pre-roll 10, onset 2, hangover 10, post-roll 2, min speech 5, max 100 frames.
fn config() -> SegmenterConfig {
    SegmenterConfig {
        threshold: 0.5,
        release_threshold: 0.35,
        onset: FRAME_DURATION * 2,
        pre_roll: FRAME_DURATION * 10,
        hangover: FRAME_DURATION * 10,
        post_roll: FRAME_DURATION * 2,
        min_speech: FRAME_DURATION * 5,
        max_segment: FRAME_DURATION * 100,
        ..SegmenterConfig::default()
    }
}

/// `runs` of (frame count, probability).
fn script(runs: &[(usize, f32)]) -> Vec<f32> {
    runs.iter()
        .flat_map(|&(n, p)| std::iter::repeat_n(p, n))
        .collect()
}

fn frame(index: usize) -> Vec<f32> {
    vec![index as f32; FRAME_SAMPLES]
}

fn at(frames: u64) -> Duration {
    FRAME_DURATION * frames as u32
}

/// Feeds `count` frames, numbered from the segmenter's current position, and then flushes.
fn run(segmenter: &mut Segmenter<&mut Scripted>, count: usize) -> Vec<SegmenterEvent> {
    let mut events = Vec::new();
    let first = (segmenter.position().as_micros() / FRAME_DURATION.as_micros()) as usize;
    for i in first..first + count {
        events.extend(segmenter.push(&frame(i)).unwrap());
    }
    events
}

fn segments(events: &[SegmenterEvent]) -> Vec<&SpeechSegment> {
    events
        .iter()
        .filter_map(|e| match e {
            SegmenterEvent::Segment(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// Which frames a segment holds, checking each frame is whole and in order.
fn frames_of(segment: &SpeechSegment) -> Vec<usize> {
    assert_eq!(segment.samples.len() % FRAME_SAMPLES, 0);
    segment
        .samples
        .chunks_exact(FRAME_SAMPLES)
        .map(|f| {
            assert!(f.iter().all(|&s| s == f[0]), "frame mixed up");
            f[0] as usize
        })
        .collect()
}

#[test]
fn one_utterance_with_pre_roll_hangover_and_post_roll() {
    let mut vad = Scripted::new(script(&[(30, 0.1), (20, 0.9), (30, 0.1)]));
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let events = run(&mut segmenter, 80);
    let events: Vec<_> = events.into_iter().chain(segmenter.flush()).collect();

    // Speech starts at its first speech frame (30) and ends after the last one (49).
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0], SegmenterEvent::SpeechStarted { at: at(30) });
    assert_eq!(events[1], SegmenterEvent::SpeechEnded { at: at(50) });
    let segment = &segments(&events)[0];
    // 10 frames of pre-roll before frame 30, 2 frames of post-roll after frame 49.
    assert_eq!(frames_of(segment), (20..52).collect::<Vec<_>>());
    assert_eq!(segment.start, at(20));
    assert_eq!(segment.end, at(52));
}

#[test]
fn pre_roll_is_clamped_at_the_stream_start() {
    let mut vad = Scripted::new(script(&[(3, 0.1), (10, 0.9)]));
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let mut events = run(&mut segmenter, 20);
    events.extend(segmenter.flush());
    let segment = segments(&events)[0];
    assert_eq!(frames_of(segment)[0], 0);
    assert_eq!(segment.start, Duration::ZERO);
}

#[test]
fn a_pause_shorter_than_the_hangover_keeps_one_segment() {
    // 9 quiet frames < 10-frame hangover.
    let mut vad = Scripted::new(script(&[
        (15, 0.0),
        (10, 0.9),
        (9, 0.1),
        (10, 0.9),
        (20, 0.0),
    ]));
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let events = run(&mut segmenter, 64);
    let found = segments(&events);
    assert_eq!(found.len(), 1, "{events:?}");
    assert_eq!(frames_of(found[0]), (5..46).collect::<Vec<_>>());
}

#[test]
fn a_pause_as_long_as_the_hangover_splits_and_the_pause_is_the_next_pre_roll() {
    let mut vad = Scripted::new(script(&[
        (15, 0.0),
        (10, 0.9),
        (12, 0.1),
        (10, 0.9),
        (20, 0.0),
    ]));
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let events = run(&mut segmenter, 67);
    let found = segments(&events);
    assert_eq!(found.len(), 2, "{events:?}");
    assert_eq!(frames_of(found[0]), (5..27).collect::<Vec<_>>());
    // The second one reaches back into the pause, but never into the first segment.
    assert_eq!(frames_of(found[1]), (27..49).collect::<Vec<_>>());
}

#[test]
fn hysteresis_keeps_soft_frames_inside_speech() {
    // 0.4 is below the onset threshold but above the release threshold.
    let mut vad = Scripted::new(script(&[
        (5, 0.0),
        (5, 0.9),
        (12, 0.4),
        (5, 0.9),
        (20, 0.0),
    ]));
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let events = run(&mut segmenter, 47);
    assert_eq!(segments(&events).len(), 1, "{events:?}");
    let ended: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, SegmenterEvent::SpeechEnded { .. }))
        .collect();
    assert_eq!(ended, vec![&SegmenterEvent::SpeechEnded { at: at(27) }]);
}

#[test]
fn short_bursts_are_dropped_but_reported_to_the_ui() {
    // 4 speech frames < 5-frame minimum.
    let mut vad = Scripted::new(script(&[(20, 0.0), (4, 0.9), (20, 0.0)]));
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let events = run(&mut segmenter, 44);
    assert_eq!(
        events,
        vec![
            SegmenterEvent::SpeechStarted { at: at(20) },
            SegmenterEvent::SpeechEnded { at: at(24) },
        ]
    );
}

#[test]
fn a_single_loud_frame_does_not_start_speech() {
    let mut vad = Scripted::new(script(&[
        (20, 0.0),
        (1, 0.99),
        (3, 0.0),
        (1, 0.99),
        (20, 0.0),
    ]));
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let mut events = run(&mut segmenter, 45);
    events.extend(segmenter.flush());
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn long_speech_is_cut_at_the_maximum_length() {
    let mut vad = Scripted::new(script(&[(250, 0.9), (20, 0.0)]));
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let events = run(&mut segmenter, 270);
    let found = segments(&events);
    assert_eq!(found.len(), 3, "{events:?}");
    assert_eq!(frames_of(found[0]), (0..100).collect::<Vec<_>>());
    assert_eq!(frames_of(found[1]), (100..200).collect::<Vec<_>>());
    assert_eq!(frames_of(found[2]), (200..252).collect::<Vec<_>>());
    let started = events
        .iter()
        .filter(|e| matches!(e, SegmenterEvent::SpeechStarted { .. }))
        .count();
    assert_eq!(started, 1, "a forced cut is not a new utterance for the UI");
}

#[test]
fn flush_finishes_speech_at_end_of_stream() {
    let mut vad = Scripted::new(script(&[(5, 0.0), (10, 0.9)]));
    let mut segmenter = Segmenter::new(&mut vad, &config());
    run(&mut segmenter, 15);
    let events = segmenter.flush();
    assert_eq!(events[0], SegmenterEvent::SpeechEnded { at: at(15) });
    assert_eq!(frames_of(segments(&events)[0]), (0..15).collect::<Vec<_>>());
}

#[test]
fn push_to_talk_takes_exactly_the_pressed_frames_and_ignores_the_vad() {
    let mut vad = Scripted::new(vec![0.9; 100]);
    let mut segmenter = Segmenter::new(&mut vad, &config());
    assert!(segmenter.set_mode(ListenMode::PushToTalk).is_empty());
    let mut events = run(&mut segmenter, 10);
    assert!(events.is_empty(), "no segment without a press");
    events.extend(segmenter.press());
    events.extend(run(&mut segmenter, 3)); // shorter than min_speech: still kept
    events.extend(segmenter.release());
    events.extend(run(&mut segmenter, 10));
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0], SegmenterEvent::SpeechStarted { at: at(10) });
    assert_eq!(events[1], SegmenterEvent::SpeechEnded { at: at(13) });
    assert_eq!(frames_of(segments(&events)[0]), vec![10, 11, 12]);
    drop(segmenter);
    assert_eq!(vad.calls, 0);
}

#[test]
fn release_without_audio_gives_no_segment() {
    let mut vad = Scripted::new(vec![]);
    let mut segmenter = Segmenter::new(&mut vad, &config());
    segmenter.set_mode(ListenMode::PushToTalk);
    let mut events = segmenter.press();
    events.extend(segmenter.release());
    assert_eq!(events.len(), 2);
    assert!(segments(&events).is_empty());
}

#[test]
fn muted_drops_frames_but_keeps_time() {
    let mut vad = Scripted::new(vec![0.9; 100]);
    let mut segmenter = Segmenter::new(&mut vad, &config());
    segmenter.set_mode(ListenMode::Muted);
    let mut events = run(&mut segmenter, 40);
    events.extend(segmenter.press());
    events.extend(segmenter.flush());
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(segmenter.position(), at(40));
    drop(segmenter);
    assert_eq!(vad.calls, 0);
}

#[test]
fn muting_mid_utterance_discards_it_and_resets_the_vad() {
    let mut vad = Scripted::new(vec![0.9; 100]);
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let mut events = run(&mut segmenter, 20);
    events.extend(segmenter.set_mode(ListenMode::Muted));
    events.extend(run(&mut segmenter, 20));
    events.extend(segmenter.set_mode(ListenMode::HandsFree));
    assert_eq!(
        events,
        vec![
            SegmenterEvent::SpeechStarted { at: at(0) },
            SegmenterEvent::SpeechEnded { at: at(20) },
        ]
    );
    drop(segmenter);
    assert_eq!(vad.resets, 2);
}

#[test]
fn frames_of_the_wrong_length_are_an_error() {
    let mut vad = Scripted::new(vec![]);
    let mut segmenter = Segmenter::new(&mut vad, &config());
    let error = segmenter.push(&[0.0; 100]).unwrap_err();
    assert_eq!(
        error,
        VadError::FrameLength {
            expected: 512,
            got: 100
        }
    );
}

#[test]
fn quiet_frames_skip_the_model_only_while_no_utterance_is_open() {
    // Frames 0-9 digital silence, 10-29 sound (the model says speech), 30-59 silence again.
    let mut vad = Scripted::new(script(&[(20, 0.9), (30, 0.1)]));
    let quiet = SegmenterConfig {
        skip_quiet: true,
        ..config()
    };
    let mut segmenter = Segmenter::new(&mut vad, &quiet);
    let mut events = Vec::new();
    for i in 0..60 {
        let samples = if (10..30).contains(&i) {
            vec![0.2; FRAME_SAMPLES]
        } else {
            vec![0.0; FRAME_SAMPLES]
        };
        events.extend(segmenter.push(&samples).unwrap());
    }
    let found = segments(&events);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].speech_end, at(30));
    // The leading silence never reached the model; inside the utterance every frame did, up to the
    // hangover (10 frames) that ended it; after it, silence skips the model again.
    assert_eq!(vad.calls, 20 + 10);
    // Its state was from before the skipped silence: started afresh when sound came back, once.
    assert_eq!(vad.resets, 1);
}

#[test]
fn frames_the_echo_suppressor_silenced_still_reach_the_model_while_echo_remains() {
    // While the character speaks, the suppressor takes its voice under the quiet level but the linear
    // output keeps the residual echo: those frames are not silence, so the model keeps its state through
    // them (a reset on each left it starting afresh at the user's first syllables).
    let mut vad = Scripted::new(vec![0.1; 40]);
    let quiet = SegmenterConfig {
        skip_quiet: true,
        ..config()
    };
    let mut segmenter = Segmenter::new(&mut vad, &quiet);
    let suppressed = vec![0.0; FRAME_SAMPLES];
    let residual = vec![0.01; FRAME_SAMPLES];
    for _ in 0..20 {
        segmenter.push_heard(&suppressed, &residual).unwrap();
    }
    // Then both quiet (nothing plays, nobody talks): the model rests.
    for _ in 0..20 {
        segmenter.push_heard(&suppressed, &suppressed).unwrap();
    }
    drop(segmenter);
    assert_eq!(vad.calls, 20);
    assert_eq!(vad.resets, 0);
}
