//! The Tomo desktop app: the web UI (`ui/dist`, embedded at compile time) in a Tauri window, normal or pet
//! mode, with the session running in-process (text and voice; see `tomo-runtime`). The webview talks to
//! it through typed commands and one typed event (see [`bindings`]).

pub mod bindings;
mod commands;
mod config;
mod events;
mod models;
mod pet;
mod replay;
mod session;
mod state;
mod tray;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tauri::{Manager, RunEvent, WindowEvent};
use tomo_runtime::{SessionFlags, VoiceFlags};

pub use commands::checked_op;
pub use config::DesktopConfig;
pub use events::{PetModeChanged, SessionEvent};
pub use pet::HitRegion;
pub use replay::{EventsSince, Replay};

use session::SessionOptions;
use state::AppState;

#[derive(Debug, Parser)]
#[command(name = "tomo-desktop", version, about = "Tomo, a desktop AI companion")]
struct Args {
    /// The character profile the session starts with.
    #[arg(
        long,
        short,
        env = "TOMO_PROFILE",
        default_value = "profiles/hana.toml"
    )]
    profile: PathBuf,
    /// Profiles the UI and the tray may switch to (default: the folder of --profile).
    #[arg(long)]
    profiles_dir: Option<PathBuf>,
    /// Your own Live2D models, shown ahead of the bundled ones (default: assets/live2d beside the
    /// profiles folder).
    #[arg(long)]
    models_dir: Option<PathBuf>,
    /// Start in pet mode (otherwise the last run's mode).
    #[arg(long)]
    pet: bool,
    #[command(flatten)]
    voice: VoiceFlags,
    #[command(flatten)]
    session: SessionFlags,
}

/// Runs the app until it quits. Returns only when it could not start.
pub fn run() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let profiles_dir =
        tomo_runtime::paths::profiles_dir_for(&args.profile, args.profiles_dir.as_deref());
    let options = SessionOptions {
        profile: args.profile.clone(),
        env: args.session.env_options(),
        voice: args.voice.clone(),
    };
    let models_dir =
        tomo_runtime::paths::live2d_models_dir_for(&profiles_dir, args.models_dir.as_deref());
    match &models_dir {
        // Only an explicit --models-dir can be missing (the default is looked for): say so, like `tomo serve`.
        Some(dir) if !dir.is_dir() => {
            eprintln!("error: --models-dir {}: no such directory", dir.display());
            return ExitCode::from(2);
        }
        Some(dir) => tracing::info!(dir = %dir.display(), "your Live2D models"),
        None => {}
    }
    let mut context = tauri::generate_context!();
    models::WithUserModels::install(&mut context, models_dir);
    let start_in_pet_mode = args.pet;
    let specta = bindings::builder();
    let app = tauri::Builder::default()
        .invoke_handler(specta.invoke_handler())
        .setup(move |app| {
            specta.mount_events(app);
            let config_dir = app.path().app_config_dir()?;
            let state = AppState::new(profiles_dir, config_dir);
            let pet_mode = start_in_pet_mode || state.pet().config.pet_mode;
            app.manage(state);
            tray::build(app.handle())?;
            pet::spawn_cursor_poll(app.handle().clone());
            if pet_mode && let Err(error) = pet::set_pet_mode(app.handle(), true) {
                tracing::warn!(%error, "cannot start in pet mode");
            }
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move {
                if let Err(error) = session::start(handle, options).await {
                    tracing::error!("{error:#}");
                }
            });
            Ok(())
        })
        .on_window_event(|window, event| {
            if let WindowEvent::Moved(_) = event
                && let Some(webview) = window.app_handle().get_webview_window(window.label())
            {
                pet::remember_position(window.app_handle(), &webview);
            }
        })
        .build(context);
    let app = match app {
        Ok(app) => app,
        Err(error) => {
            eprintln!("error: cannot start the desktop app: {error}");
            return ExitCode::FAILURE;
        }
    };
    app.run(|handle, event| {
        if let RunEvent::ExitRequested { api, .. } = event {
            let quitting = handle
                .try_state::<AppState>()
                .is_some_and(|s| s.quitting.load(std::sync::atomic::Ordering::SeqCst));
            if !quitting {
                // Closing the window: shut the session down first, then exit for real.
                api.prevent_exit();
                tauri::async_runtime::spawn(quit(handle.clone()));
            }
        }
    });
    ExitCode::SUCCESS
}

/// Clean exit: `shutdown` to the session, wait for it (history flushed), let memory settle, exit 0.
pub(crate) async fn quit(app: tauri::AppHandle) {
    let state = app.state::<AppState>();
    if state
        .quitting
        .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        return;
    }
    if let Ok(window) = pet::main_window(&app) {
        pet::remember_position(&app, &window);
    }
    if let Some(session) = state.take_session() {
        session.shutdown().await;
        tracing::info!("session shut down");
    }
    app.exit(0);
}
