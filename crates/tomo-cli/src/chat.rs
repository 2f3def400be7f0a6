//! `tomo chat`: interactive or one-shot text conversation with a character.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use std::io::IsTerminal;

use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::mpsc;
use tomo_protocol::{ApprovalRequest, Event, EventEnvelope, Op, SessionState};
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
        .ask_about_commands_on_terminal()
        .start()
        .await?;
    let mut renderer = Renderer::new(args.json);
    let ops = session.ops();
    // One reader of stdin for messages and for answers to the session's questions.
    let mut lines = BufReader::new(tokio::io::stdin()).lines();

    let failed = match &args.once {
        Some(text) => {
            ops.send(Op::UserText { text: text.clone() }).await?;
            wait_for_turn(&mut events, &mut renderer, &ops, &mut lines).await
        }
        None => interactive(&mut events, &mut renderer, &ops, &mut lines).await?,
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
    lines: &mut Lines<BufReader<Stdin>>,
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
            Event::ApprovalRequested { id, request } => {
                answer_on_terminal(*id, request, ops, lines).await;
            }
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

/// Asks the user about the session's question on the terminal (y/N) and sends the answer; without a
/// terminal nobody can answer here (a tool call times out as a no, a command stays off until allowed).
async fn answer_on_terminal(
    id: u64,
    request: &ApprovalRequest,
    ops: &mpsc::Sender<Op>,
    lines: &mut Lines<BufReader<Stdin>>,
) {
    if !std::io::stdin().is_terminal() {
        return;
    }
    let question = match request {
        ApprovalRequest::RunCommand {
            plugin, command, ..
        } => format!("plugin `{plugin}` wants to run `{command}`. Allow it (remembered)?"),
        ApprovalRequest::ToolCall {
            tool_name, args, ..
        } => format!("{tool_name} wants to run with {args}. Allow it this once?"),
    };
    eprint!("{question} [y/N] ");
    let allow = matches!(lines.next_line().await, Ok(Some(line)) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"));
    ops.send(Op::Approve { id, allow }).await.ok();
}

async fn interactive(
    events: &mut mpsc::UnboundedReceiver<EventEnvelope>,
    renderer: &mut Renderer,
    ops: &mpsc::Sender<Op>,
    lines: &mut Lines<BufReader<Stdin>>,
) -> anyhow::Result<bool> {
    // Show what arrived at start-up (session_ready, plugin problems, questions).
    tokio::time::sleep(Duration::from_millis(50)).await;
    while let Ok(envelope) = events.try_recv() {
        renderer.show(&envelope);
        if let Event::ApprovalRequested { id, request } = &envelope.event {
            answer_on_terminal(*id, request, ops, lines).await;
        }
    }
    eprintln!(
        "Type a message. Ctrl-C interrupts an answer, Ctrl-D quits, `/switch <profile.toml>` changes character."
    );
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
        any_failed |= wait_for_turn(events, renderer, ops, lines).await;
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
