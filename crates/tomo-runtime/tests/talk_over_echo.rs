//! Talking over the character, from the microphone to the decision, on the echo fixtures of tomo-audio
//! (20 answers in the Piper voice heard back in a simulated room, the user saying words, coughing,
//! typing and saying "mm-hm" over some of them; made by its `make_echo_fixtures.py`). Real parts: the
//! echo canceller (AEC3), Silero VAD, the live segmenter with Smart Turn, the barge-in gate, whisper
//! base and the session's verdict. What the microphone front end does per frame is mirrored here on
//! the recording (sample positions, no wall clock): an utterance that begins under an answer is held
//! once the gate hears enough speech, and its words decide whether the answer stops or goes on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use tomo_audio::echo::cancel_recorded;
use tomo_audio::{
    BargeInConfig, BargeInGate, EchoConfig, FRAME_SAMPLES, FrameEcho, Segmenter, SegmenterEvent,
    read_wav_mono,
};
use tomo_core::session::verdict::{Judging, Verdict, verdict};
use tomo_models::ModelStore;
use tomo_speech::asr::{SpeechToText, WhisperAsr, word_error_rate};
use tomo_testkit::prereq::skip_or_fail;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tomo-audio/tests/fixtures")
        .join(case)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// From the hold to the speakers' silence: the device's buffer (100 ms).
const DEVICE_QUIET: usize = 1_600;
/// From the hold to when the listener counts speech as the user's alone (its `HELD_QUIET`, 250 ms).
const LISTENER_QUIET: usize = 4_000;

/// An utterance heard, as the listener keeps it.
#[derive(Clone, Copy)]
struct Utterance {
    /// It began under an answer.
    gated: bool,
    /// Sample where the gate held the answer.
    held_at: Option<usize>,
    /// Speech came once the answer was surely quiet.
    heard_alone: bool,
}

/// An utterance over an answer that the gate held.
struct Held {
    /// Sample where the gate held the answer.
    at: usize,
    transcript: String,
    verdict: Verdict,
}

/// What the character was saying at `at` and just before (its echo can be any of it).
fn own_speech(answers: &[(usize, usize, String)], at: usize) -> Vec<String> {
    answers
        .iter()
        .filter(|(start, _, _)| *start <= at)
        .rev()
        .take(2)
        .map(|(_, _, text)| text.clone())
        .collect()
}

/// Runs the microphone of `case` through the front end's logic and judges every held utterance.
fn held_utterances(case: &str) -> Option<Vec<Held>> {
    let store = ModelStore::from_env().unwrap();
    // The English characters' recognizer (`base-4bit` in their profiles).
    let whisper = tomo_testkit::prereq::models_dir().join("whisper/ggml-base-iq4_nl.bin");
    if !whisper.is_file() {
        skip_or_fail(&format!(
            "{} is missing (tomo models install)",
            whisper.display()
        ));
        return None;
    }
    let vad = match tomo_runtime::voice::vad(&store) {
        Ok(vad) => vad,
        Err(error) => {
            skip_or_fail(&format!("no VAD: {error:#}"));
            return None;
        }
    };
    let asr = WhisperAsr::new(&whisper, Some("en".into()), 2).unwrap();
    let mut segmenter = Segmenter::new(vad, &tomo_runtime::voice::segmenter_config());
    if let Some(model) = tomo_runtime::voice::end_of_turn(&store) {
        segmenter = segmenter.with_end_of_turn(model);
    }
    let answers: Vec<(usize, usize, String)> = json(&fixture("echo-answers").join("answers.json"))
        ["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["start"].as_u64().unwrap() as usize,
                a["end"].as_u64().unwrap() as usize,
                a["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mic = read_wav_mono(&fixture(case).join("mic.wav")).unwrap();
    let played = read_wav_mono(&fixture("echo-answers").join("ref.wav")).unwrap();
    let cleaned = cancel_recorded(&mic.samples, &played, &EchoConfig::default());
    // The microphone is the room's echo plus the user: what the user alone sounds like, for the time
    // the character is quiet because its answer is held.
    let room = json(&fixture(case).join("case.json"))["room"]
        .as_str()
        .unwrap_or(case)
        .to_owned();
    let echo = read_wav_mono(&fixture(&room).join("mic.wav")).unwrap();
    let user: Vec<f32> = mic
        .samples
        .iter()
        .zip(&echo.samples)
        .map(|(m, e)| m - e)
        .collect();

    let config = BargeInConfig::default();
    let mut gate = BargeInGate::new(&config);
    let mut utterance: Option<Utterance> = None;
    let mut was_speaking = false;
    let mut held = Vec::new();
    for k in 0..cleaned.samples.len() / FRAME_SAMPLES {
        let at = k * FRAME_SAMPLES;
        let frame = at..at + FRAME_SAMPLES;
        let speaking = answers.iter().any(|(s, e, _)| (*s..*e).contains(&at));
        // Once the answer is held, the speakers go quiet a device buffer (≈ 100 ms) later, and the
        // microphone hears the user alone until the utterance ends (the echo canceller passes it
        // through untouched while nothing plays).
        let quiet = utterance.is_some_and(|u| u.held_at.is_some_and(|h| at >= h + DEVICE_QUIET));
        let (analysed, voice, echo) = if quiet {
            (&user[frame.clone()], &user[frame], FrameEcho::default())
        } else {
            (
                &cleaned.samples[frame.clone()],
                &cleaned.voice[frame],
                cleaned.echo[k],
            )
        };
        let events = segmenter.push_heard(analysed, voice).unwrap();
        // As the listener: speech heard once the answer is surely quiet is the user's alone.
        if let Some(u) = utterance.as_mut()
            && u.held_at.is_some_and(|h| at >= h + LISTENER_QUIET)
            && segmenter.last_probability() >= config.threshold
        {
            u.heard_alone = true;
        }
        if speaking && !was_speaking {
            gate = BargeInGate::new(&config);
        }
        was_speaking = speaking;
        let gating = speaking || utterance.is_some_and(|u| u.gated && u.held_at.is_none());
        if gating
            && gate.push(segmenter.last_probability(), echo).is_some()
            && let Some(u) = utterance
                .as_mut()
                .filter(|u| u.gated && u.held_at.is_none())
        {
            u.held_at = Some(at + FRAME_SAMPLES);
        }
        for event in events {
            match event {
                SegmenterEvent::SpeechStarted { .. } => {
                    utterance = Some(Utterance {
                        gated: speaking,
                        held_at: None,
                        heard_alone: false,
                    })
                }
                SegmenterEvent::Segment(segment) => {
                    let Some(u) = utterance.take() else { continue };
                    let Some(at) = u.held_at else { continue };
                    let transcript = asr.transcribe(&segment.samples).unwrap().text;
                    let own_speech = own_speech(&answers, at);
                    let judging = Judging {
                        own_speech: &own_speech,
                        // What a profile asks for unless it says otherwise.
                        min_words: tomo_config::profile::AsrConfig::default().interrupt_min_words
                            as usize,
                        over_answer_only: !u.heard_alone,
                    };
                    let decided = verdict(&transcript, &judging);
                    eprintln!(
                        "{case}: held at {:.2} s: {transcript:?} (heard alone: {}) -> {decided:?}",
                        at as f64 / 16_000.0,
                        u.heard_alone
                    );
                    held.push(Held {
                        at,
                        transcript,
                        verdict: decided,
                    });
                }
                _ => {}
            }
        }
    }
    Some(held)
}

#[test]
fn words_over_an_answer_stop_it_and_noises_let_it_go_on() {
    judge_case("echo-barge-in", &["cough", "clicks", "mm-hm"]);
}

/// The far room: the echo 3 dB under what was played and the user's words (and hum) at -22 dBFS.
#[test]
fn in_the_far_room_words_stop_the_answer_and_noises_do_not() {
    judge_case("echo-barge-in-far", &["cough", "clicks", "mm-hm"]);
}

/// Headphones on: no echo at the microphone, the near room's user over a -60 dBFS floor; the suppressor
/// goes off within the first answer.
#[test]
fn with_headphones_words_stop_the_answer_from_the_first_answers() {
    judge_case("echo-headset", &["cough", "clicks", "mm-hm"]);
}

/// Twenty answers with nobody talking, heard back through the loopback and the two rooms (and not at
/// all, with headphones): whatever the gate holds (the canceller's residue) lets the answer go on.
#[test]
fn the_characters_own_voice_never_stops_its_answer() {
    for case in [
        "echo-loopback",
        "echo-room-near",
        "echo-room-far",
        "echo-headset-quiet",
    ] {
        let Some(held) = held_utterances(case) else {
            return;
        };
        eprintln!("{case}: {} holds in 20 answers", held.len());
        for held in &held {
            assert!(
                matches!(held.verdict, Verdict::GoOn(_)),
                "{case}: the echo at {:.2} s stopped the answer: {:?}",
                held.at as f64 / 16_000.0,
                held.transcript
            );
        }
    }
}

/// The user's words over the answers stop them (each held once; how long after its onset is printed)
/// and become turns with their first words (WER over all of them); the `noises` let the answers go on.
fn judge_case(name: &str, noises: &[&str]) {
    let Some(held) = held_utterances(name) else {
        return;
    };
    let case = json(&fixture(name).join("case.json"));
    let mut explained = vec![false; held.len()];
    let (mut said, mut heard) = (Vec::new(), Vec::new());
    for event in case["events"].as_array().unwrap() {
        let kind = event["kind"].as_str().unwrap();
        let start = event["start"].as_u64().unwrap() as usize;
        let end = event["end"].as_u64().unwrap() as usize;
        let inside: Vec<usize> = (0..held.len())
            .filter(|&i| (start..end + 8_000).contains(&held[i].at))
            .collect();
        for &i in &inside {
            explained[i] = true;
        }
        if kind == "words" {
            let text = event["text"].as_str().unwrap();
            let onset = event["onset"].as_u64().unwrap() as usize;
            assert_eq!(inside.len(), 1, "{text:?} held once: {inside:?}");
            let stopped = &held[inside[0]];
            eprintln!(
                "{text:?}: held {:.0} ms after its onset",
                stopped.at.saturating_sub(onset) as f64 / 16.0
            );
            assert_eq!(
                stopped.verdict,
                Verdict::Yield,
                "{text:?}: {:?}",
                stopped.transcript
            );
            said.push(text.to_owned());
            heard.push(stopped.transcript.clone());
        } else if noises.contains(&kind) {
            for &i in &inside {
                assert!(
                    matches!(held[i].verdict, Verdict::GoOn(_)),
                    "a {kind} stopped the answer: {:?}",
                    held[i].transcript
                );
            }
        }
    }
    // What the user said over the answers becomes the next turn, their first words included.
    let wer = word_error_rate(&said.join(" "), &heard.join(" "));
    eprintln!("WER of the words said over the answers: {wer:.3}");
    assert!(wer <= 0.15, "WER {wer:.2}: {said:?} heard as {heard:?}");
    // Held with nobody talking: the character's own voice, which must let it go on.
    for (i, held) in held.iter().enumerate().filter(|(i, _)| !explained[*i]) {
        assert!(
            matches!(held.verdict, Verdict::GoOn(_)),
            "held #{i} in the echo alone stopped the answer: {:?}",
            held.transcript
        );
    }
}
