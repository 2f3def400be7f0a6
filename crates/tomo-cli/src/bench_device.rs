//! `tomo bench voice --device`: what the user hears, measured at the sound device. Spoken questions are
//! played into the output device while the session listens on the input device (a PulseAudio null
//! sink and its monitor make the two one loop); a second, independent recording of the input device
//! (the "ear") hears the question and the answer, and the gap between the last sample of the question's
//! speech and the first sample of the answer is the latency the user feels. The session's own latency
//! report gives the breakdown.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::sync::mpsc;
use tomo_audio::output::{AudioOutput, Clip};
use tomo_audio::{Audio, Capture, CaptureConfig, RodioOutput, SAMPLE_RATE, read_wav_mono};
use tomo_protocol::{Event, EventEnvelope};
use tomo_runtime::{Duplex, ModelInstall, SessionBuilder, SessionFlags, VoiceIn, VoiceOut};
use tomo_testkit::{ScriptedResponse, ScriptedServer};

use crate::bench::{ANSWER, VoiceBenchArgs, percentile, scripted_replies, spoken_questions};

/// 10 ms blocks for finding sound in the recording.
pub(crate) const BLOCK: usize = (SAMPLE_RATE / 100) as usize;
/// RMS above which a block is sound (the null sink is digital silence otherwise).
pub(crate) const SOUND_RMS: f32 = 0.003;
/// Silence at least this long ends the question (the answer cannot come sooner than this).
const GAP_MIN: Duration = Duration::from_millis(250);

/// One measured turn, in milliseconds.
struct Turn {
    heard_gap: u64,
    end_of_turn: u64,
    asr_done: u64,
    first_token: u64,
    first_sentence: u64,
    first_audio: u64,
}

pub async fn run(
    args: VoiceBenchArgs,
    profile: tomo_config::profile::Profile,
) -> anyhow::Result<()> {
    let voice_used = format!("{} {}", profile.tts.engine.as_str(), profile.tts.voice);
    let scratch = tempfile::tempdir()?;
    let questions = spoken_questions(scratch.path())?
        .iter()
        .map(|path| read_wav_mono(path))
        .collect::<Result<Vec<_>, _>>()?;
    // Several replies per turn: a request started in a pause the speaker then talks through is dropped,
    // and it has taken a reply.
    let replies = scripted_replies(&args, ANSWER, args.n * 8 + 1);
    let DeviceLoop {
        session,
        mut events,
        ear,
        mouth,
        server,
        full_duplex,
        idle_cpu,
        plugins,
    } = DeviceLoop::start(&args, profile, replies, scratch.path()).await?;

    let mut turns = Vec::new();
    let mut self_interrupted = 0;
    let mut held = Holds::default();
    for turn in 0..args.n {
        let question = &questions[turn % questions.len()];
        let from = ear.len();
        play(&mouth, question.clone())?;
        let answered = answer(&mut events, Duration::from_secs(40), &mut held, args.brain).await;
        // The answer's tail and the device's buffer reach the recording a little later.
        tokio::time::sleep(Duration::from_millis(700)).await;
        let report = match answered {
            Answered::Whole(report) => report,
            Answered::Interrupted => {
                // Nobody talks over the answers here: the character heard itself.
                self_interrupted += 1;
                eprintln!("turn {turn}: the answer was interrupted (nobody spoke over it)");
                continue;
            }
            Answered::Nothing => {
                eprintln!("turn {turn}: no answer was played (nothing heard?)");
                continue;
            }
        };
        let recording = ear.since(from);
        match heard_gap(&recording) {
            Some(gap) => {
                let mut measured = report;
                measured.heard_gap = gap.as_millis() as u64;
                eprintln!(
                    "turn {turn}: heard after {} ms (session: end of turn {} ms, first audio {} ms)",
                    measured.heard_gap, measured.end_of_turn, measured.first_audio
                );
                turns.push(measured);
            }
            None => eprintln!("turn {turn}: the recording holds no question-then-answer"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    session.shutdown().await;
    if turns.is_empty() {
        bail!("no turn could be measured at the device");
    }
    let llm = if args.brain {
        format!("the profile's own LLM, plugins {:?}", plugins)
    } else {
        format!(
            "scripted LLM: first token after {} ms, {} ms per token",
            args.first_token_ms, args.token_ms
        )
    };
    println!(
        "voice turns at the device: {} of {} ({llm}; voice {}; {})",
        turns.len(),
        args.n,
        voice_used,
        if full_duplex {
            "full duplex, echo cancelled"
        } else {
            "half duplex"
        }
    );
    let column = |label: &str, values: Vec<u64>| {
        let mut values = values;
        values.sort_unstable();
        println!(
            "  {label:<44} p50 {:>5} ms   p90 {:>5} ms",
            percentile(&values, 50),
            percentile(&values, 90)
        );
    };
    if full_duplex {
        println!(
            "  answers the character interrupted itself (no user speech): {self_interrupted} of {}",
            args.n
        );
        println!(
            "  answers held for speech over them and let go on: {} times in {} answers ({})",
            held.times,
            held.answers.len(),
            held.reasons()
        );
    }
    column(
        "last word heard -> first answer sound heard",
        turns.iter().map(|t| t.heard_gap).collect(),
    );
    println!("  breakdown (session clock, from the last word):");
    column(
        "  end of turn decided",
        turns.iter().map(|t| t.end_of_turn).collect(),
    );
    column(
        "  transcript ready",
        turns.iter().map(|t| t.asr_done).collect(),
    );
    column(
        "  first LLM token",
        turns.iter().map(|t| t.first_token).collect(),
    );
    column(
        "  first sentence",
        turns.iter().map(|t| t.first_sentence).collect(),
    );
    column(
        "  first audio handed to the device",
        turns.iter().map(|t| t.first_audio).collect(),
    );
    column(
        "  output device + capture delay (rest)",
        turns
            .iter()
            .map(|t| t.heard_gap.saturating_sub(t.first_audio))
            .collect(),
    );
    println!(
        "  whole process CPU while listening idle: {idle_cpu:.1} % of one core (includes the ear)"
    );
    // Requests started in a pause the question then went on through were dropped: work (and, on a
    // cloud endpoint, cost) the early start spends.
    if let Some(server) = &server {
        println!(
            "  LLM requests: {} for {} turns",
            server.requests().len(),
            args.n
        );
    }
    Ok(())
}

/// The live session on the device loop, the ear recording the input device, and the mouth that plays
/// the user's side into the output device.
pub(crate) struct DeviceLoop {
    pub session: tomo_runtime::RunningSession,
    pub events: mpsc::UnboundedReceiver<EventEnvelope>,
    pub ear: Ear,
    pub mouth: RodioOutput,
    /// The scripted LLM (none with `--brain`).
    pub server: Option<ScriptedServer>,
    pub full_duplex: bool,
    /// The whole process's CPU while the session listened to nothing, in % of one core.
    pub idle_cpu: f64,
    /// The plugins the session runs (none unless `--brain`).
    pub plugins: Vec<String>,
}

impl DeviceLoop {
    /// Starts the session for `profile` (its LLM scripted with `replies` unless `--brain`; its data
    /// under `scratch`), the ear and the mouth, lets them warm up and measures idle CPU.
    pub(crate) async fn start(
        args: &VoiceBenchArgs,
        mut profile: tomo_config::profile::Profile,
        replies: Vec<ScriptedResponse>,
        scratch: &Path,
    ) -> anyhow::Result<Self> {
        if !args.brain {
            profile.plugins.enabled.clear();
        }
        let server = if args.brain {
            None
        } else {
            Some(ScriptedServer::start(replies).await?)
        };
        let flags = SessionFlags {
            llm_base_url: server.as_ref().map(ScriptedServer::base_url),
            data_dir: Some(scratch.join("data")),
            ..SessionFlags::default()
        };
        let duplex = if args.barge_in {
            Duplex::Full
        } else if args.half_duplex {
            Duplex::Half
        } else {
            Duplex::Auto
        };
        let plugins = profile.plugins.enabled.clone();
        let full_duplex = duplex == Duplex::Full || profile.asr.interrupt && duplex == Duplex::Auto;
        let (session, mut events) = SessionBuilder::new(&args.profile, profile)
            .env(flags.env_options())
            .voice_out(VoiceOut::Speakers { workers: 2 })
            .voice_in(VoiceIn::Microphone { duplex })
            .install(ModelInstall::Require)
            .start()
            .await?;
        if session.microphone.is_none() {
            bail!(
                "the session has no microphone (start a sound device, e.g. scripts/pulse-null.sh)"
            );
        }
        if args.brain {
            brain_warmed_up(&session).await;
        }
        let ear = Ear::start()?;
        let mouth = RodioOutput::open(None).context("no output device to play the questions on")?;
        // Let the devices and the recognizer warm up.
        settle(&mut events, Duration::from_secs(3)).await;
        let idle_cpu = idle_cpu(Duration::from_secs(10)).await;
        Ok(Self {
            session,
            events,
            ear,
            mouth,
            server,
            full_duplex,
            idle_cpu,
            plugins,
        })
    }
}

/// The embedded brain evaluates the character's prompt prefix once it has loaded (≈ 8 s on two cores);
/// a user who speaks before that waits for it, which is the first run's cost, not a turn's.
async fn brain_warmed_up(session: &tomo_runtime::RunningSession) {
    let Some(brain) = session.brain() else {
        eprintln!("the profile's LLM is not the embedded brain: no warm-up to wait for");
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while brain.stats().warm_ups.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if let Some(warmed) = brain.stats().warm_ups.first() {
        eprintln!(
            "the brain's warm-up: {} prompt tokens in {} ms",
            warmed.prompt_tokens,
            warmed.elapsed.as_millis()
        );
    }
}

/// An independent recording of the input device, as the user's ear.
pub(crate) struct Ear {
    samples: Arc<Mutex<Vec<f32>>>,
    _capture: Capture,
}

impl Ear {
    pub(crate) fn start() -> anyhow::Result<Self> {
        let (capture, streams) = Capture::spawn(CaptureConfig::default())?;
        capture.start()?;
        let samples = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&samples);
        std::thread::spawn(move || {
            while let Ok(frame) = streams.frames.recv() {
                if let Ok(mut all) = sink.lock() {
                    all.extend_from_slice(&frame.samples);
                }
            }
        });
        Ok(Self {
            samples,
            _capture: capture,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.samples.lock().map_or(0, |s| s.len())
    }

    pub(crate) fn since(&self, from: usize) -> Vec<f32> {
        self.samples
            .lock()
            .map(|s| s.get(from..).unwrap_or_default().to_vec())
            .unwrap_or_default()
    }
}

pub(crate) fn play(mouth: &RodioOutput, audio: Audio) -> anyhow::Result<()> {
    mouth.play(Clip {
        audio,
        on_start: None,
        on_finish: None,
    })?;
    Ok(())
}

/// Answers held for speech over them (nobody speaks here: the character's own voice, or noise) that
/// went on.
#[derive(Default)]
struct Holds {
    times: usize,
    answers: std::collections::BTreeSet<u64>,
    why: std::collections::BTreeMap<String, usize>,
}

impl Holds {
    fn reasons(&self) -> String {
        if self.why.is_empty() {
            return "none".to_owned();
        }
        self.why
            .iter()
            .map(|(why, count)| format!("{why} {count}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How a turn's answer went.
enum Answered {
    /// Played to its end; its latency report.
    Whole(Turn),
    /// Cut off (by the listener, since nobody else speaks).
    Interrupted,
    /// Nothing within the time allowed.
    Nothing,
}

/// Waits for the next voice turn to play its answer to the end.
async fn answer(
    events: &mut mpsc::UnboundedReceiver<EventEnvelope>,
    timeout: Duration,
    held: &mut Holds,
    show_words: bool,
) -> Answered {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut report = None;
    loop {
        let Ok(Some(envelope)) = tokio::time::timeout_at(deadline, events.recv()).await else {
            return Answered::Nothing;
        };
        match envelope.event {
            Event::LatencyReport {
                end_of_turn_ms,
                asr_done_ms,
                first_token_ms,
                first_sentence_ms,
                first_audio_ms: Some(first_audio),
                ..
            } => {
                report = Some(Turn {
                    heard_gap: 0,
                    end_of_turn: end_of_turn_ms.unwrap_or(0),
                    asr_done: asr_done_ms.unwrap_or(0),
                    first_token: first_token_ms.unwrap_or(0),
                    first_sentence: first_sentence_ms.unwrap_or(0),
                    first_audio,
                });
            }
            // A model's answers differ from turn to turn: what was heard and said explains the figures.
            Event::TurnStarted { user_text, .. } if show_words => {
                eprintln!("  heard: {user_text:?}")
            }
            Event::ToolCall { call, .. } if show_words => {
                eprintln!("  tool call: {} {:?}", call.tool_name, call.status)
            }
            Event::TurnFinished { text, .. } if show_words => eprintln!("  answered: {text:?}"),
            Event::PlaybackDrained { .. } => {
                if let Some(report) = report.take() {
                    return Answered::Whole(report);
                }
            }
            Event::TurnAborted { .. } => return Answered::Interrupted,
            Event::AnswerHeld { turn_id } => {
                held.times += 1;
                held.answers.insert(turn_id);
            }
            Event::AnswerResumed { why, .. } => {
                let why = serde_json::to_value(why)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                *held.why.entry(why).or_default() += 1;
            }
            _ => {}
        }
    }
}

pub(crate) async fn settle(events: &mut mpsc::UnboundedReceiver<EventEnvelope>, time: Duration) {
    let deadline = tokio::time::Instant::now() + time;
    while tokio::time::timeout_at(deadline, events.recv())
        .await
        .is_ok()
    {}
}

/// The process's CPU over `time` while nothing happens, in % of one core.
async fn idle_cpu(time: Duration) -> f64 {
    let before = process_cpu();
    let started = Instant::now();
    tokio::time::sleep(time).await;
    let used = process_cpu().saturating_sub(before);
    used.as_secs_f64() / started.elapsed().as_secs_f64() * 100.0
}

/// User + system CPU time of this process so far (Linux `/proc/self/stat`, clock ticks of 10 ms).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string(Path::new("/proc/self/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// The RMS of each [`BLOCK`] of `signal` (the last one may be shorter).
pub(crate) fn block_rms(signal: &[f32]) -> Vec<f32> {
    signal
        .chunks(BLOCK)
        .map(|block| (block.iter().map(|s| s * s).sum::<f32>() / block.len() as f32).sqrt())
        .collect()
}

/// From the end of the question's speech to the first sound of the answer, in the recording of one
/// turn: the first sound is the question; the first silence of at least [`GAP_MIN`] after it ends it;
/// the next sound is the answer.
fn heard_gap(recording: &[f32]) -> Option<Duration> {
    let sound: Vec<bool> = block_rms(recording)
        .into_iter()
        .map(|level| level > SOUND_RMS)
        .collect();
    let gap_blocks = (GAP_MIN.as_millis() / 10) as usize;
    let start = sound.iter().position(|s| *s)?;
    let mut last_sound = start;
    let mut index = start;
    while index < sound.len() {
        if sound[index] {
            if index - last_sound > gap_blocks {
                let gap = index - last_sound - 1;
                return Some(Duration::from_millis(gap as u64 * 10));
            }
            last_sound = index;
        }
        index += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(ms: usize) -> Vec<f32> {
        (0..ms * 16).map(|i| (i as f32 * 0.3).sin() * 0.2).collect()
    }

    fn silence(ms: usize) -> Vec<f32> {
        vec![0.0; ms * 16]
    }

    #[test]
    fn the_gap_runs_from_the_question_to_the_answer_and_ignores_short_pauses() {
        let mut recording = silence(300);
        recording.extend(tone(800));
        recording.extend(silence(120)); // a pause between words
        recording.extend(tone(500));
        recording.extend(silence(830));
        recording.extend(tone(1000));
        assert_eq!(heard_gap(&recording), Some(Duration::from_millis(830)));
        assert_eq!(heard_gap(&silence(1000)), None);
        assert_eq!(heard_gap(&tone(1000)), None);
    }
}
