//! Sessions on the real embedded brain: the `tomo-llm-engine` binary cargo built beside the test binaries
//! (`cargo build -p tomo-llm-engine`; scripts/test does it) and the SmolLM2 fixture from the model store
//! (`tomo models install --test-data`). Outside CI a missing piece skips the test.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tomo_config::profile::load_profile;
use tomo_protocol::{Event, EventEnvelope};
use tomo_runtime::{EnvOptions, RunningSession, SessionBuilder, StartError};
use tomo_testkit::prereq::{models_dir, skip_or_fail};

pub const FIXTURE: &str = "smollm2-135m";
pub const FIXTURE_FILE: &str = "llm/smollm2-135m-instruct-q4_1.gguf";

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether the engine binary and the fixture are there (else the test is skipped, or fails in CI).
pub fn prerequisites() -> bool {
    if let Err(error) = tomo_llm_supervisor::locate_engine() {
        skip_or_fail(&format!(
            "{error} (cargo build -p tomo-llm-engine before these tests)"
        ));
        return false;
    }
    let fixture = models_dir().join(FIXTURE_FILE);
    if !fixture.is_file() {
        skip_or_fail(&format!(
            "{} is not installed (tomo models install --test-data)",
            fixture.display()
        ));
        return false;
    }
    true
}

/// An embedded character on the fixture model (`extra` goes into its `[llm]` table).
pub fn write_profile(dir: &Path, file: &str, name: &str, extra: &str) -> PathBuf {
    let id = name.to_lowercase();
    let path = dir.join(file);
    std::fs::write(
        &path,
        format!(
            r#"[character]
name = "{name}"
agent_id = "{id}"
persona = "You are {name}, a cheerful companion. Keep answers short."

[llm]
engine = "embedded"
model = "{FIXTURE}"
temperature = 0.0
max_tokens = 48
context_budget_tokens = 1500
{extra}

[plugins]
enabled = ["time"]
"#
        ),
    )
    .unwrap();
    path
}

pub fn env(data: &Path) -> EnvOptions {
    EnvOptions {
        plugins_dir: Some(repo_root().join("plugins")),
        data_dir: Some(data.to_path_buf()),
        ..EnvOptions::default()
    }
}

pub async fn start(
    profile: &Path,
    data: &Path,
) -> Result<(RunningSession, mpsc::UnboundedReceiver<EventEnvelope>), StartError> {
    let loaded = load_profile(profile).unwrap();
    SessionBuilder::new(profile, loaded.profile)
        .env(env(data))
        .start()
        .await
}

/// Events until `done` matches one (inclusive); panics after `secs`.
pub async fn until(
    events: &mut mpsc::UnboundedReceiver<EventEnvelope>,
    secs: u64,
    done: impl Fn(&Event) -> bool,
) -> Vec<Event> {
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(secs), async {
        while let Some(envelope) = events.recv().await {
            let stop = done(&envelope.event);
            seen.push(envelope.event);
            if stop {
                return;
            }
        }
        panic!("the session ended");
    })
    .await
    .unwrap_or_else(|_| panic!("timed out; events so far: {seen:#?}"));
    seen
}

pub fn is_idle(event: &Event) -> bool {
    matches!(
        event,
        Event::StateChanged {
            to: tomo_protocol::SessionState::Idle,
            ..
        }
    )
}

/// Whether a process with this id still exists (a zombie counts as gone: the supervisor reaps it).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

/// Waits until `check` holds, up to `secs`.
pub async fn eventually(secs: u64, check: impl Fn() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while tokio::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}
