//! `tomo serve`: one session over WebSocket (see the `tomo-server` crate for the protocol), the web UI's
//! files at `/`. Voice output plays on this machine's speakers; clients get the events (subtitles,
//! lip-sync envelopes) either way.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use tomo_runtime::paths::{live2d_models_dir_for, profiles_dir_for};
use tomo_runtime::{ModelInstall, SessionBuilder, SessionFlags, VoiceFlags};
use tomo_server::{Server, ServerConfig};

use crate::load::load_profile_or_report;
use crate::models_cmd::{InstallProgress, brain_progress};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The character profile the session starts with (profiles/*.toml).
    #[arg(long, short)]
    pub profile: PathBuf,
    /// Port to listen on (0: any free port; the address is printed as `listening on http://…`).
    #[arg(long, default_value_t = 7860)]
    pub port: u16,
    /// Address to bind. Anything but loopback also needs --allow-remote and a token.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// Allow binding a non-loopback address (anyone who can reach it and has the token drives the session).
    #[arg(long)]
    pub allow_remote: bool,
    /// Access token every request must carry (Authorization: Bearer, ?token=, or the cookie the printed
    /// address sets). Made up anew for every run when not given. Prefer the environment variable: flags
    /// show up in `ps`.
    #[arg(long, env = "TOMO_SERVER_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Another browser origin allowed to open the socket (for UI development, e.g.
    /// http://localhost:5173). Repeatable.
    #[arg(long = "allow-origin")]
    pub allowed_origins: Vec<String>,
    /// The built web UI (default: ui/dist if it exists).
    #[arg(long)]
    pub ui_dir: Option<PathBuf>,
    /// Profiles clients may switch to (default: the folder of --profile).
    #[arg(long)]
    pub profiles_dir: Option<PathBuf>,
    /// Your own Live2D models, served at /live2d/ ahead of the bundled ones (default: assets/live2d beside
    /// the profiles folder).
    #[arg(long)]
    pub models_dir: Option<PathBuf>,
    #[command(flatten)]
    pub voice: VoiceFlags,
    #[command(flatten)]
    pub session: SessionFlags,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let Some(profile) = load_profile_or_report(&args.profile) else {
        return Ok(ExitCode::from(2));
    };
    let ui_dir = match &args.ui_dir {
        Some(dir) if !dir.is_dir() => bail!("--ui-dir {}: no such directory", dir.display()),
        Some(dir) => Some(dir.clone()),
        None => Some(PathBuf::from("ui/dist")).filter(|d| d.is_dir()),
    };
    let profiles_dir = profiles_dir_for(&args.profile, args.profiles_dir.as_deref());
    let models_dir = match &args.models_dir {
        Some(dir) if !dir.is_dir() => bail!("--models-dir {}: no such directory", dir.display()),
        explicit => live2d_models_dir_for(&profiles_dir, explicit.as_deref()),
    };
    // Loopback is not a trust boundary: without a token any local process could drive the session, so
    // a loopback server makes one up. Exposing the session on a network needs one the user chose.
    let token = match args.token.clone().filter(|t| !t.is_empty()) {
        Some(token) => Some(token),
        None if args.bind.is_loopback() => Some(tomo_server::auth::generate_token()?),
        None => None,
    };
    let config = ServerConfig {
        addr: SocketAddr::new(args.bind, args.port),
        allow_remote: args.allow_remote,
        token: token.clone(),
        allowed_origins: args.allowed_origins.clone(),
        ui_dir: ui_dir.clone(),
        models_dir: models_dir.clone(),
        profiles_dir: Some(profiles_dir),
        ..ServerConfig::default()
    };
    // Refuse an unsafe bind before the session touches memory, plugins or the LLM.
    config.check()?;
    // What goes wrong with the microphone or the speakers is told to the clients (as `notice` events).
    let (session, events) = SessionBuilder::new(&args.profile, profile)
        .env(args.session.env_options())
        .ask_about_commands_on_terminal()
        .voice(&args.voice, ModelInstall::Install(InstallProgress::boxed()))
        .brain_progress(brain_progress())
        .start()
        .await?;
    let server = match Server::start(config, session.ops(), events).await {
        Ok(server) => server,
        Err(error) => {
            session.shutdown().await;
            return Err(error.into());
        }
    };
    let addr = server.local_addr();
    // Tests and scripts read this line to learn the port.
    println!("listening on http://{addr}/");
    std::io::stdout().flush().ok();
    // The address with the token: the page keeps it in a cookie, so only this browser gets in.
    if let Some(token) = &token {
        eprintln!("* open http://{addr}/?token={token}");
    }
    match &ui_dir {
        Some(dir) => eprintln!("* UI from {}; socket at ws://{addr}/ws", dir.display()),
        None => {
            eprintln!("* no UI directory (build ui/ or pass --ui-dir); socket at ws://{addr}/ws")
        }
    }
    if let Some(dir) = &models_dir {
        eprintln!("* your Live2D models from {} (at /live2d/)", dir.display());
    }
    if let Some(device) = &session.microphone {
        eprintln!("* listening on the microphone {device}");
    }
    eprintln!("* Ctrl-C stops the server.");

    stop_signal().await;
    eprintln!("* stopping");
    if let Err(error) = server.shutdown().await {
        eprintln!("! {error}");
    }
    session.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C, or SIGTERM from a service manager or a test harness.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
