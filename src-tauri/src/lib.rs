//! The Tomo desktop app: the web UI (`ui/dist`, embedded at compile time) in a Tauri window, normal or pet
//! mode, with the session running in-process (text and voice; see `tomo-runtime`). The webview talks to
//! it through typed commands and one typed event (see [`bindings`]).

pub mod bindings;
mod command_error;
mod commands;
mod config;
mod events;
mod models;
mod pet;
mod replay;
mod session;
mod state;
mod tray;
// Packaging (issue 15): running outside the repository, one instance, autostart, startup in the window.
mod autostart;
mod main_window;
mod resources;
mod single_instance;
mod startup;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tauri::{Manager, RunEvent, WindowEvent};
use tomo_runtime::{EnvOptions, SessionFlags, VoiceFlags};

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
    /// The character profile the session starts with (default: hana.toml of the installed app, else
    /// profiles/hana.toml in the working directory).
    #[arg(long, short, env = "TOMO_PROFILE")]
    profile: Option<PathBuf>,
    /// Profiles the UI and the tray may switch to (default: the folder of --profile), listed with your own
    /// (~/.config/tomo/profiles).
    #[arg(long)]
    profiles_dir: Option<PathBuf>,
    /// Your own Live2D models, shown ahead of the bundled ones (default: assets/live2d beside the
    /// profiles folder; for the installed app ~/.local/share/tomo/live2d).
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
    // whisper.cpp logs "failed to encode" / "failed to decode" at error each time a stale recognition is
    // stopped on purpose (the speaker went on after a pause); its real failures come back as errors the
    // session reports (RUST_LOG=whisper_rs=debug shows whisper.cpp's own lines).
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,whisper_rs=off".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut context = tauri::generate_context!();
    // Packaging: profiles, plugins and models wherever the app was started from (resources.rs).
    let request = resources::Request {
        profile: args.profile.clone(),
        profiles_dir: args.profiles_dir.clone(),
        models_dir: args.models_dir.clone(),
        plugins_dir: args.session.plugins_dir.clone(),
        resource_dir: tauri::utils::platform::resource_dir(
            context.package_info(),
            &tauri::Env::default(),
        )
        .ok(),
        ..resources::Request::with_platform_dirs(args.session.data_dir.clone())
    };
    // Packaging: a second launch shows the first window instead of a second session (single_instance.rs).
    let instance = match single_instance::claim(&request.data_root) {
        Ok(single_instance::Claim::First(instance)) => Some(instance),
        Ok(single_instance::Claim::AlreadyRunning { socket }) => {
            tracing::info!(socket = %socket.display(), "Tomo is already running: its window was brought forward");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            tracing::warn!(%error, "cannot make sure only one Tomo runs");
            None
        }
    };
    let located = resources::locate(&request).and_then(|layout| {
        resources::check_writable(&request.data_root)?;
        resources::create_user_folders(&request, &layout);
        Ok(layout)
    });
    // A problem is shown in the window (startup.rs): a launcher leaves no terminal to read.
    let (layout, problem) = match located {
        Ok(layout) => (Some(layout), None),
        Err(error) => (None, Some(error.to_string())),
    };
    if let Some(layout) = &layout {
        tracing::info!(profile = %layout.profile.display(), dirs = ?layout.profiles.dirs(), origin = ?layout.origin, "characters");
    }
    let profiles = layout
        .as_ref()
        .map(|layout| layout.profiles.clone())
        .unwrap_or_default();
    let options = layout.as_ref().map(|layout| SessionOptions {
        profile: layout.profile.clone(),
        env: EnvOptions {
            plugins_dir: layout.plugins_dir.clone(),
            ..args.session.env_options()
        },
        voice: args.voice.clone(),
    });
    let models_dir = layout.as_ref().and_then(|layout| layout.models_dir.clone());
    match &models_dir {
        // Only an explicit --models-dir can be missing (the default is looked for): say so, like `tomo serve`.
        Some(dir) if args.models_dir.is_some() && !dir.is_dir() => {
            eprintln!("error: --models-dir {}: no such directory", dir.display());
            return ExitCode::from(2);
        }
        Some(dir) => tracing::info!(dir = %dir.display(), "your Live2D models"),
        None => {}
    }
    models::WithUserModels::install(&mut context, models_dir);
    let start_in_pet_mode = args.pet;
    let specta = bindings::builder();
    let app = tauri::Builder::default()
        .invoke_handler(specta.invoke_handler())
        .setup(move |app| {
            specta.mount_events(app);
            // Packaging: made here so a data folder that cannot be written does not stop the window.
            main_window::create(app)?;
            let config_dir = app.path().app_config_dir()?;
            let state = AppState::new(profiles, config_dir);
            let pet_mode = start_in_pet_mode || state.pet().config.pet_mode;
            app.manage(state);
            app.manage(startup::StartupState::default());
            if let Some(instance) = instance {
                let handle = app.handle().clone();
                instance.serve(move || single_instance::bring_forward(&handle));
            }
            // Without a tray the window still works (it has its own close): a desktop without a
            // StatusNotifier host, or an icon folder that cannot be written, does not stop the app.
            if let Err(error) = tray::build(app.handle()) {
                tracing::warn!(%error, "no tray icon");
            }
            pet::spawn_cursor_poll(app.handle().clone());
            if pet_mode && let Err(error) = pet::set_pet_mode(app.handle(), true) {
                tracing::warn!(%error, "cannot start in pet mode");
            }
            let handle = app.handle().clone();
            match (options, problem) {
                (Some(options), None) => {
                    tauri::async_runtime::spawn(async move {
                        if let Err(error) = session::start(handle.clone(), options).await {
                            let message = format!("{error:#}");
                            startup::set(&handle, startup::Startup::Failed { message });
                        }
                    });
                }
                (_, problem) => {
                    let message = problem.unwrap_or_else(|| "nothing to start".into());
                    startup::set(&handle, startup::Startup::Failed { message });
                }
            }
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
    single_instance::release(); // packaging: the next launch finds no stale socket
    app.exit(0);
}
