//! Shared set-up for the tests that run the real engine: the SmolLM2 fixture from the model store
//! (`tomo models install --test-data` puts it there; scripts/test does that), the engine binary cargo
//! built for this package, and Tomo's own client pointed at it.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use tomo_llm::{LlmClient, LlmEndpoint};
use tomo_llm_supervisor::{EngineConfig, LocalEngine};

pub const FIXTURE: &str = "smollm2-135m";
pub const FIXTURE_FILE: &str = "llm/smollm2-135m-instruct-q4_1.gguf";
pub const FIXTURE_SIZE: u64 = 98_362_432;
/// The default brain: the only one of the three that calls tools from a plain request (SmolLM2-135M never
/// wrote a call in any prompt tried; see agent_loop.rs). A default model, so `tomo models install` and CI
/// have it.
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-1.5b";
pub const DEFAULT_FILE: &str = "llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
pub const DEFAULT_SIZE: u64 = 1_117_320_768;

/// The model store's root, as `tomo models` computes it (`$TOMO_MODELS_DIR`, else the data dir).
pub fn store_root() -> PathBuf {
    match std::env::var_os("TOMO_MODELS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => dirs::data_dir()
            .unwrap_or_else(|| PathBuf::from("."))
            .join("tomo")
            .join("models"),
    }
}

/// The fixture's path, or `None` (the test is skipped) outside CI when it is not installed.
pub fn fixture() -> Option<PathBuf> {
    installed(FIXTURE, FIXTURE_FILE)
}

/// The default model's path, or `None` outside CI when it is not installed.
pub fn default_model() -> Option<PathBuf> {
    installed(DEFAULT_MODEL, DEFAULT_FILE)
}

fn installed(name: &str, file: &str) -> Option<PathBuf> {
    let path = store_root().join(file);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{} is missing: CI must install it (`tomo models install --test-data`)",
            path.display()
        );
    }
    eprintln!(
        "skipped: {} is not installed (tomo models install {name})",
        path.display()
    );
    None
}

/// The default model's engine settings (the fixture's, with its name and size).
pub fn default_config(model: PathBuf) -> EngineConfig {
    let mut config = config(model);
    config.model_name = DEFAULT_MODEL.to_owned();
    config.expected_size = Some(DEFAULT_SIZE);
    config
}

pub fn config(model: PathBuf) -> EngineConfig {
    let mut config = EngineConfig::new(model, FIXTURE);
    config.binary = Some(PathBuf::from(env!("CARGO_BIN_EXE_tomo-llm-engine")));
    config.expected_size = Some(FIXTURE_SIZE);
    config.threads = Some(2);
    config.context = 2048;
    config.max_tokens = 256;
    config
}

pub async fn start(config: EngineConfig) -> LocalEngine {
    LocalEngine::start(config, |_| {})
        .await
        .expect("the engine starts")
}

/// Tomo's client on the engine; temperature 0 makes the tiny model's answers repeatable.
pub fn client(engine: &LocalEngine, max_tokens: Option<u32>) -> LlmClient {
    tomo_openai::connect(LlmEndpoint {
        base_url: engine.base_url().to_owned(),
        model: FIXTURE.to_owned(),
        api_key: Some(engine.api_key().to_owned()),
        temperature: Some(0.0),
        max_tokens,
        idle_timeout: Duration::from_secs(60),
    })
    .unwrap()
}
