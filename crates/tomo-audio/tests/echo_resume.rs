//! An answer's start after a rest, as the live capture meets it. The playback side hands the reference
//! over a few milliseconds after the device pulls it, and while nothing has played for a while the
//! canceller lets capture blocks through idle without waiting for a reference: the blocks whose
//! reference is an answer's first tens of milliseconds can go through before it lands (on the device
//! loop up to 44 ms of it, in every answer). Here the echo fixtures' answers, with rests longer than
//! `EchoConfig::idle_after` between them and the loopback's echo (25 ms late), are fed block by block
//! with the reference of each answer's first [`SKIPPED`] of sound landing only after the capture has
//! passed it. Audio time throughout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::echo::{energy, fixture, fixture_mic, json};
use tomo_audio::echo::CHUNK;
use tomo_audio::{EchoCanceller, EchoConfig, RenderReference, read_wav_mono};

/// 16 kHz samples per 20 ms, which is a whole number of samples at 22.05 kHz too (441): answers are
/// cut at multiples of it, so the reference and the microphone stay aligned to the sample.
const GRID: usize = 320;
const GRID_22K: usize = 441;
/// Silence laid between the answers (2 s: longer than the canceller's `idle_after`).
const REST: usize = 100 * GRID;
/// The reference of each answer's first 32 ms of sound lands after the capture blocks that meet it
/// went through: less than the echo's lateness plus the canceller's lead (45 ms), so those blocks hold
/// no echo yet, as on the device (60 ms).
const SKIPPED: usize = 512;
/// The playback side runs this far ahead of the capture otherwise (16 kHz samples).
const PLAYBACK_AHEAD: usize = 1_600;
/// The loopback's echo comes this late (16 kHz samples).
const ECHO_LATE: usize = 400;
/// A sample of the reference above this is sound (the canceller's own threshold).
const SOUNDING: f32 = 0.001;
/// Samples per reference block, as the playback tap hands them over.
const TAP_BLOCK: usize = 256;

/// One answer laid after a rest: its span on the rested timeline (16 kHz), and where its sound begins.
struct Laid {
    from: usize,
    to: usize,
    sound: usize,
}

#[test]
fn an_answers_first_echo_is_cancelled_though_its_reference_landed_after_the_capture_passed_it() {
    let mic = fixture_mic("echo-loopback");
    let played = read_wav_mono(&fixture("echo-answers").join("ref.wav")).unwrap();
    assert_eq!(played.sample_rate as usize * GRID, 16_000 * GRID_22K);
    let answers = json(&fixture("echo-answers").join("answers.json"));
    let (mut rested_mic, mut rested_ref, mut laid) = (Vec::new(), Vec::new(), Vec::new());
    for answer in answers["answers"].as_array().unwrap() {
        let (start, end) = (
            answer["start"].as_u64().unwrap() as usize,
            answer["end"].as_u64().unwrap() as usize,
        );
        // From 0.1 s before the answer to 0.5 s after it (the echo's tail), on the grid.
        let from = (start - 1_600) / GRID;
        let to = ((end + 8_000).div_ceil(GRID)).min(mic.len() / GRID);
        rested_mic.extend(std::iter::repeat_n(0.0, REST));
        rested_ref.extend(std::iter::repeat_n(0.0, REST / GRID * GRID_22K));
        let at = rested_mic.len();
        rested_mic.extend_from_slice(&mic[from * GRID..to * GRID]);
        let clip = &played.samples[from * GRID_22K..to * GRID_22K];
        rested_ref.extend_from_slice(clip);
        let first = clip.iter().position(|s| s.abs() > SOUNDING).unwrap();
        laid.push(Laid {
            from: at,
            to: at + (to - from) * GRID,
            sound: at + first * GRID / GRID_22K,
        });
    }

    let config = EchoConfig::default();
    assert!(REST > (config.idle_after.as_secs_f64() * 16_000.0) as usize);
    let lead = (config.reference_lead.as_secs_f64() * 16_000.0).round() as usize;
    let reference = RenderReference::new();
    let mut canceller = EchoCanceller::new(reference.clone(), &config);
    let mut cleaned = Vec::with_capacity(rested_mic.len());
    let mut next_block = vec![0; laid.len()];
    for (k, block) in rested_mic.chunks_exact(CHUNK).enumerate() {
        let index = k * CHUNK;
        for (answer, next) in laid.iter().zip(&mut next_block) {
            // Nothing of the answer lands before the capture is past its first SKIPPED of sound.
            if index + lead < answer.sound + SKIPPED {
                continue;
            }
            loop {
                let at = answer.from + *next * TAP_BLOCK * GRID / GRID_22K;
                if at >= answer.to || at > index + PLAYBACK_AHEAD {
                    break;
                }
                let from = answer.from / GRID * GRID_22K + *next * TAP_BLOCK;
                let to = (from + TAP_BLOCK).min(answer.to / GRID * GRID_22K);
                reference.push_at(&rested_ref[from..to], played.sample_rate, at as i64);
                *next += 1;
            }
        }
        cleaned.extend(canceller.process_at(block, index as i64));
    }
    assert_eq!(cleaned.len(), rested_mic.len() / CHUNK * CHUNK);
    // The race happened: the blocks that meet each answer's first sound went through idle, untouched.
    for answer in &laid {
        let met = answer.sound - lead..answer.sound - lead + SKIPPED / 2;
        assert_eq!(
            cleaned[met.clone()],
            rested_mic[met],
            "not passed through idle"
        );
    }

    // The first answer is the warm-up's (silence out); from the second on, the echo's first 100 ms.
    let kept: Vec<f64> = laid[1..]
        .iter()
        .map(|answer| {
            let echo = answer.sound + ECHO_LATE..answer.sound + ECHO_LATE + 1_600;
            10.0 * (energy(&cleaned[echo.clone()]) / energy(&rested_mic[echo])).log10()
        })
        .collect();
    eprintln!("kept of each answer's first 100 ms of echo (dB): {kept:.0?}");
    let leaked: Vec<_> = kept.iter().filter(|&&db| db > -20.0).collect();
    assert!(
        leaked.is_empty(),
        "answers whose first echo came through: {leaked:.1?}"
    );
}
