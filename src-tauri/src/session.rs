//! The session inside the app, assembled by tomo-runtime's `SessionBuilder` like every front end's:
//! models installed on first run, voice in and out when there are a microphone, speakers and models,
//! text otherwise; events into the replay buffer and out to the webview.

use std::path::PathBuf;

use anyhow::Context;
use tauri::{AppHandle, Manager};
use tauri_specta::Event as _;
use tomo_config::profile::load_profile;
use tomo_models::{InstallEvent, ModelStore};
use tomo_protocol::Event;
use tomo_runtime::{EnvOptions, ModelInstall, SessionBuilder, VoiceFlags};

use crate::events::SessionEvent;
use crate::state::AppState;

/// How the app was asked to run the session.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    pub profile: PathBuf,
    pub env: EnvOptions,
    pub voice: VoiceFlags,
}

/// Starts the session and the event pump. Errors are for the log: the window stays up (the UI shows it
/// is not connected).
pub async fn start(app: AppHandle, options: SessionOptions) -> anyhow::Result<()> {
    let loaded = load_profile(&options.profile)
        .with_context(|| format!("cannot load the profile {}", options.profile.display()))?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    let flags = app.state::<AppState>().listen.clone();
    let character = loaded.profile.character.name.clone();
    let brain_app = app.clone();
    let mut said_loading = false;
    let (session, mut events) = SessionBuilder::new(&options.profile, loaded.profile)
        .listen_flags(flags)
        .brain_progress(move |progress| {
            if let tomo_runtime::BrainProgress::Loading { model, .. } = progress
                && !std::mem::replace(&mut said_loading, true)
            {
                let message = crate::startup::loading_brain_message(&character, &model);
                crate::startup::set(
                    &brain_app,
                    crate::startup::Startup::LoadingBrain { message },
                );
            }
        })
        .voice(
            &options.voice,
            install_progress(&app, &options.profile, &options.env, options.voice.text),
        )
        .env(options.env)
        .start()
        .await?;
    crate::startup::set(&app, crate::startup::Startup::Ready);
    if let Some(device) = &session.microphone {
        tracing::info!(%device, "listening");
    }
    let replay = {
        let state = app.state::<AppState>();
        state.set_session(session);
        std::sync::Arc::clone(&state.replay)
    };
    tauri::async_runtime::spawn(async move {
        while let Some(envelope) = events.recv().await {
            match &envelope.event {
                // The session owns the mute state (tray and UI both send the op): the tray's check mark
                // follows what it says.
                Event::ModeChanged { mic_muted, .. } => {
                    tracing::debug!(mic_muted, "mode changed");
                    crate::tray::show_mic_muted(&app, *mic_muted)
                }
                // What the session and the speakers did, for diagnosing (RUST_LOG=tomo_desktop=debug).
                Event::SessionReady { character, .. } => {
                    tracing::debug!(%character, "session ready")
                }
                Event::AudioStarted {
                    sentence_index,
                    duration_ms,
                    ..
                } => tracing::debug!(sentence_index, duration_ms, "audio started"),
                Event::PlaybackDrained { .. } => tracing::debug!("playback drained"),
                _ => {}
            }
            // Into the buffer first: a webview asking `events_since` right now sees it there or live.
            replay.push(&envelope);
            if let Err(error) = SessionEvent(envelope).emit(&app) {
                tracing::warn!(%error, "cannot deliver a session event to the webview");
            }
        }
        tracing::info!("session ended");
    });
    Ok(())
}

/// First-run model install, shown in the window (startup.rs) and in the log (per-chunk download
/// progress is too chatty for it).
fn install_progress(
    app: &AppHandle,
    profile_path: &std::path::Path,
    env: &EnvOptions,
    text_only: bool,
) -> ModelInstall {
    let missing = ModelStore::from_env().ok().and_then(|store| {
        let profile = load_profile(profile_path).ok()?.profile;
        let mut missing = if text_only {
            Vec::new()
        } else {
            tomo_runtime::voice::missing_models(&store, &profile).ok()?
        };
        // The embedded brain's model is installed by the same first run (unless an endpoint overrides it).
        missing.extend(tomo_runtime::brain::missing_model(&store, &profile, env));
        (!missing.is_empty()).then(|| crate::startup::install_message(&store, &missing))
    });
    let mut progress =
        missing.map(|message| crate::startup::InstallProgress::new(app.clone(), message));
    ModelInstall::Install(Box::new(move |event: InstallEvent| {
        if !matches!(event, InstallEvent::Downloading { .. }) {
            tracing::info!(?event, "model install");
        }
        if let Some(progress) = progress.as_mut() {
            progress.on_event(&event);
        }
    }))
}
