//! `tomo chat`: interactive or one-shot text conversation with a character.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tomo_protocol::{Event, EventEnvelope, Op, SessionState};
use tomo_runtime::{ModelInstall, SessionBuilder};

use crate::ChatArgs;
use crate::load::load_profile_or_report;
use crate::models_cmd::{InstallProgress, brain_progress};
use crate::render::Renderer;

pub async fn run(args: ChatArgs) -> anyhow::Result<ExitCode> {
    let Some(profile) = load_profile_or_report(&args.profile) else {
        return Ok(ExitCode::from(2));
    };
    // Text only, but the embedded brain's model is installed on the first run like the voice's.
    let (session, mut events) = SessionBuilder::new(&args.profile, profile)
        .env(args.session.env_options())
        .install(ModelInstall::Install(InstallProgress::boxed()))
        .brain_progress(brain_progress())
        .start()
        .await?;
    let mut renderer = Renderer::new(args.json);
    let ops = session.ops();

    let failed = match &args.once {
        Some(text) => {
            ops.send(Op::UserText { text: text.clone() }).await?;
            wait_for_turn(&mut events, &mut renderer, &ops).await
        }
        None => interactive(&mut events, &mut renderer, &ops).await?,
    };
    session.shutdown().await;
    while let Ok(envelope) = events.try_recv() {
        renderer.show(&envelope);
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Shows events until the turn in flight is over (back to Idle). Ctrl-C interrupts it.
/// Returns whether the turn reported an error.
async fn wait_for_turn(
    events: &mut mpsc::UnboundedReceiver<EventEnvelope>,
    renderer: &mut Renderer,
    ops: &mpsc::Sender<Op>,
) -> bool {
    let mut started = false;
    let mut failed = false;
    loop {
        let envelope = tokio::select! {
            envelope = events.recv() => envelope,
            _ = tokio::signal::ctrl_c() => {
                ops.send(Op::Interrupt).await.ok();
                continue;
            }
        };
        let Some(envelope) = envelope else {
            return true;
        };
        renderer.show(&envelope);
        match &envelope.event {
            Event::TurnStarted { .. } => started = true,
            Event::Error { .. } if started => failed = true,
            Event::StateChanged {
                to: SessionState::Idle,
                ..
            } if started => return failed,
            _ => {}
        }
    }
}

async fn interactive(
    events: &mut mpsc::UnboundedReceiver<EventEnvelope>,
    renderer: &mut Renderer,
    ops: &mpsc::Sender<Op>,
) -> anyhow::Result<bool> {
    // Show what arrived at start-up (session_ready, plugin problems).
    tokio::time::sleep(Duration::from_millis(50)).await;
    while let Ok(envelope) = events.try_recv() {
        renderer.show(&envelope);
    }
    eprintln!(
        "Type a message. Ctrl-C interrupts an answer, Ctrl-D quits, `/switch <profile.toml>` changes character."
    );
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut any_failed = false;
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line?,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(line) = line else {
            return Ok(any_failed);
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/quit" || line == "/exit" {
            return Ok(any_failed);
        }
        if let Some(path) = line.strip_prefix("/switch ") {
            let path = PathBuf::from(path.trim());
            ops.send(Op::SwitchProfile {
                path: path.to_string_lossy().into_owned(),
            })
            .await?;
            wait_for_ready(events, renderer).await;
            continue;
        }
        ops.send(Op::UserText {
            text: line.to_owned(),
        })
        .await?;
        any_failed |= wait_for_turn(events, renderer, ops).await;
    }
}

async fn wait_for_ready(
    events: &mut mpsc::UnboundedReceiver<EventEnvelope>,
    renderer: &mut Renderer,
) {
    while let Some(envelope) = events.recv().await {
        renderer.show(&envelope);
        if matches!(
            envelope.event,
            Event::SessionReady { .. }
                | Event::Error {
                    code: tomo_protocol::ErrorCode::Profile,
                    ..
                }
        ) {
            return;
        }
    }
}
