//! The segmenter with an end-of-turn model (scripted here; the real Smart Turn is tested in
//! `smart_turn.rs`): when it is asked, what it hears, and what happens on "done", "not done" and errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tomo_audio::{
    EndOfTurn, FRAME_DURATION, FRAME_SAMPLES, Segmenter, SegmenterConfig, SegmenterEvent,
    SpeechSegment, TurnConfig, TurnEnd, TurnError, VadError, VoiceActivity,
};

/// Speech probabilities by frame; the frame's samples carry its index.
struct Scripted(Vec<f32>, usize);

impl VoiceActivity for Scripted {
    fn speech_probability(&mut self, _frame: &[f32]) -> Result<f32, VadError> {
        let p = self.0.get(self.1).copied().unwrap_or(0.0);
        self.1 += 1;
        Ok(p)
    }
    fn reset(&mut self) {}
}

/// Answers from a list, recording the last frame index of the audio it was given each time.
#[derive(Clone, Default)]
struct Oracle {
    answers: Arc<Mutex<Vec<Result<f32, TurnError>>>>,
    heard: Arc<Mutex<Vec<(usize, usize)>>>,
}

impl EndOfTurn for Oracle {
    fn probability_done(&mut self, utterance: &[f32]) -> Result<f32, TurnError> {
        let first = utterance[0] as usize;
        let last = utterance[utterance.len() - 1] as usize;
        self.heard.lock().unwrap().push((first, last));
        let mut answers = self.answers.lock().unwrap();
        if answers.is_empty() {
            return Ok(0.0);
        }
        answers.remove(0)
    }
}

fn oracle(answers: Vec<Result<f32, TurnError>>) -> Oracle {
    let oracle = Oracle::default();
    *oracle.answers.lock().unwrap() = answers;
    oracle
}

/// 32 ms frames: pre-roll 10, onset 2, hangover 10; ask after 4 silent frames, again every 5, give up
/// after 20.
fn config() -> SegmenterConfig {
    SegmenterConfig {
        onset: FRAME_DURATION * 2,
        pre_roll: FRAME_DURATION * 10,
        hangover: FRAME_DURATION * 10,
        post_roll: FRAME_DURATION * 2,
        min_speech: FRAME_DURATION * 5,
        max_segment: FRAME_DURATION * 1000,
        turn: TurnConfig {
            min_silence: FRAME_DURATION * 4,
            max_silence: FRAME_DURATION * 20,
            recheck: Some(FRAME_DURATION * 5),
            threshold: 0.5,
        },
        ..SegmenterConfig::default()
    }
}

fn script(runs: &[(usize, f32)]) -> Vec<f32> {
    runs.iter()
        .flat_map(|&(n, p)| std::iter::repeat_n(p, n))
        .collect()
}

/// Feeds every scripted frame; returns the segments with the frame index at which each was emitted.
fn run(probabilities: Vec<f32>, model: Option<Oracle>) -> Vec<(usize, SpeechSegment)> {
    let count = probabilities.len();
    let mut segmenter = Segmenter::new(Scripted(probabilities, 0), &config());
    if let Some(model) = model {
        segmenter = segmenter.with_end_of_turn(Box::new(model));
    }
    let mut segments = Vec::new();
    for i in 0..count {
        for event in segmenter.push(&vec![i as f32; FRAME_SAMPLES]).unwrap() {
            if let SegmenterEvent::Segment(segment) = event {
                segments.push((i, segment));
            }
        }
    }
    segments
}

fn at(frames: u32) -> Duration {
    FRAME_DURATION * frames
}

#[test]
fn done_ends_the_turn_after_the_short_silence() {
    let model = oracle(vec![Ok(0.9)]);
    let segments = run(
        script(&[(20, 0.0), (20, 0.9), (40, 0.0)]),
        Some(model.clone()),
    );
    assert_eq!(segments.len(), 1);
    let (emitted, segment) = &segments[0];
    // Last speech frame 39; 4 silent frames later (frame 43) the model is asked and says done.
    assert_eq!(*emitted, 43);
    assert_eq!(segment.ended_by, TurnEnd::ModelDone { probability: 0.9 });
    // It heard the utterance from the pre-roll (frame 10) up to the frame it was asked at.
    assert_eq!(*model.heard.lock().unwrap(), vec![(10, 43)]);
    assert_eq!(segment.end, at(42), "speech end 40 + post-roll 2");
}

#[test]
fn not_done_asks_again_and_gives_up_at_the_maximum_silence() {
    let model = oracle(vec![Ok(0.1), Ok(0.2), Ok(0.3), Ok(0.4)]);
    let segments = run(
        script(&[(20, 0.0), (20, 0.9), (40, 0.0)]),
        Some(model.clone()),
    );
    assert_eq!(segments.len(), 1);
    let (emitted, segment) = &segments[0];
    assert_eq!(segment.ended_by, TurnEnd::MaxSilence);
    assert_eq!(
        *emitted, 59,
        "20 silent frames after the last speech frame 39"
    );
    let asked: Vec<usize> = model.heard.lock().unwrap().iter().map(|h| h.1).collect();
    assert_eq!(asked, vec![43, 48, 53, 58]);
}

#[test]
fn a_pause_the_model_calls_unfinished_does_not_split_the_utterance() {
    let model = oracle(vec![Ok(0.1), Ok(0.1), Ok(0.95)]);
    // Speech, a 12-frame pause (longer than the 10-frame hangover), more speech, silence.
    let segments = run(
        script(&[(20, 0.0), (10, 0.9), (12, 0.0), (10, 0.9), (30, 0.0)]),
        Some(model.clone()),
    );
    assert_eq!(segments.len(), 1);
    assert_eq!(segments[0].1.start, at(10));
    assert_eq!(
        segments[0].1.ended_by,
        TurnEnd::ModelDone { probability: 0.95 }
    );
    // Asked in the pause (at 33) and after the second part (last speech 51 → 55).
    let asked: Vec<usize> = model.heard.lock().unwrap().iter().map(|h| h.1).collect();
    assert_eq!(asked, vec![33, 38, 55]);

    // The fixed hangover alone cuts the same audio in two.
    let fixed = run(
        script(&[(20, 0.0), (10, 0.9), (12, 0.0), (10, 0.9), (30, 0.0)]),
        None,
    );
    assert_eq!(fixed.len(), 2);
    assert!(fixed.iter().all(|(_, s)| s.ended_by == TurnEnd::Hangover));
}

#[test]
fn a_failing_model_falls_back_to_the_hangover() {
    let model = oracle(vec![Err(TurnError::Inference("broken".into()))]);
    let segments = run(
        script(&[(20, 0.0), (20, 0.9), (40, 0.0)]),
        Some(model.clone()),
    );
    assert_eq!(segments.len(), 1);
    let (emitted, segment) = &segments[0];
    assert_eq!(segment.ended_by, TurnEnd::Hangover);
    assert_eq!(*emitted, 49, "hangover of 10 frames after frame 39");
    assert_eq!(model.heard.lock().unwrap().len(), 1, "not asked again");
}
