//! Speculative recognition: the segmenter offers the utterance so far when the speaker pauses, once per
//! pause; when the turn ends without more speech the final segment holds the same words (same start and
//! speech end), and after more speech it does not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use tomo_audio::{
    FRAME_DURATION, FRAME_SAMPLES, Segmenter, SegmenterConfig, SegmenterEvent, SpeechSegment,
    TurnEnd, VadError, VoiceActivity,
};

struct Scripted(Vec<f32>, usize);

impl VoiceActivity for Scripted {
    fn speech_probability(&mut self, _frame: &[f32]) -> Result<f32, VadError> {
        let p = self.0.get(self.1).copied().unwrap_or(0.0);
        self.1 += 1;
        Ok(p)
    }
    fn reset(&mut self) {}
}

fn run(runs: &[(usize, f32)]) -> (Vec<SpeechSegment>, Vec<SpeechSegment>) {
    let (mut pauses, mut segments) = (Vec::new(), Vec::new());
    for event in events(runs) {
        match event {
            SegmenterEvent::Pause(snapshot) => pauses.push(snapshot),
            SegmenterEvent::Segment(segment) => segments.push(segment),
            _ => {}
        }
    }
    (pauses, segments)
}

/// Frames of 32 ms: onset 2, pre-roll 4, hangover 10, post-roll 2, min speech 5; the utterance offered
/// after `speculate_frames` of silence.
fn config(speculate_frames: u32) -> SegmenterConfig {
    SegmenterConfig {
        onset: FRAME_DURATION * 2,
        pre_roll: FRAME_DURATION * 4,
        hangover: FRAME_DURATION * 10,
        post_roll: FRAME_DURATION * 2,
        min_speech: FRAME_DURATION * 5,
        speculate_after: Some(FRAME_DURATION * speculate_frames),
        ..SegmenterConfig::default()
    }
}

/// Every event of the scripted run, in order.
fn events(runs: &[(usize, f32)]) -> Vec<SegmenterEvent> {
    let probabilities: Vec<f32> = runs
        .iter()
        .flat_map(|&(n, p)| std::iter::repeat_n(p, n))
        .collect();
    let frames = probabilities.len();
    let mut segmenter = Segmenter::new(Scripted(probabilities, 0), &config(3));
    let mut events = Vec::new();
    for _ in 0..frames {
        events.extend(segmenter.push(&[0.0; FRAME_SAMPLES]).unwrap());
    }
    events
}

/// What each event is, in order (`P` pause, `R` resumed, `S` segment), speech starts and ends left out.
fn kinds(events: &[SegmenterEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            SegmenterEvent::Pause(_) => Some('P'),
            SegmenterEvent::Resumed { .. } => Some('R'),
            SegmenterEvent::Segment(_) => Some('S'),
            _ => None,
        })
        .collect()
}

#[test]
fn a_pause_offers_the_utterance_once_and_the_final_segment_matches_it() {
    let (pauses, segments) = run(&[(5, 0.0), (20, 0.9), (15, 0.0)]);
    assert_eq!(pauses.len(), 1, "one offer per pause");
    assert_eq!(segments.len(), 1);
    let (pause, done) = (&pauses[0], &segments[0]);
    assert_eq!(pause.ended_by, TurnEnd::Paused);
    assert_eq!(done.ended_by, TurnEnd::Hangover);
    assert_eq!(
        (pause.start, pause.speech_end),
        (done.start, done.speech_end)
    );
    // The snapshot already holds every speech frame of the final segment.
    let speech = ((done.speech_end - done.start).as_micros() * 16 / 1000) as usize;
    assert!(pause.samples.len() >= speech);
}

#[test]
fn speech_after_the_pause_makes_the_offer_stale_and_a_new_pause_offers_again() {
    let (pauses, segments) = run(&[(5, 0.0), (10, 0.9), (5, 0.0), (10, 0.9), (15, 0.0)]);
    assert_eq!(pauses.len(), 2);
    assert_eq!(segments.len(), 1);
    assert_ne!(pauses[0].speech_end, segments[0].speech_end, "stale");
    assert_eq!(pauses[1].speech_end, segments[0].speech_end);
}

#[test]
fn speech_after_an_offered_pause_says_the_offer_went_stale_where_it_resumed() {
    // 5 frames of silence, 10 of speech, a pause of 5, 10 more of speech, then the end.
    let all = events(&[(5, 0.0), (10, 0.9), (5, 0.0), (10, 0.9), (15, 0.0)]);
    assert_eq!(kinds(&all), "PRPS");
    let resumed = all.iter().find_map(|event| match event {
        SegmenterEvent::Resumed { at } => Some(*at),
        _ => None,
    });
    assert_eq!(resumed, Some(FRAME_DURATION * 20));
    // A gap shorter than the offer's silence offers nothing, so nothing goes stale.
    assert_eq!(
        kinds(&events(&[
            (5, 0.0),
            (10, 0.9),
            (2, 0.0),
            (10, 0.9),
            (15, 0.0)
        ])),
        "PS"
    );
}

#[test]
fn too_little_speech_is_not_offered() {
    let (pauses, segments) = run(&[(5, 0.0), (3, 0.9), (15, 0.0)]);
    assert!(pauses.is_empty() && segments.is_empty());
}

/// A frame of a 440 Hz tone at `dbfs` RMS (digital silence for minus infinity).
fn tone(dbfs: f32) -> Vec<f32> {
    let amplitude = 10f32.powf(dbfs / 20.0) * std::f32::consts::SQRT_2;
    (0..FRAME_SAMPLES)
        .map(|i| amplitude * (i as f32 * 2.0 * std::f32::consts::PI * 440.0 / 16_000.0).sin())
        .collect()
}

/// The events of runs of (frames, probability, level in dBFS), with the utterance offered at the first
/// frame of silence (as live), each paired with the index of the frame that produced it.
fn events_at_levels(runs: &[(usize, f32, f32)]) -> Vec<(usize, SegmenterEvent)> {
    let frames: Vec<(f32, f32)> = runs
        .iter()
        .flat_map(|&(n, p, dbfs)| std::iter::repeat_n((p, dbfs), n))
        .collect();
    let probabilities = frames.iter().map(|(p, _)| *p).collect();
    let mut segmenter = Segmenter::new(Scripted(probabilities, 0), &config(1));
    let mut events = Vec::new();
    for (index, (_, dbfs)) in frames.iter().enumerate() {
        let produced = segmenter.push(&tone(*dbfs)).unwrap();
        events.extend(produced.into_iter().map(|event| (index, event)));
    }
    events
}

/// Where the pauses were offered (frame index) with their speech end, and the final segments' ends.
fn offers_and_ends(events: &[(usize, SegmenterEvent)]) -> (Vec<(usize, Duration)>, Vec<Duration>) {
    let offers = events
        .iter()
        .filter_map(|(index, event)| match event {
            SegmenterEvent::Pause(snapshot) => Some((*index, snapshot.speech_end)),
            _ => None,
        })
        .collect();
    let ends = events
        .iter()
        .filter_map(|(_, event)| match event {
            SegmenterEvent::Segment(segment) => Some(segment.speech_end),
            _ => None,
        })
        .collect();
    (offers, ends)
}

/// Digital silence.
const SILENT: f32 = f32::NEG_INFINITY;

/// Offers and segment ends for 5 silent frames, 20 frames of words at `words_db`, two frames the VAD
/// still calls speech (0.97) at `tail_db`, then silence.
fn words_then_tail(words_db: f32, tail_db: f32) -> (Vec<(usize, Duration)>, Vec<Duration>) {
    offers_and_ends(&events_at_levels(&[
        (5, 0.0, SILENT),
        (20, 0.9, words_db),
        (2, 0.97, tail_db),
        (15, 0.0, SILENT),
    ]))
}

#[test]
fn frames_far_under_the_words_end_the_speech_while_the_vad_still_trails() {
    // Words at -15 dBFS (frames 5-24), then two frames the VAD still calls speech at -55 dBFS, then
    // silence: the speech ends with the words, and the pause is offered on the second quiet frame.
    let (offers, ends) = words_then_tail(-15.0, -55.0);
    assert_eq!(offers, [(26, FRAME_DURATION * 25)]);
    assert_eq!(
        ends,
        [FRAME_DURATION * 25],
        "the final segment holds the same words"
    );
}

#[test]
fn one_quiet_frame_inside_the_words_is_no_pause() {
    // A stop consonant's closure: one frame at -50 dBFS between words at -15.
    let events = events_at_levels(&[
        (5, 0.0, SILENT),
        (10, 0.9, -15.0),
        (1, 0.97, -50.0),
        (10, 0.9, -15.0),
        (15, 0.0, SILENT),
    ]);
    let (offers, ends) = offers_and_ends(&events);
    assert_eq!(offers, [(26, FRAME_DURATION * 26)]);
    assert_eq!(ends, [FRAME_DURATION * 26]);
}

#[test]
fn a_quiet_speaker_is_heard_by_the_vad_alone() {
    // Words at -50 dBFS: frames at -55 are not far under them, so the VAD decides where speech ends.
    let (offers, ends) = words_then_tail(-50.0, -55.0);
    assert_eq!(offers, [(27, FRAME_DURATION * 27)]);
    assert_eq!(ends, [FRAME_DURATION * 27]);
}

#[test]
fn a_knock_before_a_quiet_speaker_does_not_hush_the_words() {
    // A -15 dBFS knock the VAD does not call speech in the pre-roll, then words at -50 dBFS.
    let events = events_at_levels(&[
        (2, 0.0, SILENT),
        (1, 0.0, -15.0),
        (2, 0.0, SILENT),
        (20, 0.9, -50.0),
        (15, 0.0, SILENT),
    ]);
    let (offers, ends) = offers_and_ends(&events);
    assert_eq!(offers, [(25, FRAME_DURATION * 25)]);
    assert_eq!(ends, [FRAME_DURATION * 25]);
}

#[test]
fn a_soft_tail_of_loud_words_is_still_speech() {
    // Words at -5 dBFS and two frames at -40: 35 dB under them, but not under -45 dBFS.
    let (offers, ends) = words_then_tail(-5.0, -40.0);
    assert_eq!(offers, [(27, FRAME_DURATION * 27)]);
    assert_eq!(ends, [FRAME_DURATION * 27]);
}

#[test]
fn words_after_hushed_frames_make_their_offer_stale() {
    let events = events_at_levels(&[
        (5, 0.0, SILENT),
        (10, 0.9, -15.0),
        (2, 0.97, -55.0),
        (10, 0.9, -15.0),
        (15, 0.0, SILENT),
    ]);
    let only: Vec<SegmenterEvent> = events.iter().map(|(_, event)| event.clone()).collect();
    assert_eq!(kinds(&only), "PRPS");
    let (offers, ends) = offers_and_ends(&events);
    assert_eq!(
        offers,
        [(16, FRAME_DURATION * 15), (27, FRAME_DURATION * 27)]
    );
    assert_eq!(ends, [FRAME_DURATION * 27]);
}
