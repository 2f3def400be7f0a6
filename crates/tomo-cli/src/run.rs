//! `tomo run`: talk to a character through the microphone and hear it through the speakers. Typed lines
//! still work. Without a microphone it is a text chat with voice; without speakers, a voice chat with text.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::Args;
use tokio::io::{AsyncBufReadExt, BufReader};
use tomo_protocol::Op;
use tomo_runtime::{ModelInstall, SessionBuilder, SessionFlags, VoiceFlags};

use crate::load::load_profile_or_report;
use crate::models_cmd::{InstallProgress, brain_progress};
use crate::render::Renderer;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The character profile (profiles/*.toml).
    #[arg(long, short)]
    pub profile: PathBuf,
    /// Print every event as one JSON line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub voice: VoiceFlags,
    #[command(flatten)]
    pub session: SessionFlags,
}

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let Some(profile) = load_profile_or_report(&args.profile) else {
        return Ok(ExitCode::from(2));
    };
    // The user can talk over the character unless --half-duplex or the profile's `[asr] interrupt =
    // false` says otherwise: echo cancellation keeps its own voice out, and speech over an answer holds
    // it until the words decide.
    let (session, mut events) = SessionBuilder::new(&args.profile, profile)
        .env(args.session.env_options())
        .ask_about_commands_on_terminal()
        .voice(&args.voice, ModelInstall::Install(InstallProgress::boxed()))
        .brain_progress(brain_progress())
        .start()
        .await?;
    let ops = session.ops();
    let follow = session.listen_flags().clone();
    let listening = match &session.microphone {
        Some(device) => {
            eprintln!("* listening on {device}");
            true
        }
        None => false,
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
    session.shutdown().await;
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
