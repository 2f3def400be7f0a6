//! `tomo talk`: one real voice turn from a WAV file to a WAV file — real VAD, real ASR, the LLM, real TTS —
//! writing exactly the audio that would have been played, sentence by sentence, and a latency report.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tomo_audio::segments_from_wav;
use tomo_protocol::{Event, LatencyOrigin, Op, SessionState};
use tomo_runtime::{SessionBuilder, SessionFlags, VoiceOut, voice};

use crate::load::load_profile_or_report;
use crate::models_cmd::brain_progress;
use crate::render::Renderer;

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
    pub session: SessionFlags,
}

pub async fn run(args: TalkArgs) -> anyhow::Result<ExitCode> {
    let Some(profile) = load_profile_or_report(&args.profile) else {
        return Ok(ExitCode::from(2));
    };
    let asr_profile = profile.clone();
    // Models must be installed already (`tomo models install`): a file-to-file turn downloads nothing.
    let (session, mut events) = SessionBuilder::new(&args.profile, profile)
        .env(args.session.env_options())
        .voice_out(VoiceOut::Wav {
            path: args.output.clone(),
            workers: args.tts_workers,
        })
        .brain_progress(brain_progress())
        .start()
        .await?;
    let heard = match &session.store {
        Some(store) => hear(&asr_profile, store, &args.input).await,
        None => Err(anyhow::anyhow!("no voice models")),
    };
    let (transcript, asr_time) = match heard {
        Ok(heard) if !heard.0.is_empty() => heard,
        Ok(_) => {
            eprintln!("{}: no speech found", args.input.display());
            session.shutdown().await;
            return Ok(ExitCode::FAILURE);
        }
        Err(error) => {
            session.shutdown().await;
            return Err(error);
        }
    };
    let ops = session.ops();
    ops.send(Op::SpeechStarted).await?;
    ops.send(Op::SpeechEnded {
        transcript,
        asr_ms: asr_time.as_millis() as u64,
        end_of_turn_ms: 0,
        over_answer_only: false,
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
    // The WAV file is complete once the session (and its sink) is gone.
    session.shutdown().await;
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

/// What the user said in `input` (real VAD, real ASR), and how long the last utterance's ASR took — the
/// part that delays the answer.
async fn hear(
    profile: &tomo_config::profile::Profile,
    store: &tomo_models::ModelStore,
    input: &std::path::Path,
) -> anyhow::Result<(String, Duration)> {
    let mut vad = voice::vad(store)?;
    let segments = segments_from_wav(input, &mut vad, &voice::segmenter_config())?;
    let asr = voice::asr(profile, store)?;
    let mut heard = Vec::new();
    let mut asr_time = Duration::ZERO;
    for segment in segments {
        let (transcript, took) = voice::transcribe(Arc::clone(&asr), segment.samples).await?;
        asr_time = took;
        if !transcript.text.is_empty() {
            heard.push(transcript.text);
        }
    }
    Ok((heard.join(" "), asr_time))
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
