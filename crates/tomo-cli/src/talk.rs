//! `tomo talk`: one real voice turn from a WAV file to a WAV file — real VAD, real ASR, the LLM, real TTS —
//! writing exactly the audio that would have been played, sentence by sentence, and a latency report.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tomo_audio::{WavOutput, segments_from_wav};
use tomo_core::session::start_session;
use tomo_protocol::{Event, LatencyOrigin, Op, SessionState};
use tomo_speech::models::ModelStore;
use tomo_speech::voice_sink::VoiceSink;

use crate::LlmFlags;
use crate::render::Renderer;
use crate::session_env::{SessionFlags, environment, load_profile_or_report};
use tomo_runtime::voice;

#[derive(Debug, Args)]
pub struct TalkArgs {
    /// The character profile (profiles/*.toml).
    #[arg(long, short)]
    pub profile: PathBuf,
    /// What the user says: a WAV file (any rate, channels, 16/24/32-bit or float).
    #[arg(long)]
    pub input: PathBuf,
    /// Where the character's answer goes (WAV).
    #[arg(long)]
    pub output: PathBuf,
    /// Print every event as one JSON line.
    #[arg(long)]
    pub json: bool,
    /// Sentences synthesized at the same time, ahead of playback.
    #[arg(long, default_value_t = 2)]
    pub tts_workers: usize,
    #[command(flatten)]
    pub llm: LlmFlags,
    #[command(flatten)]
    pub session: SessionFlags,
}

pub async fn run(args: TalkArgs) -> anyhow::Result<ExitCode> {
    let Some(profile) = load_profile_or_report(&args.profile) else {
        return Ok(ExitCode::from(2));
    };
    let store = ModelStore::from_env()?;
    let missing = voice::missing_models(&store, &profile)?;
    if !missing.is_empty() {
        anyhow::bail!(
            "models missing from {}: {} (install them with `tomo models install`)",
            store.root.display(),
            missing.join(", ")
        );
    }
    let mut vad = voice::vad(&store)?;
    let segments = segments_from_wav(&args.input, &mut vad, &voice::segmenter_config())?;
    let asr = voice::asr(&profile, &store)?;
    let mut heard = Vec::new();
    let mut asr_time = Duration::ZERO;
    for segment in segments {
        let (transcript, took) = voice::transcribe(Arc::clone(&asr), segment.samples).await?;
        asr_time = took; // the last utterance's ASR is what delays the answer
        if !transcript.text.is_empty() {
            heard.push(transcript.text);
        }
    }
    let transcript = heard.join(" ");
    if transcript.is_empty() {
        eprintln!("{}: no speech found", args.input.display());
        return Ok(ExitCode::FAILURE);
    }

    let output = Arc::new(WavOutput::create(&args.output)?);
    let sink = Arc::new(VoiceSink::new(
        voice::tts(&profile, &store)?,
        output.clone(),
        args.tts_workers,
    ));
    let prepared = environment(&args.profile, &args.llm, &args.session);
    let (session, mut events) = start_session(profile, prepared.env.clone(), sink)
        .await
        .context("cannot start the session")?;
    session.send(Op::SpeechStarted).await?;
    session
        .send(Op::SpeechEnded {
            transcript,
            asr_ms: asr_time.as_millis() as u64,
        })
        .await?;

    let mut renderer = Renderer::new(args.json);
    let mut failed = false;
    let mut started = false;
    let mut report = None;
    while let Some(envelope) = events.recv().await {
        renderer.show(&envelope);
        match &envelope.event {
            Event::UserTranscript { text } if !args.json => println!("you (heard): {text}"),
            Event::TurnStarted { .. } => started = true,
            Event::Error { .. } => failed = true,
            Event::LatencyReport { .. } => report = Some(envelope.event.clone()),
            Event::StateChanged {
                to: SessionState::Idle,
                ..
            } if started => break,
            _ => {}
        }
    }
    session.send(Op::Shutdown).await.ok();
    session.join().await;
    prepared.settle().await;
    output.finish()?;
    if let Some(report) = report
        && !args.json
    {
        print_report(&report);
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub fn print_report(report: &Event) {
    let Event::LatencyReport {
        origin,
        asr_done_ms,
        first_token_ms,
        first_sentence_ms,
        first_audio_ms,
        ..
    } = report
    else {
        return;
    };
    let from = match origin {
        LatencyOrigin::SpeechEnd => "end of speech",
        LatencyOrigin::TurnStart => "turn start",
    };
    let show = |label: &str, value: &Option<u64>| match value {
        Some(ms) => format!("{label} {ms} ms"),
        None => format!("{label} -"),
    };
    println!(
        "latency from {from}: {}, {}, {}, {}",
        show("asr done", asr_done_ms),
        show("first token", first_token_ms),
        show("first sentence", first_sentence_ms),
        show("first audio", first_audio_ms)
    );
}
