//! Echo cancellation with the real AEC3 (sonora) and the real Silero VAD on the echo fixtures: 20 answers
//! in the Piper voice heard back through a loopback and two simulated rooms, and the user talking (or
//! coughing, typing, saying "mm-hm") over some of them. Times are in audio samples, never wall clock.
//! What the user's speech over an answer decides (held, then stopped or let go on by its words, with
//! whisper) is tested on the same fixtures in tomo-runtime's tests/talk_over_echo.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::echo::{Replay, cleaned_mic, fixture, json, probabilities};
use tomo_audio::{
    BargeInConfig, BargeInGate, EchoCanceller, EchoConfig, EchoOutput, FRAME_SAMPLES,
    RenderReference, Segmenter, SegmenterConfig, SegmenterEvent, SileroVad,
};

fn vad() -> Option<SileroVad> {
    let (model, runtime) = common::silero_paths()?;
    Some(SileroVad::new(&model, &runtime).unwrap())
}

/// Barge-ins the gate fires (sample where it decided) on the frames' speech probabilities and what the
/// canceller kept of them, speech starts the segmenter reports, and the utterances it would hand to ASR.
fn detections(probabilities: &[f32], kept_db: &[f32]) -> (Vec<usize>, usize, Vec<usize>) {
    let mut gate = BargeInGate::new(&BargeInConfig::default());
    let fired = probabilities
        .iter()
        .zip(kept_db)
        .enumerate()
        .filter_map(|(i, (&p, &kept))| gate.push(p, kept).map(|_| (i + 1) * FRAME_SAMPLES))
        .collect();
    let mut segmenter = Segmenter::new(
        Replay(probabilities.to_vec(), 0),
        &SegmenterConfig::default(),
    );
    let frame = vec![0.0; FRAME_SAMPLES];
    let (mut starts, mut segments) = (0, Vec::new());
    for _ in probabilities {
        for event in segmenter.push(&frame).unwrap() {
            match event {
                SegmenterEvent::SpeechStarted { .. } => starts += 1,
                SegmenterEvent::Segment(s) => {
                    segments.push((s.start.as_secs_f64() * 16_000.0) as usize)
                }
                SegmenterEvent::SpeechEnded { .. }
                | SegmenterEvent::Pause(_)
                | SegmenterEvent::Resumed { .. } => {}
            }
        }
    }
    (fired, starts, segments)
}

/// No barge-in over the 20 answers of `case`. Utterances the segmenter finds in the echo: none at all
/// with `no_utterances`, else only ones that begin while an answer plays (the listener hands those to
/// the barge-in gate alone, so they cannot become a turn).
fn no_false_detections(case: &str, vad: &mut SileroVad, no_utterances: bool) {
    let answers = json(&fixture("echo-answers").join("answers.json"));
    let answers = answers["answers"].as_array().unwrap();
    assert!(answers.len() >= 20);
    let raw = cleaned_mic(case, None);
    let (raw_fired, raw_starts, raw_segments) =
        detections(&probabilities(&raw.samples, vad), &raw.kept_db);
    let clean = cleaned_mic(case, Some(EchoOutput::default()));
    let (fired, starts, segments) = detections(&probabilities(&clean.samples, vad), &clean.kept_db);
    eprintln!(
        "{case}: without AEC {} barge-ins, {raw_starts} speech onsets, {} utterances; \
         with AEC {} barge-ins, {starts} onsets, {} utterances",
        raw_fired.len(),
        raw_segments.len(),
        fired.len(),
        segments.len()
    );
    assert!(
        raw_fired.len() >= 10 && raw_segments.len() >= 10,
        "{case}: the echo alone should look like speech without AEC"
    );
    assert!(
        fired.is_empty(),
        "{case}: false barge-ins at samples {fired:?}"
    );
    let playing = |at: usize| {
        answers.iter().any(|a| {
            (a["start"].as_u64().unwrap() as usize..=a["end"].as_u64().unwrap() as usize)
                .contains(&at)
        })
    };
    if no_utterances {
        assert!(
            segments.is_empty(),
            "{case}: utterances of the echo at {segments:?}"
        );
    }
    assert!(
        segments.iter().all(|&at| playing(at)),
        "{case}: utterances of the echo outside the answers at {segments:?}"
    );
}

#[test]
fn twenty_answers_through_a_loopback_never_interrupt_once_the_echo_is_cancelled() {
    let Some(mut vad) = vad() else {
        return;
    };
    no_false_detections("echo-loopback", &mut vad, true);
}

#[test]
fn twenty_answers_in_a_room_never_interrupt_once_the_echo_is_cancelled() {
    let Some(mut vad) = vad() else {
        return;
    };
    let results: Vec<_> = ["echo-room-near", "echo-room-far"]
        .into_iter()
        .map(|case| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                no_false_detections(case, &mut vad, false)
            }))
        })
        .collect();
    assert!(results.iter().all(Result::is_ok), "see above");
}

#[test]
#[ignore = "diagnostic"]
fn trace_probabilities_around_the_user_words() {
    let Some(mut vad) = vad() else {
        return;
    };
    let case = json(&fixture("echo-barge-in").join("case.json"));
    let clean = probabilities(
        &cleaned_mic("echo-barge-in", Some(EchoOutput::default())).samples,
        &mut vad,
    );
    let raw = probabilities(
        &cleaned_mic("echo-barge-in", Some(EchoOutput::Suppressed)).samples,
        &mut vad,
    );
    for event in case["events"].as_array().unwrap() {
        let onset = event["start"].as_u64().unwrap() as usize / FRAME_SAMPLES;
        let show = |p: &[f32]| {
            p[onset.saturating_sub(3)..onset + 15]
                .iter()
                .map(|v| format!("{:.0}", v * 9.0))
                .collect::<String>()
        };
        eprintln!(
            "{:<8} {} linear {} suppressed {}",
            event["kind"],
            event["text"],
            show(&clean),
            show(&raw)
        );
    }
}

#[test]
fn without_any_reference_the_microphone_passes_through_unchanged() {
    let mut canceller = EchoCanceller::new(RenderReference::new(), &EchoConfig::default());
    let input: Vec<f32> = (0..FRAME_SAMPLES * 8)
        .map(|i| (i as f32 * 0.01).sin() * 0.3)
        .collect();
    let mut output = Vec::new();
    for (k, frame) in input.chunks_exact(FRAME_SAMPLES).enumerate() {
        output.extend(canceller.process_at(frame, (k * FRAME_SAMPLES) as i64));
    }
    assert_eq!(output.len(), input.len());
    assert_eq!(output, input);
    assert_eq!(
        canceller.cancelled_chunks(),
        0,
        "AEC3 rests while nothing plays"
    );
}
