//! `tomo bench voice --device --talk-over`: how soon the character falls silent when the user talks over
//! it, measured at the sound device. Each turn plays a question, waits for the answer to start sounding,
//! then plays one of six interruptions into the same output device (the loop's "room": the session hears
//! them mixed with its own voice, as on speakers). The ear's recording holds the answer and the
//! interruption mixed; the interruption is known, so it is found in the recording (cross-correlation),
//! fitted through the device path (a short least-squares filter: the two resamplings) and subtracted,
//! which leaves the answer alone: the time from the interruption's first sound to the start of the
//! answer's first silence of 400 ms after it is what the user hears. The next turn's answer (to the interruption) is cut
//! with an interrupt op as soon as it starts.

use std::time::Duration;

use anyhow::bail;
use tokio::sync::mpsc;
use tomo_audio::{Audio, read_wav_mono};
use tomo_protocol::{Event, EventEnvelope, Op, TurnId};
use tomo_speech::asr::word_error_rate;

use crate::bench::{
    VoiceBenchArgs, percentile, scripted_replies, speak_with_flite, spoken_questions,
};
use crate::bench_device::{BLOCK, DeviceLoop, SOUND_RMS, block_rms, play, settle};

/// What the user says over the answer: the echo fixtures' six interruptions.
const INTERRUPTIONS: [&str; 6] = [
    "Wait, stop for a second.",
    "Actually, I have another question.",
    "Hold on, that is not what I meant.",
    "Sorry, can you repeat that?",
    "No, tell me about the weather instead.",
    "Excuse me, what time is it?",
];

/// An answer long enough to be talked over anywhere in its first few seconds (≈ 10 s with Piper).
const LONG_ANSWER: &str = "Of course! It is a lovely day, and I am happy to help you with that. \
    We could take a walk in the park, or read a good book together by the window. Anything else?";

/// When the interruption is played after the answer's first sentence reached the device: 0.6 s, then
/// 0.3 s later each turn, five steps, so it meets different parts of the answer.
fn placement(turn: usize) -> Duration {
    Duration::from_millis(600 + 300 * (turn % 5) as u64)
}

/// Silence (of the answer alone) this long after the interruption's onset is the answer stopped: longer
/// than any pause between its sentences (their tails keep 150 ms).
const STOPPED_BLOCKS: usize = 40;
/// The interruption's onset: its first sample over this share of its peak (as the echo fixtures mark
/// theirs: `make_echo_fixtures.py`).
const ONSET_SHARE: f32 = 0.05;
/// The answer counts as silent under this share of its level before the onset (-26 dB).
const SILENT_SHARE: f32 = 0.05;
/// The filter fitted for the device path: taps before and after the correlation's peak.
const TAPS_BEFORE: usize = 16;
const TAPS_AFTER: usize = 48;

/// What the session did with the words over its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Held and then stopped: the words became the next turn.
    Stopped,
    /// Held, then let go on (the words were not taken as words).
    WentOn,
    /// Played to its end without a hold.
    NeverHeld,
}

/// One interrupted turn, measured once all turns are done (the analysis costs CPU).
struct Take {
    recording: Vec<f32>,
    /// Where the interruption was handed to the device, in the recording (samples).
    said_at: usize,
    interruption: usize,
    outcome: Outcome,
    heard: Option<String>,
}

/// When the answer fell silent after the interruption, in the recording.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Silenced {
    /// From the interruption's first sound to the start of the answer's first silence of 400 ms after it (negative: the
    /// answer was already in a pause it never came out of).
    pub after_onset_ms: i64,
    /// How far under itself the interruption was subtracted (dB over the blocks where it sounds and the
    /// answer is silent): how much the measurement can be trusted.
    pub depth_db: f32,
    /// How loud the interruption's first [`WORDS_LEVEL_BLOCKS`] were against the answer before them
    /// (dB, mean power over the blocks that sound): where the user is softer than the character's
    /// voice, the echo canceller's suppressor takes their first syllables down with it. `None` when
    /// none of those blocks sounds.
    pub words_over_answer_db: Option<f32>,
}

/// The interruption's level is taken over its first 300 ms: what decides how soon it is heard.
const WORDS_LEVEL_BLOCKS: usize = 30;

pub async fn run(
    args: VoiceBenchArgs,
    profile: tomo_config::profile::Profile,
) -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let questions = load(&spoken_questions(scratch.path())?)?;
    let mut interruptions = Vec::new();
    for (i, text) in INTERRUPTIONS.iter().enumerate() {
        let path = scratch.path().join(format!("over{i}.wav"));
        speak_with_flite(text, &path)?;
        let said = read_wav_mono(&path)?;
        // The analysis compares it sample by sample with the ear's 16 kHz recording.
        if said.sample_rate != tomo_audio::SAMPLE_RATE {
            bail!(
                "flite spoke {} at {} Hz, not 16 kHz",
                path.display(),
                said.sample_rate
            );
        }
        interruptions.push(said);
    }
    let replies = scripted_replies(&args, LONG_ANSWER, args.n * 12 + 2);
    if !(args.barge_in || profile.asr.interrupt) {
        bail!(
            "--talk-over needs the character to listen while it speaks (the profile sets `[asr] interrupt = false`; add --barge-in)"
        );
    }
    let DeviceLoop {
        session,
        mut events,
        ear,
        mouth,
        // Kept to the end: the session's LLM.
        server: _server,
        ..
    } = DeviceLoop::start(&args, profile, replies, scratch.path()).await?;
    let ops = session.ops();
    let mut takes = Vec::new();
    let mut held_before = 0;
    let mut last_turn = 0;
    for turn in 0..args.n {
        let from = ear.len();
        play(&mouth, questions[turn % questions.len()].clone())?;
        let Some(answer) = started_sounding(&mut events, last_turn, Duration::from_secs(30)).await
        else {
            eprintln!("turn {turn}: no answer started");
            continue;
        };
        last_turn = answer;
        tokio::time::sleep(placement(turn)).await;
        // What happened to the answer before the interruption (a hold for its own echo) is not the
        // interruption's.
        let mut watch = OverAnswer::new(answer);
        while let Ok(envelope) = events.try_recv() {
            watch.see(&envelope.event);
        }
        if watch.drained {
            eprintln!("turn {turn}: the answer ended before the interruption");
            continue;
        }
        if watch.held {
            held_before += 1;
        }
        watch.forget_holds();
        let interruption = turn % interruptions.len();
        let said_at = ear.len().saturating_sub(from);
        play(&mouth, interruptions[interruption].clone())?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while let Ok(Some(envelope)) = tokio::time::timeout_at(deadline, events.recv()).await {
            match watch.see(&envelope.event) {
                Watch::Going => {}
                Watch::Over => break,
                Watch::CutReply(reply) => {
                    last_turn = last_turn.max(reply);
                    // The answer to the interruption: not measured.
                    if ops.send(Op::Interrupt).await.is_err() {
                        bail!("the session ended");
                    }
                    if watch.outcome() == Outcome::Stopped {
                        break;
                    }
                }
            }
        }
        settle(&mut events, Duration::from_millis(1500)).await;
        let heard = (!watch.heard.is_empty()).then(|| watch.heard.join(" "));
        eprintln!(
            "turn {turn}: {:?} over the answer: {:?}, heard {heard:?}",
            INTERRUPTIONS[interruption],
            watch.outcome()
        );
        takes.push(Take {
            recording: ear.since(from),
            said_at,
            interruption,
            outcome: watch.outcome(),
            heard,
        });
    }
    session.shutdown().await;
    report(&takes, &interruptions, held_before);
    Ok(())
}

fn load(paths: &[std::path::PathBuf]) -> anyhow::Result<Vec<Audio>> {
    Ok(paths
        .iter()
        .map(|path| read_wav_mono(path))
        .collect::<Result<Vec<_>, _>>()?)
}

/// Waits for an answer's first sentence to reach the device: a turn after `after` (a late sentence
/// of an earlier turn does not count). Its turn.
async fn started_sounding(
    events: &mut mpsc::UnboundedReceiver<EventEnvelope>,
    after: TurnId,
    timeout: Duration,
) -> Option<TurnId> {
    let deadline = tokio::time::Instant::now() + timeout;
    while let Ok(Some(envelope)) = tokio::time::timeout_at(deadline, events.recv()).await {
        if let Event::AudioStarted { turn_id, .. } = envelope.event
            && turn_id > after
        {
            return Some(turn_id);
        }
    }
    None
}

/// What became of one answer the user talked over, from the session's events.
#[derive(Debug)]
struct OverAnswer {
    answer: TurnId,
    held: bool,
    stopped: bool,
    drained: bool,
    /// What the session heard the user say (an interruption split at its comma comes in pieces).
    heard: Vec<String>,
}

/// What the watch over an answer wants next.
#[derive(Debug, PartialEq, Eq)]
enum Watch {
    Going,
    /// A later turn's answer started (the answer to the user's words): cut it.
    CutReply(TurnId),
    /// The answer played to its end.
    Over,
}

impl OverAnswer {
    fn new(answer: TurnId) -> Self {
        Self {
            answer,
            held: false,
            stopped: false,
            drained: false,
            heard: Vec::new(),
        }
    }

    fn forget_holds(&mut self) {
        self.held = false;
    }

    fn see(&mut self, event: &Event) -> Watch {
        match event {
            Event::AnswerHeld { turn_id } if *turn_id == self.answer => self.held = true,
            Event::TurnAborted { turn_id, .. } if *turn_id == self.answer => self.stopped = true,
            Event::PlaybackDrained { turn_id } if *turn_id == self.answer => {
                self.drained = true;
                if !self.stopped {
                    return Watch::Over;
                }
            }
            Event::UserTranscript { text } => self.heard.push(text.clone()),
            Event::AudioStarted { turn_id, .. } if *turn_id > self.answer => {
                return Watch::CutReply(*turn_id);
            }
            _ => {}
        }
        Watch::Going
    }

    fn outcome(&self) -> Outcome {
        if self.stopped {
            Outcome::Stopped
        } else if self.held {
            Outcome::WentOn
        } else {
            Outcome::NeverHeld
        }
    }
}

fn report(takes: &[Take], interruptions: &[Audio], held_before: usize) {
    let count = |which: Outcome| takes.iter().filter(|t| t.outcome == which).count();
    println!(
        "talk-over at the device: {} turns (an interruption played 0.6-1.8 s after the answer's first sentence reached the device)",
        takes.len()
    );
    println!(
        "  stopped by the words: {}; held and let go on: {}; never held: {}; answers held before the interruption (their own echo): {held_before}",
        count(Outcome::Stopped),
        count(Outcome::WentOn),
        count(Outcome::NeverHeld)
    );
    let mut delays = Vec::new();
    let mut depths = Vec::new();
    let mut by_phrase: Vec<Vec<Silenced>> = vec![Vec::new(); INTERRUPTIONS.len()];
    // Only answers the words stopped are timed: one let go on, or never held, fell silent for other
    // reasons (its hold, its own end).
    for (i, take) in takes.iter().enumerate() {
        if take.outcome != Outcome::Stopped {
            continue;
        }
        let said = &interruptions[take.interruption].samples;
        match silenced(&take.recording, said, take.said_at) {
            Some(silenced) => {
                eprintln!(
                    "take {i}: silent {} ms after the interruption's onset (subtracted {:.0} dB; its first 300 ms {} against the answer)",
                    silenced.after_onset_ms,
                    silenced.depth_db,
                    level(silenced.words_over_answer_db)
                );
                delays.push(silenced.after_onset_ms);
                depths.push(silenced.depth_db);
                by_phrase[take.interruption].push(silenced);
            }
            None => {
                eprintln!("take {i}: the interruption or the answer not found in the recording")
            }
        }
    }
    if !delays.is_empty() {
        // An answer already in a pause it never came out of counts as silent at the onset.
        let mut shown: Vec<u64> = delays.iter().map(|d| (*d).max(0) as u64).collect();
        shown.sort_unstable();
        println!(
            "  interruption's first sound -> the answer silent at the device   p50 {:>4} ms   p90 {:>4} ms   max {:>4} ms; within 300 ms: {} of {}",
            percentile(&shown, 50),
            percentile(&shown, 90),
            shown.last().copied().unwrap_or(0),
            shown.iter().filter(|d| **d <= 300).count(),
            shown.len()
        );
        depths.sort_by(f32::total_cmp);
        println!(
            "  (the interruption subtracted from the recording by {:.0} dB at the median, {:.0} dB at the least)",
            depths[depths.len() / 2],
            depths[0]
        );
        println!(
            "  by interruption (the answer silent after; its first 300 ms against the answer):"
        );
        for (text, timed) in INTERRUPTIONS.iter().zip(&by_phrase) {
            if timed.is_empty() {
                continue;
            }
            let each: Vec<String> = timed
                .iter()
                .map(|t| {
                    format!(
                        "{} ms ({})",
                        t.after_onset_ms.max(0),
                        level(t.words_over_answer_db)
                    )
                })
                .collect();
            println!("    {text:<40} {}", each.join(", "));
        }
    }
    let wers: Vec<f64> = takes
        .iter()
        .filter_map(|t| {
            t.heard
                .as_ref()
                .map(|heard| word_error_rate(INTERRUPTIONS[t.interruption], heard))
        })
        .collect();
    if !wers.is_empty() {
        println!(
            "  the interruptions as recognised: WER mean {:.3}, worst {:.3} ({} heard)",
            wers.iter().sum::<f64>() / wers.len() as f64,
            wers.iter().copied().fold(0.0, f64::max),
            wers.len()
        );
    }
}

/// A level in dB for the report ("–" when none was measured).
fn level(db: Option<f32>) -> String {
    db.map_or_else(|| "–".to_owned(), |db| format!("{db:+.1} dB"))
}

/// When the answer in `recording` fell silent after `said` (handed to the device at `said_at`) began
/// to sound in it. `None` when the interruption cannot be found or nothing of the answer precedes it.
pub(crate) fn silenced(recording: &[f32], said: &[f32], said_at: usize) -> Option<Silenced> {
    let lag = strongest_lag(recording, said, said_at)?;
    let fitted = fit_device_path(recording, said, lag);
    let start = lag.saturating_sub(TAPS_BEFORE);
    let mut answer = recording.to_vec();
    for (i, value) in fitted.iter().enumerate() {
        if let Some(sample) = answer.get_mut(start + i) {
            *sample -= value;
        }
    }
    // The fitted interruption on the recording's block grid (it starts at `start`).
    let mut placed = vec![0.0; start];
    placed.extend_from_slice(&fitted);
    let said_level = block_rms(&placed);
    let answer_level = block_rms(&answer);
    // Its first sound as the echo fixtures' script marks it: the first sample over 5 % of its peak.
    let peak = fitted.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    let onset_sample = start + fitted.iter().position(|s| s.abs() > ONSET_SHARE * peak)?;
    let onset = onset_sample / BLOCK;
    let before: Vec<f32> = answer_level[onset.saturating_sub(100)..onset]
        .iter()
        .copied()
        .filter(|level| *level > SOUND_RMS)
        .collect();
    if before.is_empty() {
        return None;
    }
    // Mean power over the blocks that sound (`None`: none does).
    let power = |levels: &[f32]| {
        let sounding: Vec<f64> = levels
            .iter()
            .filter(|level| **level > SOUND_RMS)
            .map(|level| f64::from(*level).powi(2))
            .collect();
        (!sounding.is_empty()).then(|| sounding.iter().sum::<f64>() / sounding.len() as f64)
    };
    let words_end = (onset + WORDS_LEVEL_BLOCKS).min(said_level.len());
    let words_over_answer_db = power(&said_level[onset..words_end])
        .zip(power(&before))
        .map(|(words, answer)| (10.0 * (words / answer).log10()) as f32);
    let mut sorted = before;
    sorted.sort_by(f32::total_cmp);
    let silent_under = (sorted[sorted.len() / 2] * SILENT_SHARE).max(SOUND_RMS);
    let silent = |b: usize| {
        answer_level
            .get(b)
            .is_some_and(|level| *level < silent_under)
    };
    let stopped = (onset..=answer_level.len().saturating_sub(STOPPED_BLOCKS))
        .find(|&b| (b..b + STOPPED_BLOCKS).all(silent))?;
    let mut from = stopped;
    while from > onset.saturating_sub(100) && silent(from - 1) {
        from -= 1;
    }
    // The subtraction's depth where the interruption sounds over the answer's silence.
    let (mut said_energy, mut left_energy) = (0.0f64, 0.0f64);
    for b in stopped..(stopped + STOPPED_BLOCKS).min(said_level.len()) {
        if said_level[b] > SOUND_RMS {
            said_energy += f64::from(said_level[b]).powi(2);
            left_energy += f64::from(answer_level[b]).powi(2);
        }
    }
    let depth_db = if said_energy > 0.0 {
        (10.0 * (said_energy / left_energy.max(1e-12)).log10()) as f32
    } else {
        0.0
    };
    Some(Silenced {
        after_onset_ms: ((from * BLOCK) as i64 - onset_sample as i64) * 1000
            / tomo_audio::SAMPLE_RATE as i64,
        depth_db,
        words_over_answer_db,
    })
}

/// The lag (in the recording) at which `said` correlates best, searched from 0.1 s before it was handed
/// to the device to 0.5 s after.
fn strongest_lag(recording: &[f32], said: &[f32], said_at: usize) -> Option<usize> {
    let lo = said_at.saturating_sub(1_600);
    let hi = (said_at + 8_000).min(recording.len().saturating_sub(said.len() / 2));
    (lo..hi)
        .map(|lag| {
            let score: f32 = recording[lag..].iter().zip(said).map(|(r, s)| r * s).sum();
            (lag, score)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(lag, _)| lag)
}

/// `said` as the recording holds it: a least-squares filter around `lag` (the device path resamples
/// twice), applied. The result starts at `lag - TAPS_BEFORE`.
fn fit_device_path(recording: &[f32], said: &[f32], lag: usize) -> Vec<f32> {
    let taps = TAPS_BEFORE + TAPS_AFTER;
    let start = lag.saturating_sub(TAPS_BEFORE);
    let shifted = |n: usize, j: usize| -> f32 {
        // said[n - start - j], zero outside.
        n.checked_sub(start + j)
            .and_then(|i| said.get(i))
            .copied()
            .unwrap_or(0.0)
    };
    let end = (start + said.len() + taps).min(recording.len());
    // Fitted over the interruption's second half, where the answer has stopped if it was held: the
    // answer under it biases the fit (a synthetic take: subtracted by 28 dB fitted over the whole
    // interruption, by 110 dB over its second half).
    let fit_from = start + said.len() / 2;
    // Normal equations: A h = b, A[j][k] = Σ x_j x_k, b[j] = Σ r x_j.
    let mut a = vec![vec![0.0f64; taps]; taps];
    let mut b = vec![0.0f64; taps];
    let mut column = vec![0.0f64; taps];
    for (n, &heard) in recording.iter().enumerate().take(end).skip(fit_from) {
        for (j, x) in column.iter_mut().enumerate() {
            *x = f64::from(shifted(n, j));
        }
        let r = f64::from(heard);
        for ((row, b_j), &x_j) in a.iter_mut().zip(b.iter_mut()).zip(&column) {
            if x_j == 0.0 {
                continue;
            }
            *b_j += r * x_j;
            for (a_jk, &x_k) in row.iter_mut().zip(&column) {
                *a_jk += x_j * x_k;
            }
        }
    }
    let ridge = (0..taps).map(|j| a[j][j]).fold(0.0, f64::max) * 1e-6 + 1e-12;
    for (j, row) in a.iter_mut().enumerate() {
        row[j] += ridge;
    }
    let h = solve(a, b);
    (start..end)
        .map(|n| {
            (0..taps)
                .map(|j| h[j] * f64::from(shifted(n, j)))
                .sum::<f64>() as f32
        })
        .collect()
}

/// Gaussian elimination with partial pivoting (the system is small and well conditioned by the ridge).
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        b.swap(col, pivot);
        let p = a[col][col];
        if p.abs() < 1e-300 {
            continue;
        }
        let (upper, lower) = a.split_at_mut(col + 1);
        let pivot_row = &upper[col];
        for (offset, row) in lower.iter_mut().enumerate() {
            let factor = row[col] / p;
            if factor == 0.0 {
                continue;
            }
            for (value, &above) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *value -= factor * above;
            }
            b[col + 1 + offset] -= factor * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let sum: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = if a[row][row].abs() < 1e-300 {
            0.0
        } else {
            (b[row] - sum) / a[row][row]
        };
    }
    x
}

#[cfg(test)]
#[path = "bench_talk_over_tests.rs"]
mod tests;
