//! `tomo-llm-engine`: the embedded brain. llama.cpp (through the `llama-cpp-2` crate) serving the
//! OpenAI-compatible chat API on loopback, started and supervised by the app (crates/tomo-llm-supervisor).
//!
//! Why a separate process and not llama.cpp inside the app (measured on this tree, 2026-12-01):
//! - whisper-rs-sys 0.15 (whisper.cpp 1.8.3, linked into `tomo` and `tomo-desktop`) vendors ggml 0.9.5;
//!   llama-cpp-sys-2 0.1.161 vendors ggml 0.26.0. `nm -g --defined-only` on their static archives: 1,172
//!   global symbols are defined in both (ggml-base 721, ggml-cpu 452, ggml 28: `ggml_init`,
//!   `ggml_graph_compute`, every `dequantize_row_*` …), with different layouts: `enum ggml_op` gained
//!   `GGML_OP_COL2IM_1D` before most ops, so op numbers differ (`ggml_op_name(60)` is POOL_2D in one and
//!   POOL_1D in the other), and `enum ggml_type` has 41 vs 44 entries.
//! - Both build scripts emit the same `-l static=ggml-base` / `ggml-cpu` / `ggml`, each with its own
//!   search directory. The linker resolves every `-lggml-base` to the first directory's archive: a C probe
//!   linked with both search paths printed `ggml_version()=0.9.5` with whisper's directory first and
//!   `0.26.0` with llama's first, and even with both archives named explicitly it linked without a
//!   duplicate-symbol error (the second archive's members are never pulled). One of the two libraries
//!   then runs against the other's ggml: silently wrong op numbers, not a build failure. Matching them
//!   would mean pinning whisper.cpp and llama.cpp to one ggml commit, which neither crate offers.
//! - A crash, an abort in a GGML_ASSERT or an out-of-memory kill ends this process, not the companion: the
//!   turn ends with an error and the supervisor starts the engine again.
//! - Only this crate links llama.cpp (a 10-16 min cold build on 2 cores); nothing else rebuilds it.
//!
//! The cost is one loopback HTTP stream per answer (sub-millisecond per chunk, against ~50 ms per token).
//!
//! Protocol with the supervisor: the bearer token comes in `TOMO_LLM_ENGINE_TOKEN`; stdout carries
//! `LISTENING <url>`, `LOADING <fraction>`, then `READY` or `FAILED <message>`; logs go to stderr. With
//! `--exit-with-stdin` the engine exits when its stdin closes, so it never outlives the app, even one
//! killed with SIGKILL (the kernel closes the pipe).

mod api;
mod engine;
mod prompt;
mod queue;
mod server;
mod slots;
mod utf8;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use tokio::sync::watch;

use crate::engine::{Settings, Status};

/// Environment variable holding the bearer token every API request must carry.
const TOKEN_ENV: &str = "TOMO_LLM_ENGINE_TOKEN";

#[derive(Debug, Parser)]
#[command(
    name = "tomo-llm-engine",
    about = "Tomo's embedded LLM engine (llama.cpp) on loopback"
)]
struct Args {
    /// The GGUF model file.
    #[arg(long)]
    model: PathBuf,
    /// Loopback address to listen on (other addresses are refused).
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port; 0 picks a free one (printed on stdout).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// CPU threads for prompt evaluation and generation (default: all cores).
    #[arg(long)]
    threads: Option<i32>,
    /// Context of each slot, in tokens (prompt + answer).
    #[arg(long, default_value_t = 4096)]
    context: u32,
    /// Conversations kept warm at once (the chat, and side requests such as memory extraction).
    #[arg(long, default_value_t = 2)]
    slots: u32,
    /// Most tokens one answer may have (requests may ask for fewer).
    #[arg(long, default_value_t = 1024)]
    max_tokens: u32,
    /// Longest one answer may take, in seconds, before it is cut off.
    #[arg(long, default_value_t = 120)]
    max_seconds: u64,
    /// Temperature when a request sets none.
    #[arg(long, default_value_t = 0.7)]
    temperature: f32,
    /// How long a request that arrives during start-up waits for the model, in seconds.
    #[arg(long, default_value_t = 300)]
    load_wait_seconds: u64,
    /// Exit when stdin reaches its end (the supervisor holds the other end of a pipe).
    #[arg(long)]
    exit_with_stdin: bool,
    /// Show llama.cpp's own log lines.
    #[arg(long)]
    verbose_llama: bool,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    llama_cpp_2::send_logs_to_tracing(
        llama_cpp_2::LogOptions::default().with_logs_enabled(args.verbose_llama),
    );
    if !args.host.is_loopback() {
        bail!("--host {}: the engine listens on loopback only", args.host);
    }
    let token = std::env::var(TOKEN_ENV)
        .ok()
        .filter(|t| t.len() >= 16)
        .with_context(|| {
            format!("{TOKEN_ENV} must hold the bearer token (16 characters or more)")
        })?;
    if args.exit_with_stdin {
        std::thread::Builder::new()
            .name("stdin-watchdog".into())
            .spawn(|| {
                let mut sink = [0u8; 256];
                let mut stdin = std::io::stdin();
                while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
                tracing::info!("stdin closed: the app is gone, exiting");
                std::process::exit(0);
            })?;
    }
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(2, |n| i32::try_from(n.get()).unwrap_or(2))
    });
    let settings = Settings {
        model: args.model.clone(),
        threads: threads.max(1),
        slot_context: args.context.max(256),
        slots: args.slots.clamp(1, 8),
        max_tokens: args.max_tokens.max(1),
        max_time: Duration::from_secs(args.max_seconds.max(1)),
        default_temperature: args.temperature,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(serve(args, settings, token))
}

async fn serve(args: Args, settings: Settings, token: String) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.host, args.port))
        .await
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let address = listener.local_addr()?;
    say(&format!("LISTENING http://{address}"));

    let (status_tx, status_rx) = watch::channel(Status::Loading { progress: 0.0 });
    let status_tx = Arc::new(status_tx);
    let (jobs_tx, jobs_rx) = std::sync::mpsc::channel();
    let engine_status = Arc::clone(&status_tx);
    let mut last_said = -1.0f32;
    std::thread::Builder::new()
        .name("llama".into())
        .spawn(move || {
            engine::run(settings, engine_status, jobs_rx, move |progress| {
                // Every 5 %: enough for a progress bar, not a flood.
                if progress - last_said >= 0.05 || progress >= 1.0 {
                    last_said = progress;
                    say(&format!("LOADING {progress:.2}"));
                }
            })
        })?;
    let mut watch_status = status_rx.clone();
    tokio::spawn(async move {
        loop {
            let current = watch_status.borrow_and_update().clone();
            match current {
                Status::Ready { .. } => return say("READY"),
                Status::Failed { message } => {
                    say(&format!("FAILED {message}"));
                    // Nothing to serve: exit so the supervisor reports the message instead of a hang.
                    std::process::exit(2);
                }
                Status::Loading { .. } => {}
            }
            if watch_status.changed().await.is_err() {
                return;
            }
        }
    });
    let shared = Arc::new(server::Shared {
        token,
        status: status_rx,
        jobs: std::sync::Mutex::new(jobs_tx),
        load_wait: Duration::from_secs(args.load_wait_seconds),
        counter: AtomicU64::new(0),
    });
    axum::serve(listener, server::router(shared))
        .await
        .context("the HTTP server stopped")
}

/// One protocol line on stdout, flushed at once (the supervisor waits for it).
fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", line.replace('\n', " "));
    let _ = stdout.flush();
}
