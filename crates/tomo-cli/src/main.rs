//! `tomo`: the headless front end of the Tomo engine.

mod bench;
mod bench_device;
mod bench_llm;
mod bench_talk_over;
mod bench_vision;
mod chat;
mod load;
mod memory_cmd;
mod models_cmd;
mod plugins_cmd;
mod profile_cmd;
mod render;
mod run;
mod serve;
mod talk;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "tomo",
    version,
    about = "Tomo, a desktop AI companion (headless front end)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Talk to a character in the terminal, streaming its answer sentence by sentence.
    Chat(ChatArgs),
    /// Talk through the microphone and hear the character through the speakers (typing works too).
    Run(run::RunArgs),
    /// Serve the session over WebSocket (and the web UI) on 127.0.0.1.
    Serve(serve::ServeArgs),
    /// One voice turn from a WAV file to a WAV file, with a latency report.
    Talk(talk::TalkArgs),
    /// Benchmarks (not tests): `tomo bench voice`, `tomo bench vision`, `tomo bench llm`.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Check or describe character profiles.
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// Allow or refuse the programs plugins run: trust <id> | deny <id>.
    #[command(subcommand)]
    Plugins(plugins_cmd::PluginsCommand),
    /// See and delete what a character remembers: list, search <q>, forget <id> | --all.
    Memory(memory_cmd::MemoryArgs),
    /// List, install and download models (whisper, VAD, voices, ONNX Runtime).
    #[command(subcommand)]
    Models(models_cmd::ModelsCommand),
    /// The windows and monitors the game companion's screen watcher can watch (titles for
    /// `[plugins.screen_watch] window_title`).
    Windows,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// The character profile (profiles/*.toml).
    #[arg(long, short)]
    pub profile: PathBuf,
    /// Send one message, print the answer, and exit (non-zero if the turn failed).
    #[arg(long)]
    pub once: Option<String>,
    /// Print every event as one JSON line instead of the conversation.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub session: tomo_runtime::SessionFlags,
}

#[derive(Debug, Subcommand)]
enum ProfileCommand {
    /// Validate a profile like a compiler: file:line:column, field, what was expected.
    Check {
        file: PathBuf,
        #[arg(long, env = "TOMO_PLUGINS_DIR")]
        plugins_dir: Option<PathBuf>,
        /// Whose answers about the plugins' programs to show (default: the platform data dir).
        #[arg(long, env = "TOMO_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Print the JSON Schema of profiles.
    Schema,
}

fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Chat(args) => run_async(chat::run(args)),
        Command::Run(args) => run_async(run::run(args)),
        Command::Serve(args) => run_async(serve::run(args)),
        Command::Talk(args) => run_async(talk::run(args)),
        Command::Bench(command) => run_async(bench::run(command)),
        Command::Profile(ProfileCommand::Check {
            file,
            plugins_dir,
            data_dir,
        }) => Ok(profile_cmd::check(
            &file,
            plugins_dir.as_deref(),
            data_dir.as_deref(),
        )),
        Command::Profile(ProfileCommand::Schema) => profile_cmd::schema(),
        Command::Plugins(command) => plugins_cmd::run(command),
        Command::Memory(args) => memory_cmd::run(args),
        Command::Models(command) => models_cmd::run(command),
        Command::Windows => bench_vision::list_targets(),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_async<F: std::future::Future<Output = anyhow::Result<ExitCode>>>(
    future: F,
) -> anyhow::Result<ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(future)
}

/// Logs go to stderr (stdout carries the conversation or JSON events); `RUST_LOG` adjusts the level.
fn init_tracing() {
    use std::io::IsTerminal;
    // async-openai logs every 5xx body at warn; our own error event already says it, once. whisper.cpp
    // logs "failed to encode" / "failed to decode" at error each time a stale recognition is stopped on
    // purpose (the speaker went on after a pause); its real failures come back as errors the session
    // reports (RUST_LOG=whisper_rs=debug shows whisper.cpp's own lines).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,async_openai=error,whisper_rs=off")
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
