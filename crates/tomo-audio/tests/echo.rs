//! Echo cancellation with the real AEC3 (sonora) and the real Silero VAD on the echo fixtures: 20 answers
//! in the Piper voice heard back through a loopback and two simulated rooms, and the user talking (or
//! coughing, typing, saying "mm-hm") over some of them. Times are in audio samples, never wall clock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::echo::{Replay, cleaned_mic, fixture, json, probabilities};
use tomo_audio::{
    BargeInConfig, BargeInGate, EchoCanceller, EchoConfig, FRAME_SAMPLES, RenderReference,
    Segmenter, SegmenterConfig, SegmenterEvent, SileroVad,
};

/// The canceller's own delay (one 10 ms chunk), to turn output positions back into input time.
const AEC_DELAY: usize = tomo_audio::echo::canceller::CHUNK;

fn vad() -> Option<SileroVad> {
    let (model, runtime) = common::silero_paths()?;
    Some(SileroVad::new(&model, &runtime).unwrap())
}

/// Barge-ins the gate fires (sample where it decided) and speech starts the segmenter reports.
fn detections(probabilities: &[f32]) -> (Vec<usize>, usize) {
    let mut gate = BargeInGate::new(&BargeInConfig::default());
    let fired = probabilities
        .iter()
        .enumerate()
        .filter_map(|(i, &p)| gate.push(p).map(|_| (i + 1) * FRAME_SAMPLES))
        .collect();
    let mut segmenter = Segmenter::new(
        Replay(probabilities.to_vec(), 0),
        &SegmenterConfig::default(),
    );
    let frame = vec![0.0; FRAME_SAMPLES];
    let mut starts = 0;
    for _ in probabilities {
        starts += segmenter
            .push(&frame)
            .unwrap()
            .iter()
            .filter(|e| matches!(e, SegmenterEvent::SpeechStarted { .. }))
            .count();
    }
    (fired, starts)
}

#[test]
fn twenty_answers_without_user_speech_never_interrupt_once_the_echo_is_cancelled() {
    let Some(mut vad) = vad() else {
        return;
    };
    let answers = json(&fixture("echo-answers").join("answers.json"));
    assert!(answers["answers"].as_array().unwrap().len() >= 20);
    for case in ["echo-loopback", "echo-room-near", "echo-room-far"] {
        let raw = probabilities(&cleaned_mic(case, false), &mut vad);
        let (raw_fired, raw_starts) = detections(&raw);
        let clean = probabilities(&cleaned_mic(case, true), &mut vad);
        let (fired, starts) = detections(&clean);
        eprintln!(
            "{case}: without AEC {} barge-ins and {raw_starts} speech starts; with AEC {} and {starts}",
            raw_fired.len(),
            fired.len()
        );
        assert!(
            raw_fired.len() >= 10,
            "{case}: the echo alone should look like speech without AEC"
        );
        assert!(fired.is_empty(), "{case}: false barge-ins at samples {fired:?}");
        assert_eq!(starts, 0, "{case}: the segmenter heard speech in the echo");
    }
}

#[test]
fn words_over_an_answer_interrupt_within_300_ms_and_noises_do_not() {
    let Some(mut vad) = vad() else {
        return;
    };
    let case = json(&fixture("echo-barge-in").join("case.json"));
    let events = case["events"].as_array().unwrap();
    let clean = probabilities(&cleaned_mic("echo-barge-in", true), &mut vad);
    let (fired, _) = detections(&clean);
    let fired: Vec<usize> = fired.into_iter().map(|at| at - AEC_DELAY).collect();
    let mut unexplained = fired.clone();
    for event in events {
        let kind = event["kind"].as_str().unwrap();
        let start = event["start"].as_u64().unwrap() as usize;
        let end = event["end"].as_u64().unwrap() as usize;
        let inside: Vec<usize> = fired
            .iter()
            .copied()
            .filter(|&at| at >= start && at <= end + 8_000)
            .collect();
        unexplained.retain(|at| !inside.contains(at));
        if kind == "words" {
            let onset = event["onset"].as_u64().unwrap() as usize;
            let first = *inside
                .first()
                .unwrap_or_else(|| panic!("{:?} was not detected", event["text"]));
            let latency_ms = (first.saturating_sub(onset)) as f64 / 16.0;
            eprintln!("{:<45} detected {latency_ms:5.0} ms after its onset", event["text"].to_string());
            assert!(latency_ms <= 300.0, "{}: {latency_ms} ms", event["text"]);
        } else {
            assert!(inside.is_empty(), "a {kind} interrupted at {inside:?}");
        }
    }
    assert!(unexplained.is_empty(), "barge-ins in the echo alone: {unexplained:?}");
}

#[test]
fn without_any_reference_the_microphone_passes_through_unchanged() {
    let mut canceller = EchoCanceller::new(RenderReference::new(), &EchoConfig::default());
    let input: Vec<f32> = (0..FRAME_SAMPLES * 8).map(|i| (i as f32 * 0.01).sin() * 0.3).collect();
    let mut output = Vec::new();
    for (k, frame) in input.chunks_exact(FRAME_SAMPLES).enumerate() {
        output.extend(canceller.process_at(frame, (k * FRAME_SAMPLES) as i64));
    }
    assert_eq!(output.len(), input.len());
    assert!(output[..AEC_DELAY].iter().all(|&s| s == 0.0));
    assert_eq!(&output[AEC_DELAY..], &input[..input.len() - AEC_DELAY]);
    assert_eq!(canceller.cancelled_chunks(), 0, "AEC3 rests while nothing plays");
}
