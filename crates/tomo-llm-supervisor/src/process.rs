//! The engine process: spawn, the start-up protocol on stdout, supervision, stop.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Notify, watch};

use crate::{
    EngineConfig, EngineError, EngineProgress, RESTART_GRACE, check_model, locate_engine, new_token,
};

/// Environment variable the engine reads its bearer token from (never on the command line, which other
/// local users can read in /proc).
const TOKEN_ENV: &str = "TOMO_LLM_ENGINE_TOKEN";
/// Lines of the engine's stderr kept for error messages.
const STDERR_TAIL: usize = 20;
/// From spawn to `LISTENING`: the process only parses its arguments and binds a socket.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, PartialEq)]
pub enum EngineState {
    Ready,
    /// The engine died and is being started again.
    Restarting {
        reason: String,
    },
    /// It died again soon after a restart, or could not be restarted: it stays down.
    Failed {
        reason: String,
    },
    Stopped,
}

/// A running engine. Cheap to clone; the engine stops when `stop` is called or the last clone is dropped.
#[derive(Debug, Clone)]
pub struct LocalEngine {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    base_url: String,
    token: String,
    pid: Arc<AtomicU32>,
    restarts: Arc<AtomicU32>,
    state: watch::Receiver<EngineState>,
    stop: Arc<Notify>,
    stopped: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub(crate) http: reqwest::Client,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}

/// One spawned engine process.
struct Running {
    child: Child,
    /// Held open: the engine exits when it closes (`--exit-with-stdin`).
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Running {
    fn stderr_tail(&self) -> String {
        tail(&self.stderr)
    }
}

fn tail(lines: &Mutex<VecDeque<String>>) -> String {
    lines
        .lock()
        .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

impl LocalEngine {
    /// Checks the model, starts the engine and waits until it serves (see the crate docs).
    pub async fn start(
        config: EngineConfig,
        mut progress: impl FnMut(EngineProgress) + Send,
    ) -> Result<Self, EngineError> {
        let started = Instant::now();
        check_model(&config)?;
        let binary = match &config.binary {
            Some(binary) => binary.clone(),
            None => locate_engine()?,
        };
        let token = new_token()?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| EngineError::Spawn {
                binary: binary.clone(),
                message: format!("HTTP client: {e}"),
            })?;
        let (running, port) = spawn(&config, &binary, &token, 0, &http, &mut progress).await?;
        progress(EngineProgress::Ready(started.elapsed()));
        let pid = Arc::new(AtomicU32::new(running.child.id().unwrap_or(0)));
        let restarts = Arc::new(AtomicU32::new(0));
        let (state_tx, state) = watch::channel(EngineState::Ready);
        let stop = Arc::new(Notify::new());
        let supervisor = Supervisor {
            config,
            binary,
            token: token.clone(),
            port,
            http: http.clone(),
            state: state_tx,
            pid: Arc::clone(&pid),
            restarts: Arc::clone(&restarts),
            stop: Arc::clone(&stop),
        };
        let task = tokio::spawn(supervisor.run(running));
        Ok(Self {
            inner: Arc::new(Inner {
                base_url: format!("http://127.0.0.1:{port}/v1"),
                token,
                pid,
                restarts,
                state,
                stop,
                stopped: Mutex::new(Some(task)),
                http,
            }),
        })
    }

    /// The OpenAI-compatible base URL (`http://127.0.0.1:<port>/v1`); it stays the same across restarts.
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// The bearer token the API wants (the client's `api_key`). Never log it.
    pub fn api_key(&self) -> &str {
        &self.inner.token
    }

    pub fn state(&self) -> EngineState {
        self.inner.state.borrow().clone()
    }

    /// Changes of state, for a UI ("restarting the brain…").
    pub fn subscribe(&self) -> watch::Receiver<EngineState> {
        self.inner.state.clone()
    }

    /// The engine process id (changes on restart); 0 when unknown.
    pub fn pid(&self) -> u32 {
        self.inner.pid.load(Ordering::Relaxed)
    }

    /// How often the engine was restarted after dying.
    pub fn restarts(&self) -> u32 {
        self.inner.restarts.load(Ordering::Relaxed)
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.inner.http
    }

    /// Stops the engine (closes its stdin, then kills it if it has not exited within 3 s) and waits.
    pub async fn stop(self) {
        self.inner.stop.notify_one();
        let task = self.inner.stopped.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

struct Supervisor {
    config: EngineConfig,
    binary: PathBuf,
    token: String,
    port: u16,
    http: reqwest::Client,
    state: watch::Sender<EngineState>,
    pid: Arc<AtomicU32>,
    restarts: Arc<AtomicU32>,
    stop: Arc<Notify>,
}

impl Supervisor {
    async fn run(self, mut running: Running) {
        let mut last_restart: Option<Instant> = None;
        loop {
            let exit = tokio::select! {
                () = self.stop.notified() => {
                    shut_down(running).await;
                    self.state.send_replace(EngineState::Stopped);
                    return;
                }
                exit = running.child.wait() => exit,
            };
            let status = exit.map_or_else(|e| e.to_string(), |s| s.to_string());
            let stderr = running.stderr_tail();
            let last_line = stderr.lines().last().unwrap_or_default().to_owned();
            let reason = format!("the engine exited ({status}) {last_line}")
                .trim()
                .to_owned();
            tracing::warn!(%reason, "embedded LLM engine died");
            if last_restart.is_some_and(|at| at.elapsed() < RESTART_GRACE) {
                self.state.send_replace(EngineState::Failed { reason });
                return;
            }
            self.state.send_replace(EngineState::Restarting {
                reason: reason.clone(),
            });
            let mut log_progress = |p: EngineProgress| tracing::debug!(?p, "engine restart");
            let spawned = tokio::select! {
                () = self.stop.notified() => {
                    self.state.send_replace(EngineState::Stopped);
                    return;
                }
                spawned = spawn(&self.config, &self.binary, &self.token, self.port, &self.http, &mut log_progress) => spawned,
            };
            match spawned {
                Ok((restarted, _)) => {
                    running = restarted;
                    self.pid
                        .store(running.child.id().unwrap_or(0), Ordering::Relaxed);
                    self.restarts.fetch_add(1, Ordering::Relaxed);
                    last_restart = Some(Instant::now());
                    tracing::info!("embedded LLM engine restarted");
                    self.state.send_replace(EngineState::Ready);
                }
                Err(error) => {
                    self.state.send_replace(EngineState::Failed {
                        reason: format!("{reason}; restarting failed: {error}"),
                    });
                    return;
                }
            }
        }
    }
}

async fn shut_down(mut running: Running) {
    drop(running.stdin.take());
    let exited = tokio::time::timeout(Duration::from_secs(3), running.child.wait()).await;
    if exited.is_err() {
        let _ = running.child.kill().await;
    }
}

/// Spawns the engine and follows its stdout protocol until `READY`, then checks `/health`.
async fn spawn(
    config: &EngineConfig,
    binary: &PathBuf,
    token: &str,
    port: u16,
    http: &reqwest::Client,
    progress: &mut (dyn FnMut(EngineProgress) + Send),
) -> Result<(Running, u16), EngineError> {
    let mut command = Command::new(binary);
    command
        .arg("--model")
        .arg(&config.model_path)
        .arg("--port")
        .arg(port.to_string())
        .arg("--context")
        .arg(config.context.to_string())
        .arg("--max-tokens")
        .arg(config.max_tokens.to_string())
        .arg("--max-seconds")
        .arg(config.max_answer_time.as_secs().max(1).to_string())
        .arg("--exit-with-stdin")
        .env(TOKEN_ENV, token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(threads) = config.threads {
        command.arg("--threads").arg(threads.to_string());
    }
    let mut child = command.spawn().map_err(|e| EngineError::Spawn {
        binary: binary.clone(),
        message: e.to_string(),
    })?;
    progress(EngineProgress::Spawned);
    let stdin = child.stdin.take();
    let stderr_lines = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
    if let Some(stderr) = child.stderr.take() {
        let lines = Arc::clone(&stderr_lines);
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                tracing::debug!(target: "tomo_llm_engine", "{line}");
                if let Ok(mut lines) = lines.lock() {
                    if lines.len() == STDERR_TAIL {
                        lines.pop_front();
                    }
                    lines.push_back(line);
                }
            }
        });
    }
    let Some(stdout) = child.stdout.take() else {
        return Err(EngineError::Spawn {
            binary: binary.clone(),
            message: "no stdout pipe".into(),
        });
    };
    let mut running = Running {
        child,
        stdin,
        stderr: stderr_lines,
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut port = port;
    let deadline = Instant::now() + LISTEN_TIMEOUT + config.load_timeout;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let line = match tokio::time::timeout(remaining, lines.next_line()).await {
            Err(_) => {
                return Err(EngineError::StartTimeout(
                    LISTEN_TIMEOUT + config.load_timeout,
                ));
            }
            Ok(Ok(Some(line))) => line,
            Ok(_) => return Err(exited(&mut running).await),
        };
        let (word, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        match word {
            "LISTENING" => {
                port = rest
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.trim().parse().ok())
                    .unwrap_or(port);
            }
            "LOADING" => {
                if let Ok(fraction) = rest.trim().parse::<f32>() {
                    progress(EngineProgress::Loading(fraction.clamp(0.0, 1.0)));
                }
            }
            "READY" => break,
            "FAILED" => {
                return Err(EngineError::LoadFailed {
                    path: config.model_path.clone(),
                    message: rest.to_owned(),
                });
            }
            _ => tracing::debug!(target: "tomo_llm_engine", "stdout: {line}"),
        }
    }
    // Later stdout lines are not part of the protocol; drain them so the pipe never fills.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let health = http
        .get(format!("http://127.0.0.1:{port}/health"))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .map_err(|e| EngineError::Request(format!("GET /health: {e}")))?;
    if !health.status().is_success() {
        return Err(EngineError::Request(format!(
            "GET /health answered HTTP {}",
            health.status().as_u16()
        )));
    }
    Ok((running, port))
}

async fn exited(running: &mut Running) -> EngineError {
    let status = tokio::time::timeout(Duration::from_secs(2), running.child.wait())
        .await
        .ok()
        .and_then(Result::ok)
        .map_or_else(|| "still running".to_owned(), |s| s.to_string());
    // The stderr reader may still be catching up with the last lines.
    tokio::time::sleep(Duration::from_millis(50)).await;
    EngineError::Exited {
        status,
        stderr: running.stderr_tail(),
    }
}
