//! The session inside the app: profile, models (installed on first run), voice in and out when there are
//! a microphone, speakers and models, text otherwise; events into the replay buffer and out to the webview.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use tauri::{AppHandle, Manager};
use tauri_specta::Event as _;
use tomo_config::profile::load_profile;
use tomo_core::session::start_session;
use tomo_core::sink::{OutputSink, TextSink};
use tomo_protocol::Event;
use tomo_runtime::{EnvOptions, Notify, SessionNotices, start_listening, voice};
use tomo_speech::models::ModelStore;

use crate::events::SessionEvent;
use crate::state::AppState;

/// How the app was asked to run the session.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    pub profile: PathBuf,
    /// No microphone, no speakers: typed messages and text answers.
    pub text: bool,
    pub env: EnvOptions,
    pub tts_workers: usize,
}

/// Starts the session and the event pump. Errors are for the log: the window stays up (the UI shows it
/// is not connected).
pub async fn start(app: AppHandle, options: SessionOptions) -> anyhow::Result<()> {
    let loaded = load_profile(&options.profile)
        .with_context(|| format!("cannot load the profile {}", options.profile.display()))?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    let profile = loaded.profile;
    // Device and model problems become `notice` events: the UI shows them (there is no terminal).
    let notices = SessionNotices::new();
    let notify: Notify = notices.notify();

    // Voice parts, each optional: a missing piece degrades to text rather than stopping the app.
    let mut listener = None;
    let sink: Arc<dyn OutputSink> = if options.text {
        Arc::new(TextSink)
    } else {
        match prepare_voice(&app, &profile).await {
            Ok(store) => {
                match (voice::vad(&store), voice::asr(&profile, &store)) {
                    (Ok(vad), Ok(asr)) => listener = Some((vad, asr)),
                    (Err(error), _) | (_, Err(error)) => {
                        notify(&format!(
                            "! no speech input ({error:#}); type your messages"
                        ));
                    }
                }
                match tomo_runtime::speaker_sink(&profile, &store, options.tts_workers) {
                    Ok(sink) => sink,
                    Err(error) => {
                        notify(&format!("! {error:#}; answers are text only"));
                        Arc::new(TextSink)
                    }
                }
            }
            Err(error) => {
                notify(&format!(
                    "! voice models unavailable ({error:#}); text only"
                ));
                Arc::new(TextSink)
            }
        }
    };
    let input_device = profile.asr.input_device.clone();
    let prepared = tomo_runtime::environment(&options.profile, &options.env);
    let (session, mut events) = start_session(profile, prepared.env.clone(), sink)
        .await
        .context("cannot start the session")?;
    let ops = session.sender();
    notices.connect(ops.clone());
    crate::startup::set(&app, crate::startup::Startup::Ready);
    let (replay, listen) = {
        let state = app.state::<AppState>();
        if let Some((vad, asr)) = listener {
            let flags = state.listen.clone();
            match start_listening(input_device, vad, asr, ops, flags, Arc::clone(&notify)) {
                Ok(device) => tracing::info!(%device, "listening"),
                Err(error) => notify(&format!("! no microphone ({error}); type your messages")),
            }
        }
        state.set_session(session, prepared);
        (Arc::clone(&state.replay), state.listen.clone())
    };
    tauri::async_runtime::spawn(async move {
        while let Some(envelope) = events.recv().await {
            // The session owns the mute state (tray and UI both send the op): the microphone and the
            // tray's check mark follow what it says.
            listen.follow(&envelope.event);
            match &envelope.event {
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

/// The model store with everything the profile needs, installed from PyPI on the first run.
/// The progress is shown in the window (packaging: startup.rs).
async fn prepare_voice(
    app: &AppHandle,
    profile: &tomo_config::profile::Profile,
) -> anyhow::Result<ModelStore> {
    let store = ModelStore::from_env()?;
    let install_store = store.clone();
    let install_profile = profile.clone();
    let app = app.clone();
    let installed = tauri::async_runtime::spawn_blocking(move || {
        let missing = voice::missing_models(&install_store, &install_profile)?;
        let mut progress = (!missing.is_empty()).then(|| {
            let message = crate::startup::install_message(&install_store, &missing);
            crate::startup::InstallProgress::new(app, message)
        });
        voice::install_missing(&install_store, &install_profile, &mut |event| {
            if let Some(progress) = progress.as_mut() {
                progress.on_event(&event);
            }
        })
    })
    .await??;
    if !installed.is_empty() {
        tracing::info!(models = ?installed, root = %store.root.display(), "first run: models installed");
    }
    Ok(store)
}
