//! How soon words said over an answer hold it, over many placements: each echo fixture's six phrases
//! (the user alone: its microphone minus its room's echo) are laid over every one of the 20 answers in
//! that room, six times with the phrases rotated (120 per room), and the front end's detection runs on
//! the result as the listener does it (real AEC3, the live segmenter with its Silero VAD, the barge-in
//! gate, reset when an answer starts). Prints, per room, how many were held within 300 ms of their onset
//! and the distribution; the same for the words said with headphones on (the answer playing and the
//! canceller running, no echo at the microphone, a noise floor) and for the words alone (no answer played, no canceller,
//! the gate's rules without their echo conditions: how soon Silero lets the gate hold at best) and over
//! the loopback's echo (the device benchmark's scene); then how often the rooms' echo alone was held.
//! Audio time throughout.
//!
//! `cargo run --release -p tomo-runtime --example talk_over_timing`
//! The model store is `$TOMO_MODELS_DIR` or `~/.local/share/tomo/models`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tomo_audio::echo::{CleanedRecording, cancel_recorded};
use tomo_audio::{
    BargeInConfig, BargeInGate, EchoConfig, EchoPath, FRAME_SAMPLES, FrameEcho, Segmenter,
    read_wav_mono,
};
use tomo_models::ModelStore;

/// When a phrase begins after the start of the answer it is laid over: 0.4 s, then 0.1 s later for each
/// next answer, five steps, so the phrase meets different parts of the character's sentences.
const FIRST_AT: usize = 6_400;
const STEP: usize = 1_600;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tomo-audio/tests/fixtures")
        .join(case)
}

fn json(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    Ok(serde_json::from_str(&text)?)
}

fn field(value: &serde_json::Value, name: &str) -> Result<usize> {
    value[name]
        .as_u64()
        .map(|n| n as usize)
        .with_context(|| format!("no `{name}` in {value}"))
}

/// Where each answer plays (samples at 16 kHz).
fn answers() -> Result<Vec<(usize, usize)>> {
    let answers = json(&fixture("echo-answers").join("answers.json"))?;
    answers["answers"]
        .as_array()
        .context("no answers")?
        .iter()
        .map(|a| Ok((field(a, "start")?, field(a, "end")?)))
        .collect()
}

/// Where the user's words are said.
#[derive(Clone, Copy, PartialEq)]
enum Scene {
    /// Over the answer from the speakers: the room's echo under them, cancelled.
    OverAnswer,
    /// Over the answer on the loopback (`echo-loopback`: what is played reaches the microphone as it
    /// is, as through a PulseAudio null sink's monitor), cancelled: the device benchmark's scene
    /// (`tomo bench voice --device --talk-over`), where the user's words are as loud as the echo.
    OverLoopback,
    /// With headphones on: the answer plays and the canceller runs, but no echo reaches the microphone,
    /// only its own noise floor (`echo-headset-quiet`).
    Headphones,
    /// With no answer at all: no canceller, and the gate's rules without their echo conditions (every
    /// frame kept whole, no echo at the microphone). What Silero allows at best.
    WordsAlone,
}

/// Samples where the gate held an answer, running the listener's detection over `mic`.
fn holds(
    store: &ModelStore,
    mic: &[f32],
    answers: &[(usize, usize)],
    scene: Scene,
) -> Result<Vec<usize>> {
    let cleaned = match scene {
        Scene::OverAnswer | Scene::OverLoopback | Scene::Headphones => {
            let played = read_wav_mono(&fixture("echo-answers").join("ref.wav"))?;
            cancel_recorded(mic, &played, &EchoConfig::default())
        }
        Scene::WordsAlone => CleanedRecording {
            samples: mic.to_vec(),
            voice: mic.to_vec(),
            echo: vec![
                FrameEcho {
                    kept_db: 0.0,
                    path: EchoPath::Absent,
                };
                mic.len() / FRAME_SAMPLES
            ],
        },
    };
    let mut segmenter = Segmenter::new(
        tomo_runtime::voice::vad(store)?,
        &tomo_runtime::voice::segmenter_config(),
    );
    let config = BargeInConfig::default();
    let mut gate = BargeInGate::new(&config);
    let mut was_speaking = false;
    let mut held = Vec::new();
    for (k, echo) in cleaned.echo.iter().enumerate() {
        let frame = k * FRAME_SAMPLES..(k + 1) * FRAME_SAMPLES;
        if frame.end > cleaned.samples.len() {
            break;
        }
        segmenter.push_heard(
            &cleaned.samples[frame.clone()],
            &cleaned.voice[frame.clone()],
        )?;
        let speaking = answers
            .iter()
            .any(|(start, end)| (*start..*end).contains(&frame.start));
        if speaking && !was_speaking {
            gate = BargeInGate::new(&config);
        }
        was_speaking = speaking;
        if speaking && gate.push(segmenter.last_probability(), *echo).is_some() {
            held.push(frame.end);
        }
    }
    Ok(held)
}

/// When a phrase's answer was held.
#[derive(Clone, Copy, PartialEq)]
enum Held {
    /// This many milliseconds after the phrase's onset.
    After(f64),
    /// Before the onset: the answer began while the user was still saying the phrase laid over the
    /// answer before it (a short answer), and the gate held on that. Counted so even when the gate
    /// holds again later: the first hold's words go on into the phrase (the gate fires once per run
    /// of speech), so the answer was already held, or stopped by them, when the phrase began.
    BeforeOnset,
    Never,
}

/// When each phrase's answer was held.
fn room(
    store: &ModelStore,
    case: &str,
    answers: &[(usize, usize)],
    scene: Scene,
) -> Result<Vec<Held>> {
    let description = json(&fixture(case).join("case.json"))?;
    let room = description["room"].as_str().context("no room")?.to_owned();
    let mic = read_wav_mono(&fixture(case).join("mic.wav"))?.samples;
    let echo = read_wav_mono(&fixture(&room).join("mic.wav"))?.samples;
    let mut phrases = Vec::new();
    for event in description["events"].as_array().context("no events")? {
        if event["kind"] != "words" {
            continue;
        }
        let (start, end) = (field(event, "start")?, field(event, "end")?);
        let user: Vec<f32> = (start..end.min(mic.len()).min(echo.len()))
            .map(|i| mic[i] - echo[i])
            .collect();
        phrases.push((user, field(event, "onset")? - start));
    }
    // A headset microphone's own floor with nobody talking (pink noise, -60 dBFS).
    let loopback = read_wav_mono(&fixture("echo-loopback").join("mic.wav"))?.samples;
    let headset_floor = read_wav_mono(&fixture("echo-headset-quiet").join("mic.wav"))?.samples;
    let mut delays = Vec::new();
    for rotation in 0..phrases.len() {
        let mut mic = match scene {
            Scene::OverAnswer => echo.clone(),
            Scene::OverLoopback => loopback.clone(),
            Scene::Headphones => headset_floor.clone(),
            Scene::WordsAlone => vec![0.0; echo.len()],
        };
        let mut onsets = Vec::new();
        for (i, (answer_start, answer_end)) in answers.iter().enumerate() {
            let (user, onset) = &phrases[(i + rotation) % phrases.len()];
            let at = answer_start + FIRST_AT + STEP * (i % 5);
            for (sample, said) in mic.iter_mut().skip(at).zip(user) {
                *sample += said;
            }
            onsets.push((*answer_start, at + onset, *answer_end));
        }
        let held = holds(store, &mic, answers, scene)?;
        for (answer_start, onset, answer_end) in onsets {
            // Only a hold of the same answer counts: the gate starts afresh with the next one.
            let first = held.iter().find(|&&h| h >= onset && h < answer_end);
            delays.push(if held.iter().any(|h| (answer_start..onset).contains(h)) {
                Held::BeforeOnset
            } else {
                first.map_or(Held::Never, |h| Held::After((h - onset) as f64 / 16.0))
            });
        }
    }
    Ok(delays)
}

fn main() -> Result<()> {
    let store = ModelStore::from_env()?;
    let answers = answers()?;
    for (case, scene, label) in [
        ("echo-barge-in", Scene::OverAnswer, "echo-barge-in"),
        ("echo-barge-in-far", Scene::OverAnswer, "echo-barge-in-far"),
        (
            "echo-barge-in",
            Scene::OverLoopback,
            "near room's words over the loopback",
        ),
        (
            "echo-barge-in-far",
            Scene::OverLoopback,
            "far room's words over the loopback",
        ),
        (
            "echo-barge-in",
            Scene::Headphones,
            "near room's words, headphones",
        ),
        (
            "echo-barge-in-far",
            Scene::Headphones,
            "far room's words, headphones",
        ),
        (
            "echo-barge-in",
            Scene::WordsAlone,
            "near room's words alone",
        ),
        (
            "echo-barge-in-far",
            Scene::WordsAlone,
            "far room's words alone",
        ),
    ] {
        let delays = room(&store, case, &answers, scene)?;
        let mut held: Vec<f64> = delays
            .iter()
            .filter_map(|d| match d {
                Held::After(ms) => Some(*ms),
                _ => None,
            })
            .collect();
        let count = |which: Held| delays.iter().filter(|&&d| d == which).count();
        held.sort_by(f64::total_cmp);
        if held.is_empty() {
            println!("{label}: none of {} phrases was held", delays.len());
            continue;
        }
        let at = |q: f64| held[((held.len() - 1) as f64 * q).round() as usize];
        println!(
            "{label}: {} phrases, {} held within 300 ms of their onset, {} before it, {} never; p50 {:.0} ms, p90 {:.0} ms, max {:.0} ms",
            delays.len(),
            held.iter().filter(|&&d| d <= 300.0).count(),
            count(Held::BeforeOnset),
            count(Held::Never),
            at(0.5),
            at(0.9),
            at(1.0),
        );
    }
    for case in ["echo-loopback", "echo-room-near", "echo-room-far"] {
        let mic = read_wav_mono(&fixture(case).join("mic.wav"))?.samples;
        let held = holds(&store, &mic, &answers, Scene::OverAnswer)?;
        println!(
            "{case}: the echo alone held {} of {} answers",
            held.len(),
            answers.len()
        );
    }
    Ok(())
}
