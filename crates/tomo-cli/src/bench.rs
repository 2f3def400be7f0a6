//! `tomo bench voice`: voice-turn latency over N real turns (real VAD, ASR and TTS; a scripted LLM with
//! a chosen first-token delay, so the numbers measure Tomo, not a model server).
//!
//! `--device` measures what the user hears, at the sound device (see `bench_device.rs`). Without it,
//! the file mode runs ASR outside the live path, from the segmenter's decision, and writes the answer
//! to a WAV file: a breakdown of Tomo's own work, not the user's wait.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use tomo_audio::segments_from_wav;
use tomo_config::profile::TtsEngine;
use tomo_protocol::{Event, Op, SessionState};
use tomo_runtime::{SessionBuilder, SessionFlags, VoiceOut, voice};
use tomo_testkit::{ScriptedResponse, ScriptedServer, script};

use crate::load::load_profile_or_report;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Latency of voice turns: end of user speech → first audio sample out.
    Voice(VoiceBenchArgs),
    /// The screen watcher: CPU on an unchanged window, OCR time per changed frame.
    Vision(crate::bench_vision::VisionBenchArgs),
    /// The embedded brain: load, time to first token (first and follow-up turns), tokens/s, quality.
    Llm(crate::bench_llm::LlmBenchArgs),
}

#[derive(Debug, Args)]
pub struct VoiceBenchArgs {
    /// Character whose ASR/TTS settings are used (its plugins are disabled for the run, unless `--brain`).
    #[arg(long, short, default_value = "profiles/hana.toml")]
    pub profile: std::path::PathBuf,
    /// Number of turns.
    #[arg(long, short, default_value_t = 10)]
    pub n: usize,
    /// Scripted LLM: delay before the first token, in milliseconds.
    #[arg(long, default_value_t = 300)]
    pub first_token_ms: u64,
    /// Scripted LLM: delay between tokens, in milliseconds.
    #[arg(long, default_value_t = 15)]
    pub token_ms: u64,
    /// Measure at the sound device: questions played into the output, the live session listening,
    /// the gap heard in an independent recording (use a PulseAudio null sink: scripts/pulse-null.sh).
    #[arg(long)]
    pub device: bool,
    /// With --device: the microphone ignored while the character speaks.
    #[arg(long, conflicts_with = "barge_in")]
    pub half_duplex: bool,
    /// With --device: full duplex (the default on speakers unless the profile sets `[asr] interrupt =
    /// false`): the microphone echo-cancelled and listening while the character speaks. An answer it
    /// cuts short by hearing itself is counted and not measured; answers it held for its own voice and
    /// let go on are counted.
    #[arg(long)]
    pub barge_in: bool,
    /// Speak with this TTS engine instead of the profile's (`piper`, `kokoro`, ...), to compare voices on
    /// the same turns.
    #[arg(long, value_parser = parse_engine)]
    pub tts_engine: Option<TtsEngine>,
    /// With `--tts-engine`: its voice (`en_US-joe-medium`, `af_heart`, ...).
    #[arg(long)]
    pub tts_voice: Option<String>,
    /// The scripted reply (default: a short first sentence, then a longer one with a comma).
    #[arg(long)]
    pub answer: Option<String>,
    /// With --device: answer with the profile's own LLM (the embedded brain for the shipped characters)
    /// instead of the scripted one, and keep its plugins: what a fresh install sounds like.
    #[arg(long, requires = "device", conflicts_with = "answer")]
    pub brain: bool,
    /// With --device: talk over each answer instead (one of six interruptions, 0.6-1.8 s into it) and
    /// measure how soon the answer falls silent at the device.
    #[arg(long, requires = "device", conflicts_with_all = ["half_duplex", "brain"])]
    pub talk_over: bool,
}

/// `count` replies of the scripted LLM: `--answer` (or `default`) at `--first-token-ms` and `--token-ms`.
pub(crate) fn scripted_replies(
    args: &VoiceBenchArgs,
    default: &str,
    count: usize,
) -> Vec<ScriptedResponse> {
    let answer = args.answer.as_deref().unwrap_or(default);
    let first = Duration::from_millis(args.first_token_ms);
    let per = Duration::from_millis(args.token_ms);
    (0..count)
        .map(|_| script::text_reply_with_delay(answer, first, per))
        .collect()
}

fn parse_engine(name: &str) -> Result<TtsEngine, String> {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .map_err(|_| format!("`{name}` is not one of piper, kokoro, flite, espeak, openai"))
}

pub(crate) const QUESTIONS: [&str; 3] = [
    "What time is it right now?",
    "Tell me something nice about cats.",
    "Can you remind me to drink some water?",
];
pub(crate) const ANSWER: &str =
    "Of course! It is a lovely day, and I am happy to help you with that. Anything else?";

pub async fn run(command: BenchCommand) -> anyhow::Result<ExitCode> {
    let args = match command {
        BenchCommand::Voice(args) => args,
        BenchCommand::Vision(args) => {
            return tokio::task::spawn_blocking(move || crate::bench_vision::run_vision(args))
                .await?;
        }
        BenchCommand::Llm(args) => return crate::bench_llm::run(args).await,
    };
    let Some(mut profile) = load_profile_or_report(&args.profile) else {
        return Ok(ExitCode::from(2));
    };
    if let Some(engine) = args.tts_engine {
        profile.tts.engine = engine;
    }
    if let Some(voice) = &args.tts_voice {
        profile.tts.voice = voice.clone();
    }
    if args.device && args.talk_over {
        crate::bench_talk_over::run(args, profile).await?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.device {
        crate::bench_device::run(args, profile).await?;
        return Ok(ExitCode::SUCCESS);
    }
    profile.plugins.enabled.clear();
    let voice_used = format!("{} {}", profile.tts.engine.as_str(), profile.tts.voice);
    let scratch = tempfile::tempdir()?;
    let questions = spoken_questions(scratch.path())?;
    let server = ScriptedServer::start(scripted_replies(&args, ANSWER, args.n)).await?;
    let flags = SessionFlags {
        llm_base_url: Some(server.base_url()),
        data_dir: Some(scratch.path().join("data")),
        ..SessionFlags::default()
    };
    let asr_profile = profile.clone();
    let (session, mut events) = SessionBuilder::new(&args.profile, profile)
        .env(flags.env_options())
        .voice_out(VoiceOut::Wav {
            path: scratch.path().join("answers.wav"),
            workers: 2,
        })
        .start()
        .await?;
    let Some(store) = session.store.clone() else {
        bail!("no voice models (run `tomo models install`)");
    };
    let asr = voice::asr(&asr_profile, &store)?;
    let mut vad = voice::vad(&store)?;

    let mut samples: Vec<[u64; 4]> = Vec::new();
    for turn in 0..args.n {
        let wav = &questions[turn % questions.len()];
        let segments = segments_from_wav(wav, &mut vad, &voice::segmenter_config())?;
        let speech: Vec<f32> = segments.into_iter().flat_map(|s| s.samples).collect();
        let (transcript, asr_time) = voice::transcribe(Arc::clone(&asr), speech).await?;
        let ops = session.ops();
        ops.send(Op::SpeechStarted).await?;
        ops.send(Op::SpeechEnded {
            transcript: transcript.text,
            asr_ms: asr_time.as_millis() as u64,
            end_of_turn_ms: 0,
            over_answer_only: false,
        })
        .await?;
        let mut started = false;
        while let Some(envelope) = events.recv().await {
            match envelope.event {
                Event::TurnStarted { .. } => started = true,
                Event::LatencyReport {
                    asr_done_ms: Some(asr),
                    first_token_ms: Some(token),
                    first_sentence_ms: Some(sentence),
                    first_audio_ms: Some(audio),
                    ..
                } => samples.push([asr, token, sentence, audio]),
                Event::Error { message, .. } => bail!("turn {turn} failed: {message}"),
                Event::StateChanged {
                    to: SessionState::Idle,
                    ..
                } if started => break,
                _ => {}
            }
        }
    }
    session.shutdown().await;
    if samples.is_empty() {
        bail!("no turn produced audio");
    }
    println!(
        "voice turns, file mode (ASR outside the live path, answer into a WAV file; `--device` measures \
         what the user hears): {} (scripted LLM: first token after {} ms, {} ms per token; voice {})",
        samples.len(),
        args.first_token_ms,
        args.token_ms,
        voice_used
    );
    for (column, label) in ["asr done", "first token", "first sentence", "first audio"]
        .iter()
        .enumerate()
    {
        let mut values: Vec<u64> = samples.iter().map(|s| s[column]).collect();
        values.sort_unstable();
        println!(
            "  end of speech -> {label:<15} p50 {:>5} ms   p90 {:>5} ms",
            percentile(&values, 50),
            percentile(&values, 90)
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn percentile(sorted: &[u64], p: usize) -> u64 {
    let rank = (sorted.len() * p).div_ceil(100).max(1) - 1;
    sorted[rank.min(sorted.len() - 1)]
}

/// The benchmark's questions, spoken by flite into `dir` (q0.wav, q1.wav, …).
pub(crate) fn spoken_questions(dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    QUESTIONS
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let path = dir.join(format!("q{i}.wav"));
            speak_with_flite(text, &path).map(|()| path)
        })
        .collect()
}

pub(crate) fn speak_with_flite(text: &str, path: &Path) -> anyhow::Result<()> {
    let status = std::process::Command::new("flite")
        .args(["-voice", "slt", "-t", text, "-o"])
        .arg(path)
        .status()
        .context("cannot run flite (apt-get install flite) to make the spoken questions")?;
    if !status.success() {
        bail!("flite failed making {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_use_nearest_rank() {
        let values: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&values, 50), 5);
        assert_eq!(percentile(&values, 90), 9);
        assert_eq!(percentile(&[7], 90), 7);
    }
}
