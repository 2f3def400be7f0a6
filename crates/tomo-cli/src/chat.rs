//! `tomo chat`: interactive or one-shot text conversation with a character.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tomo_core::profile::load_profile;
use tomo_core::protocol::{Event, EventEnvelope, Op, SessionState};
use tomo_core::session::{Environment, LlmOverrides, default_data_root, start_session};
use tomo_core::sink::TextSink;

use crate::ChatArgs;
use crate::paths::plugins_dir_for;
use crate::render::Renderer;

pub async fn run(args: ChatArgs) -> anyhow::Result<ExitCode> {
    let loaded = match load_profile(&args.profile) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("{error}");
            return Ok(ExitCode::from(2));
        }
    };
    for warning in &loaded.warnings {
        eprintln!("{warning}");
    }
    let memory = Arc::new(tomo_memory::MemoryPluginFactory::new());
    let env = Environment {
        plugins_dir: plugins_dir_for(&args.profile, args.plugins_dir.as_deref()),
        data_root: args.data_dir.clone().unwrap_or_else(default_data_root),
        llm: LlmOverrides {
            base_url: args.llm.llm_base_url.clone(),
            model: args.llm.llm_model.clone(),
            // Keys come from the environment only: a flag would end up in shell history and `ps`.
            api_key: std::env::var("TOMO_LLM_API_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
        },
        hook_timeout: Duration::from_secs(5),
        extra_hooks: Vec::new(),
        plugin_factories: vec![memory.clone()],
    };
    let (session, mut events) = start_session(loaded.profile, env, Arc::new(TextSink))
        .await
        .context("cannot start the session")?;
    let mut renderer = Renderer::new(args.json);
    let ops = session.sender();

    let failed = match &args.once {
        Some(text) => {
            ops.send(Op::UserText { text: text.clone() }).await?;
            wait_for_turn(&mut events, &mut renderer, &ops).await
        }
        None => interactive(&mut events, &mut renderer, &ops).await?,
    };
    ops.send(Op::Shutdown).await.ok();
    session.join().await;
    // Facts of the last turn are learned in the background; give that a moment before exiting.
    let _ = tokio::time::timeout(Duration::from_secs(30), memory.wait_idle()).await;
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
                    code: tomo_core::protocol::ErrorCode::Profile,
                    ..
                }
        ) {
            return;
        }
    }
}
