//! The segmenter with the real Silero VAD and the real Smart Turn on paused speech (Piper voice, pauses
//! spliced into sentences: tests/fixtures/turn-paused, made by scripts/make-turn-set.py --fixtures), against
//! the fixed 600 ms hangover. Audio time only. The full set and its figures: examples/turn_eval.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use tomo_audio::{
    FRAME_SAMPLES, Segmenter, SegmenterConfig, SegmenterEvent, SileroVad, TurnEnd, read_wav_16k,
};

struct Outcome {
    cut_early: bool,
    wait_ms: f64,
    ended_by: TurnEnd,
}

fn run(audio: &[f32], speech_end: usize, vad: &mut SileroVad, model: bool) -> Outcome {
    use tomo_audio::VoiceActivity;
    vad.reset();
    let mut padded = audio.to_vec();
    padded.extend(std::iter::repeat_n(0.0, 32_000));
    let mut segmenter = Segmenter::new(&mut *vad, &SegmenterConfig::default());
    if model {
        segmenter = segmenter.with_end_of_turn(Box::new(common::smart_turn().unwrap()));
    }
    let mut ends = Vec::new();
    for (i, frame) in padded.chunks_exact(FRAME_SAMPLES).enumerate() {
        for event in segmenter.push(frame).unwrap() {
            if let SegmenterEvent::Segment(segment) = event {
                ends.push(((i + 1) * FRAME_SAMPLES, segment.ended_by));
            }
        }
    }
    let &(last, ended_by) = ends.last().expect("the utterance ends");
    Outcome {
        cut_early: ends.iter().any(|&(at, _)| at < speech_end),
        wait_ms: (last as f64 - speech_end as f64) / 16.0,
        ended_by,
    }
}

#[test]
fn smart_turn_cuts_no_more_pauses_than_the_fixed_hangover_and_ends_finished_turns_sooner() {
    let Some((model, runtime)) = common::silero_paths() else {
        return;
    };
    if common::smart_turn().is_none() {
        return;
    }
    let mut vad = SileroVad::new(&model, &runtime).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/turn-paused");
    let set: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("set.json")).unwrap()).unwrap();
    let (mut fixed_cuts, mut model_cuts) = (0, 0);
    let (mut fixed_wait, mut model_wait) = (0.0, 0.0);
    let mut confident = 0;
    for recording in set["recordings"].as_array().unwrap() {
        let audio = read_wav_16k(&dir.join(recording["file"].as_str().unwrap())).unwrap();
        let speech_end = recording["speech_end"].as_u64().unwrap() as usize;
        let fixed = run(&audio, speech_end, &mut vad, false);
        let smart = run(&audio, speech_end, &mut vad, true);
        assert_eq!(fixed.ended_by, TurnEnd::Hangover);
        eprintln!(
            "{}: fixed waits {:.0} ms (cut early: {}), Smart Turn {:.0} ms (cut early: {}, {:?})",
            recording["file"],
            fixed.wait_ms,
            fixed.cut_early,
            smart.wait_ms,
            smart.cut_early,
            smart.ended_by
        );
        fixed_cuts += usize::from(fixed.cut_early);
        model_cuts += usize::from(smart.cut_early);
        if recording["kind"] == "complete" {
            fixed_wait += fixed.wait_ms;
            model_wait += smart.wait_ms;
            confident += usize::from(matches!(smart.ended_by, TurnEnd::ModelDone { .. }));
        }
    }
    assert!(
        model_cuts <= fixed_cuts,
        "{model_cuts} early cuts, the hangover {fixed_cuts}"
    );
    assert!(
        confident >= 1,
        "the model was never sure a finished sentence was finished"
    );
    assert!(
        model_wait < fixed_wait,
        "finished utterances: {model_wait:.0} ms in all, the hangover {fixed_wait:.0} ms"
    );
}
