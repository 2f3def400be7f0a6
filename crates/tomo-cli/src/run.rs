//! `tomo run`: talk to a character through the microphone and hear it through the speakers. Typed lines
//! still work. Without a microphone it is a text chat with voice; without speakers, a voice chat with text.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context;
use clap::Args;
use tokio::io::{AsyncBufReadExt, BufReader};
use tomo_audio::RodioOutput;
use tomo_core::session::start_session;
use tomo_core::sink::{OutputSink, TextSink};
use tomo_protocol::Op;
use tomo_speech::models::{InstallOptions, ModelStore};
use tomo_speech::voice_sink::VoiceSink;

use crate::LlmFlags;
use crate::models_cmd;
use crate::render::Renderer;
use crate::session_env::{SessionFlags, environment, load_profile_or_report};
use tomo_runtime::{ListenFlags, start_listening, voice};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The character profile (profiles/*.toml).
    #[arg(long, short)]
    pub profile: PathBuf,
    /// Keep listening while the character speaks (for headsets: with speakers it would hear itself).
    #[arg(long)]
    pub barge_in: bool,
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

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let Some(profile) = load_profile_or_report(&args.profile) else {
        return Ok(ExitCode::from(2));
    };
    let store = ModelStore::from_env()?;
    let missing = voice::missing_models(&store, &profile)?;
    if !missing.is_empty() {
        eprintln!(
            "* first run: installing {} into {}",
            missing.join(", "),
            store.root.display()
        );
        let install_store = store.clone();
        tokio::task::spawn_blocking(move || {
            models_cmd::install(&install_store, &missing, &InstallOptions::default())
        })
        .await??;
    }

    let sink: Arc<dyn OutputSink> = match RodioOutput::open(profile.tts.output_device.as_deref()) {
        Ok(output) => Arc::new(
            VoiceSink::new(
                voice::tts(&profile, &store)?,
                Arc::new(output),
                args.tts_workers,
            )
            .with_voices(voice::voice_builder(&store)),
        ),
        Err(error) => {
            eprintln!("! no speakers ({error}); answers are shown as text only");
            Arc::new(TextSink)
        }
    };
    let asr = voice::asr(&profile, &store)?;
    let vad = voice::vad(&store)?;
    let input_device = profile.asr.input_device.clone();
    let prepared = environment(&args.profile, &args.llm, &args.session);
    let (session, mut events) = start_session(profile, prepared.env.clone(), sink)
        .await
        .context("cannot start the session")?;
    let ops = session.sender();

    // Half-duplex by default: while the character speaks, the microphone is ignored so it does not
    // answer its own voice coming out of the speakers.
    let flags = ListenFlags {
        barge_in: args.barge_in,
        ..ListenFlags::default()
    };
    let follow = flags.clone();
    let notify: tomo_runtime::Notify = Arc::new(|line: &str| eprintln!("{line}"));
    let listening = match start_listening(input_device, vad, asr, ops.clone(), flags, notify) {
        Ok(device) => {
            eprintln!("* listening on {device}");
            true
        }
        Err(error) => {
            eprintln!("! no microphone ({error}); type your messages");
            false
        }
    };
    if listening {
        eprintln!(
            "Speak, or type a message (/mute, /unmute, /quiet, /unquiet). Ctrl-C interrupts an answer, Ctrl-D quits."
        );
    } else {
        eprintln!("Type a message. Ctrl-C interrupts an answer, Ctrl-D quits.");
    }

    let mut renderer = Renderer::new(args.json);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdin_open = true;
    loop {
        tokio::select! {
            envelope = events.recv() => {
                let Some(envelope) = envelope else { break };
                renderer.show(&envelope);
                follow.follow(&envelope.event);
            }
            line = lines.next_line(), if stdin_open => match line {
                Ok(Some(line)) if !line.trim().is_empty() => {
                    ops.send(typed_op(line.trim())).await.ok();
                }
                Ok(Some(_)) => {}
                // Ctrl-D (or no terminal): keep running on voice if we listen, else quit.
                Ok(None) | Err(_) if listening => stdin_open = false,
                Ok(None) | Err(_) => break,
            },
            _ = tokio::signal::ctrl_c() => {
                ops.send(Op::Interrupt).await.ok();
                if !follow.speaking.load(Ordering::SeqCst) {
                    break;
                }
            }
        }
    }
    ops.send(Op::Shutdown).await.ok();
    session.join().await;
    prepared.settle().await;
    Ok(ExitCode::SUCCESS)
}

/// A typed line: `/mute`, `/unmute`, `/quiet` and `/unquiet` switch the microphone and do-not-disturb;
/// anything else is said to the character.
fn typed_op(line: &str) -> Op {
    match line {
        "/mute" => Op::SetMicMuted { muted: true },
        "/unmute" => Op::SetMicMuted { muted: false },
        "/quiet" => Op::SetDoNotDisturb { enabled: true },
        "/unquiet" => Op::SetDoNotDisturb { enabled: false },
        text => Op::UserText {
            text: text.to_owned(),
        },
    }
}
