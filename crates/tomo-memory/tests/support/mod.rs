//! Shared test helpers: sessions with the real `plugins/memory/plugin.toml`, and a tiny HTTP/1.1 server
//! (no framework) for the memory-service and embeddings endpoints.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tomo_config::profile::load_profile;
use tomo_core::session::{Environment, LlmOverrides, SessionHandle, start_session};
use tomo_core::sink::TextSink;
use tomo_memory::MemoryPluginFactory;
use tomo_protocol::{Event, EventEnvelope, Op, SessionState};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Writes a profile enabling the memory plugin with `memory_overrides` (TOML lines).
pub fn write_profile(
    dir: &Path,
    agent_id: &str,
    base_url: &str,
    memory_overrides: &str,
) -> PathBuf {
    let path = dir.join(format!("{agent_id}.toml"));
    let text = format!(
        r#"[character]
name = "Char-{agent_id}"
agent_id = "{agent_id}"
persona = "You are a test character."

[llm]
base_url = "{base_url}"
model = "scripted-model"
context_turns = 100
context_budget_tokens = 100000

[plugins]
enabled = ["memory"]

[plugins.memory]
{memory_overrides}
"#
    );
    std::fs::write(&path, text).unwrap();
    path
}

pub struct Chat {
    pub session: SessionHandle,
    pub events: mpsc::UnboundedReceiver<EventEnvelope>,
}

pub async fn start(profile: &Path, data_root: &Path, factory: Arc<MemoryPluginFactory>) -> Chat {
    let env = Environment {
        plugins_dir: repo_root().join("plugins"),
        data_root: data_root.to_path_buf(),
        llm: LlmOverrides::default(),
        llm_connector: std::sync::Arc::new(tomo_openai::OpenAiConnector),
        hook_timeout: Duration::from_secs(5),
        extra_hooks: Vec::new(),
        plugin_factories: std::iter::once(
            factory as std::sync::Arc<dyn tomo_plugin_api::PluginFactory>,
        )
        .chain(tomo_plugins::builtin_factories())
        .collect(),
    };
    let loaded = load_profile(profile).unwrap();
    let (session, events) = start_session(loaded.profile, env, Arc::new(TextSink))
        .await
        .unwrap();
    let mut chat = Chat { session, events };
    let ready = chat
        .until(|e| matches!(e, Event::SessionReady { .. }))
        .await;
    // A plugin that failed to load is an `error` event before `session_ready`.
    assert!(
        !ready.iter().any(|e| matches!(e, Event::Error { .. })),
        "{ready:#?}"
    );
    chat
}

impl Chat {
    /// Collects events until `done` matches one (inclusive). Panics after 20 s.
    pub async fn until(&mut self, done: impl Fn(&Event) -> bool) -> Vec<Event> {
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let next = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out; events so far: {seen:#?}"))
                .expect("session ended");
            let stop = done(&next.event);
            seen.push(next.event);
            if stop {
                return seen;
            }
        }
    }

    /// Sends one user message and returns the events of its turn, up to Idle.
    pub async fn say(&mut self, text: &str) -> Vec<Event> {
        self.session
            .send(Op::UserText {
                text: text.to_owned(),
            })
            .await
            .unwrap();
        self.until(|e| {
            matches!(
                e,
                Event::StateChanged {
                    to: SessionState::Idle,
                    ..
                }
            )
        })
        .await
    }

    pub async fn stop(self) {
        self.session.send(Op::Shutdown).await.ok();
        self.session.join().await;
    }
}

/// The user message (last message) of a recorded chat request.
pub fn last_user_message(request: &tomo_testkit::RecordedRequest) -> String {
    request
        .messages()
        .last()
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The `[memory context]` block of a user message, or "" when there is none.
pub fn memory_block(user_message: &str) -> String {
    user_message
        .split_once("[memory context]")
        .and_then(|(_, rest)| rest.split_once("[/memory context]"))
        .map(|(block, _)| block.to_owned())
        .unwrap_or_default()
}

/// One request seen by [`TinyServer`].
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub body: Value,
}

pub type Responder = Arc<dyn Fn(&Seen) -> (u16, Value) + Send + Sync>;

/// A minimal HTTP/1.1 JSON server: one request per connection, answered by `responder`.
pub struct TinyServer {
    pub base_url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TinyServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TinyServer {
    pub async fn start(responder: Responder) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    continue;
                };
                let (responder, log) = (Arc::clone(&responder), Arc::clone(&log));
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut stream).await else {
                        return;
                    };
                    log.lock().unwrap().push(request.clone());
                    let (status, body) = responder(&request);
                    let body = body.to_string();
                    let head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(body.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self {
            base_url,
            seen,
            task,
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let length = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut tmp).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    Some(Seen {
        method,
        target,
        body,
    })
}
