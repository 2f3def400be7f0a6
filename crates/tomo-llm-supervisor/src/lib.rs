//! Runs the embedded brain: the `tomo-llm-engine` process (llama.cpp behind an OpenAI-compatible API on
//! loopback), for any front end. This crate links no llama.cpp (see crates/tomo-llm-engine/src/main.rs
//! for why the engine is a process of its own).
//!
//! ```text
//! let engine = LocalEngine::start(EngineConfig::new(model_path, "qwen2.5-coder-1.5b"), |p| show(p)).await?;
//! let endpoint = (engine.base_url(), engine.api_key());   // → LlmEndpoint { base_url, api_key, .. }
//! engine.warm_up(&system_and_history, &tools).await?;      // the first turn is fast
//! ...
//! engine.stop().await;                                     // also on drop; and if the app dies, the
//!                                                          // engine sees its stdin close and exits
//! ```
//!
//! - Start: checks the model file first (missing, or not the size the manifest says: a clear error that
//!   names the file and `tomo models install`), spawns the engine with a fresh bearer token, reports load
//!   progress, waits for `READY` and a healthy `GET /health`.
//! - Supervision: if the engine dies, it is started again once, on the same port and with the same token,
//!   so the client's endpoint stays valid; requests during the restart wait for the model (the engine
//!   listens before it loads). A second death within [`RESTART_GRACE`] of a restart leaves it stopped, with
//!   the reason in [`LocalEngine::state`].

mod process;
mod warm;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use process::{EngineState, LocalEngine};

/// A second crash within this time after a restart is not restarted again (a model that crashes the
/// engine on every load would otherwise loop).
pub const RESTART_GRACE: Duration = Duration::from_secs(60);

/// The engine binary's name (next to the app's own binary when installed or built by cargo).
pub const ENGINE_BINARY: &str = "tomo-llm-engine";

/// Environment variable naming the engine binary explicitly.
pub const ENGINE_PATH_ENV: &str = "TOMO_LLM_ENGINE";

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The engine binary; `None` = [`locate_engine`].
    pub binary: Option<PathBuf>,
    pub model_path: PathBuf,
    /// The model's name in the manifest, for messages (`tomo models install <name>`).
    pub model_name: String,
    /// The size the manifest gives: a quick check for a truncated file before loading it.
    pub expected_size: Option<u64>,
    /// CPU threads; `None` = all cores.
    pub threads: Option<u32>,
    /// Tokens per conversation slot (prompt + answer).
    pub context: u32,
    /// Cap on one answer's tokens (requests may ask for fewer).
    pub max_tokens: u32,
    /// Cap on one answer's wall time.
    pub max_answer_time: Duration,
    /// How long loading the model may take before start fails.
    pub load_timeout: Duration,
}

impl EngineConfig {
    pub fn new(model_path: impl Into<PathBuf>, model_name: impl Into<String>) -> Self {
        Self {
            binary: None,
            model_path: model_path.into(),
            model_name: model_name.into(),
            expected_size: None,
            threads: None,
            context: 4096,
            max_tokens: 1024,
            max_answer_time: Duration::from_secs(120),
            load_timeout: Duration::from_secs(120),
        }
    }
}

/// What `start` reports while it waits.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineProgress {
    /// The process was started.
    Spawned,
    /// Model loading, 0.0..=1.0.
    Loading(f32),
    /// Serving, after this long since `start` was called.
    Ready(Duration),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error(
        "the embedded LLM `{name}` is not installed (no file at {path}): run `tomo models install {name}`"
    )]
    ModelMissing { name: String, path: PathBuf },
    #[error(
        "the embedded LLM file {path} has {actual} bytes, not {expected} (a truncated or interrupted \
         install?): run `tomo models install --force {name}`"
    )]
    ModelTruncated {
        name: String,
        path: PathBuf,
        actual: u64,
        expected: u64,
    },
    #[error(
        "the embedded LLM engine `{ENGINE_BINARY}` was not found (looked in {looked}); build it with \
         `cargo build -p tomo-llm-engine` or set {ENGINE_PATH_ENV}"
    )]
    BinaryMissing { looked: String },
    #[error("cannot start the embedded LLM engine {binary}: {message}")]
    Spawn { binary: PathBuf, message: String },
    #[error("the embedded LLM engine could not load {path}: {message}")]
    LoadFailed { path: PathBuf, message: String },
    #[error("the embedded LLM engine exited while starting ({status}): {stderr}")]
    Exited { status: String, stderr: String },
    #[error("the embedded LLM engine did not get ready within {0:.0?}")]
    StartTimeout(Duration),
    #[error("the embedded LLM engine is not running: {0}")]
    NotRunning(String),
    #[error("the embedded LLM engine answered: {0}")]
    Request(String),
}

/// Checks the model file before the engine is started (the engine checks the GGUF header itself).
pub fn check_model(config: &EngineConfig) -> Result<(), EngineError> {
    let metadata = match std::fs::metadata(&config.model_path) {
        Ok(metadata) if metadata.is_file() => metadata,
        _ => {
            return Err(EngineError::ModelMissing {
                name: config.model_name.clone(),
                path: config.model_path.clone(),
            });
        }
    };
    match config.expected_size {
        Some(expected) if metadata.len() != expected => Err(EngineError::ModelTruncated {
            name: config.model_name.clone(),
            path: config.model_path.clone(),
            actual: metadata.len(),
            expected,
        }),
        _ => Ok(()),
    }
}

/// The engine binary: `$TOMO_LLM_ENGINE`, else next to the running binary, else one folder up (test
/// binaries live in `target/<profile>/deps/`, the engine in `target/<profile>/`).
pub fn locate_engine() -> Result<PathBuf, EngineError> {
    if let Some(path) = std::env::var_os(ENGINE_PATH_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let mut looked = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        let mut dir = exe.parent().map(Path::to_path_buf);
        for _ in 0..2 {
            let Some(current) = dir else { break };
            let candidate = current.join(ENGINE_BINARY);
            if candidate.is_file() {
                return Ok(candidate);
            }
            looked.push(current.display().to_string());
            dir = current.parent().map(Path::to_path_buf);
        }
    }
    Err(EngineError::BinaryMissing {
        looked: if looked.is_empty() {
            "nowhere: the running binary's path is unknown".to_owned()
        } else {
            looked.join(", ")
        },
    })
}

/// A fresh bearer token for one run of the engine (32 random bytes, hex).
fn new_token() -> Result<String, EngineError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| EngineError::Spawn {
        binary: PathBuf::from(ENGINE_BINARY),
        message: format!("no randomness for the access token: {e}"),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_missing_model_names_the_file_and_the_install_command() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig::new(dir.path().join("nope.gguf"), "smollm2-135m");
        let error = check_model(&config).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("nope.gguf"), "{text}");
        assert!(text.contains("tomo models install smollm2-135m"), "{text}");
    }

    #[test]
    fn a_short_model_file_is_reported_as_truncated_before_anything_starts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        std::fs::write(&path, b"GGUF1234").unwrap();
        let mut config = EngineConfig::new(&path, "m");
        config.expected_size = Some(1000);
        let text = check_model(&config).unwrap_err().to_string();
        assert!(text.contains("8 bytes, not 1000"), "{text}");
        assert!(text.contains("tomo models install --force m"), "{text}");
        config.expected_size = Some(8);
        assert_eq!(check_model(&config), Ok(()));
    }

    #[test]
    fn tokens_are_fresh_and_long() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
