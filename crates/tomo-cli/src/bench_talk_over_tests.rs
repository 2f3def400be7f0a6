use super::*;

const RATE: usize = 16_000;

/// A voice-like answer: a vowel (a few harmonics) in 400 ms syllables with 50 ms dips between them
/// and 150 ms of silence between its 1.2 s sentences, `ms` long.
fn answer(ms: usize) -> Vec<f32> {
    (0..ms * RATE / 1000)
        .map(|i| {
            if i % 19_200 >= 16_800 {
                return 0.0;
            }
            let t = i as f32 / RATE as f32;
            let syllable = (i % 7_200) < 6_400;
            let voice = (t * 180.0 * std::f32::consts::TAU).sin() * 0.08
                + (t * 360.0 * std::f32::consts::TAU).sin() * 0.05
                + (t * 540.0 * std::f32::consts::TAU).sin() * 0.03;
            if syllable { voice } else { voice * 0.2 }
        })
        .collect()
}

/// The interruption: 200 ms of silence, then 1.2 s of noise bursts (words), deterministic.
fn interruption() -> Vec<f32> {
    let mut state = 12_345u32;
    let mut out = vec![0.0; RATE / 5];
    for i in 0..RATE * 6 / 5 {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let noise = (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
        let word = (i % 4_800) < 4_000;
        out.push(if word { noise * 0.3 } else { noise * 0.01 });
    }
    out
}

/// `said` through a device path (a short smoothing filter, 0.9 gain) added at `at`.
fn mix(recording: &mut [f32], said: &[f32], at: usize) {
    let path = [0.15, 0.6, 0.15];
    for n in 0..said.len() + path.len() {
        let value: f32 = path
            .iter()
            .enumerate()
            .filter_map(|(k, h)| n.checked_sub(k).and_then(|i| said.get(i)).map(|s| s * h))
            .sum();
        if let Some(sample) = recording.get_mut(at + n) {
            *sample += value;
        }
    }
}

/// An answer that stops `stop_ms` after the interruption's first sound (handed over at 1.5 s, in the
/// recording 80 ms later), the recording running on 2 s after.
fn take(stop_ms: i64) -> (Vec<f32>, Vec<f32>) {
    let said = interruption();
    let handed = RATE * 3 / 2;
    let heard_at = handed + RATE * 8 / 100;
    let onset = heard_at + RATE / 5;
    let stop = (onset as i64 + stop_ms * RATE as i64 / 1000) as usize;
    let mut recording = answer(stop * 1000 / RATE);
    recording.resize(onset + RATE * 4, 0.0);
    mix(&mut recording, &said, heard_at);
    (recording, said)
}

#[test]
fn the_answer_falling_silent_is_timed_from_the_interruptions_first_sound() {
    for stop_ms in [120, 250, 480] {
        let (recording, said) = take(stop_ms);
        let silenced = silenced(&recording, &said, RATE * 3 / 2).expect("measured");
        assert!(
            (silenced.after_onset_ms - stop_ms).abs() <= 20,
            "stopped {stop_ms} ms after the onset, measured {silenced:?}"
        );
        assert!(silenced.depth_db > 30.0, "{silenced:?}");
    }
}

#[test]
fn the_interruptions_level_is_its_first_300_ms_against_the_sounding_answer_before_it() {
    // Handed over at 1.5 s, heard 80 ms later; its words begin 100 ms into it, on a block boundary.
    let handed = RATE * 3 / 2;
    let heard_at = handed + RATE * 8 / 100;
    let onset = heard_at + RATE / 10;
    assert_eq!(onset % BLOCK, 0);
    // The words: noise at 0.05 for 150 ms, at 0.1 for 150 ms, then at 0.4 (12 dB louder than anything
    // in the first 300 ms).
    let mut state = 777u32;
    let mut said = vec![0.0f32; RATE / 10];
    for i in 0..RATE {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let noise = (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
        let gain = match i * 1000 / RATE {
            0..150 => 0.05,
            150..300 => 0.1,
            _ => 0.4,
        };
        said.push(noise * gain);
    }
    // The answer: a 200 Hz sine at 0.1 (power 0.005 in every 10 ms block), silent for 300 ms of the
    // second before the onset (silence is not the answer's level), stopping 250 ms after the onset.
    let mut recording: Vec<f32> = (0..onset + RATE / 4)
        .map(|i| (i as f32 / RATE as f32 * 200.0 * std::f32::consts::TAU).sin() * 0.1)
        .collect();
    recording[onset - RATE * 7 / 10..onset - RATE * 4 / 10].fill(0.0);
    recording.resize(onset + RATE * 3, 0.0);
    mix(&mut recording, &said, heard_at);
    // What the words' first 300 ms hold through the device path, straight from the samples.
    let mut words = vec![0.0; onset + RATE];
    mix(&mut words, &said, heard_at);
    let words_power = words[onset..onset + RATE * 3 / 10]
        .iter()
        .map(|s| f64::from(*s).powi(2))
        .sum::<f64>()
        / (RATE * 3 / 10) as f64;
    let expected = 10.0 * (words_power / 0.005).log10();

    let measured = silenced(&recording, &said, handed).expect("measured");
    let level = measured.words_over_answer_db.expect("the words sound");
    assert!(
        (f64::from(level) - expected).abs() < 0.2,
        "expected {expected:.2} dB, measured {measured:?}"
    );
    // Softer words by 6 dB measure 6 dB lower.
    let half: Vec<f32> = said.iter().map(|s| s * 0.5).collect();
    let negative: Vec<f32> = half.iter().map(|s| -s).collect();
    let mut softer = recording.clone();
    mix(&mut softer, &negative, heard_at);
    let softer = silenced(&softer, &half, handed).expect("measured");
    let drop = level - softer.words_over_answer_db.expect("the words sound");
    assert!((drop - 6.02).abs() < 0.2, "{measured:?} {softer:?}");
}

#[test]
fn an_answer_that_plays_on_is_not_taken_for_silenced_by_its_pauses() {
    // The answer goes on 2.7 s past the onset, through two 150 ms pauses between its sentences.
    let (recording, said) = take(2_700);
    let silenced = silenced(&recording, &said, RATE * 3 / 2).expect("measured");
    assert!(
        (silenced.after_onset_ms - 2_700).abs() <= 20,
        "{silenced:?}"
    );
}

#[test]
fn an_answer_already_in_its_last_pause_is_silent_before_the_onset() {
    let (recording, said) = take(-100);
    let silenced = silenced(&recording, &said, RATE * 3 / 2).expect("measured");
    assert!((silenced.after_onset_ms + 100).abs() <= 20, "{silenced:?}");
}

#[test]
fn a_recording_too_short_to_hold_the_interruption_measures_nothing() {
    let (recording, said) = take(250);
    assert_eq!(silenced(&recording[..RATE], &said, RATE * 3 / 2), None);
}

#[test]
fn nothing_to_measure_without_the_answer_before_the_interruption() {
    let said = interruption();
    let mut recording = vec![0.0; RATE * 5];
    mix(&mut recording, &said, RATE * 3 / 2);
    assert_eq!(silenced(&recording, &said, RATE * 3 / 2), None);
}

#[test]
fn the_solver_finds_the_filter() {
    let a = vec![vec![4.0, 1.0], vec![1.0, 3.0]];
    let x = solve(a, vec![1.0, 2.0]);
    assert!((x[0] - 1.0 / 11.0).abs() < 1e-12 && (x[1] - 7.0 / 11.0).abs() < 1e-12);
    // A zero first pivot: the rows must be swapped.
    let x = solve(vec![vec![0.0, 2.0], vec![3.0, 1.0]], vec![4.0, 5.0]);
    assert!(
        (x[0] - 1.0).abs() < 1e-12 && (x[1] - 2.0).abs() < 1e-12,
        "{x:?}"
    );
}

fn sounding(turn_id: TurnId) -> Event {
    Event::AudioStarted {
        turn_id,
        sentence_index: 0,
        duration_ms: 900,
        frame_ms: 20,
        envelope: Vec::new(),
        actions: Vec::new(),
    }
}

#[test]
fn words_that_stop_the_answer_after_it_was_let_go_on_count_as_stopping_it() {
    let mut watch = OverAnswer::new(4);
    // Its own later sentences and a hold of another turn change nothing.
    assert_eq!(watch.see(&sounding(4)), Watch::Going);
    assert_eq!(watch.see(&Event::AnswerHeld { turn_id: 3 }), Watch::Going);
    assert_eq!(watch.outcome(), Outcome::NeverHeld);
    watch.see(&Event::AnswerHeld { turn_id: 4 });
    assert_eq!(watch.outcome(), Outcome::WentOn);
    watch.see(&Event::UserTranscript {
        text: "Wait,".into(),
    });
    watch.see(&Event::TurnAborted {
        turn_id: 4,
        partial_text: String::new(),
    });
    watch.see(&Event::UserTranscript {
        text: "stop for a second.".into(),
    });
    assert_eq!(watch.outcome(), Outcome::Stopped);
    assert_eq!(watch.heard.join(" "), "Wait, stop for a second.");
    // The aborted answer's drain does not end the watch; the reply to the words is cut.
    assert_eq!(
        watch.see(&Event::PlaybackDrained { turn_id: 4 }),
        Watch::Going
    );
    assert_eq!(watch.see(&sounding(5)), Watch::CutReply(5));
}

#[test]
fn an_answer_that_plays_to_its_end_ends_the_watch() {
    let mut watch = OverAnswer::new(2);
    watch.see(&Event::AnswerHeld { turn_id: 2 });
    watch.forget_holds();
    assert_eq!(
        watch.see(&Event::PlaybackDrained { turn_id: 2 }),
        Watch::Over
    );
    assert_eq!(watch.outcome(), Outcome::NeverHeld);
}
