//! A session on the scripted LLM behind a real `tomo-server` on 127.0.0.1, and a WebSocket client.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tempfile::TempDir;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tomo_config::profile::load_profile;
use tomo_core::session::{Environment, LlmOverrides, SessionHandle, start_session};
use tomo_core::sink::TextSink;
use tomo_server::{Server, ServerConfig};
use tomo_testkit::{ScriptedResponse, ScriptedServer};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub fn write_profile(
    dir: &Path,
    file: &str,
    name: &str,
    agent_id: &str,
    base_url: &str,
) -> PathBuf {
    let path = dir.join(file);
    let text = format!(
        r#"[character]
name = "{name}"
agent_id = "{agent_id}"
persona = "You are {name}, a test character."

[llm]
base_url = "{base_url}"
model = "scripted-model"

[live2d]
model = "assets/live2d/{agent_id}/{agent_id}.model.json"

[live2d.emotion_map]
joy = "f01"

[plugins]
enabled = []
"#
    );
    std::fs::write(&path, text).unwrap();
    path
}

pub struct Fixture {
    pub llm: ScriptedServer,
    pub server: Option<Server>,
    pub session: Option<SessionHandle>,
    pub dir: TempDir,
    pub profiles: PathBuf,
}

impl Fixture {
    /// Two profiles (`hana.toml`, `kuro.toml`) in `<tmp>/profiles`; the session starts as Hana.
    pub async fn start(
        script: Vec<ScriptedResponse>,
        tweak: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        let llm = ScriptedServer::start(script).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let profiles = dir.path().join("profiles");
        std::fs::create_dir(&profiles).unwrap();
        let hana = write_profile(&profiles, "hana.toml", "Hana", "hana", &llm.base_url());
        write_profile(&profiles, "kuro.toml", "Kuro", "kuro", &llm.base_url());
        let env = Environment {
            plugins_dir: dir.path().join("no-plugins"),
            data_root: dir.path().join("data"),
            llm: LlmOverrides::default(),
            llm_connector: std::sync::Arc::new(tomo_openai::OpenAiConnector),
            hook_timeout: Duration::from_millis(300),
            extra_hooks: Vec::new(),
            plugin_factories: tomo_plugins::builtin_factories(),
        };
        let profile = load_profile(&hana).unwrap().profile;
        let (session, events) = start_session(profile, env, Arc::new(TextSink))
            .await
            .unwrap();
        let mut config = ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            profiles_dir: Some(profiles.clone()),
            ..ServerConfig::default()
        };
        tweak(&mut config);
        let server = Server::start(config, session.sender(), events)
            .await
            .unwrap();
        Self {
            llm,
            server: Some(server),
            session: Some(session),
            dir,
            profiles,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.as_ref().unwrap().local_addr()
    }

    /// Polls `/health` until the session has emitted event `seq`. Panics after 15 s.
    pub async fn wait_for_seq(&self, seq: u64) {
        let url = format!("http://{}/health", self.addr());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let body = reqwest::get(&url).await.unwrap().text().await.unwrap();
            let health: Value = serde_json::from_str(&body).unwrap();
            if health["latest_seq"].as_u64().unwrap() >= seq {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "seq {seq} never came: {health}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `query` without the `?`, e.g. `last_seq=5`.
    pub async fn connect(&self, query: &str) -> Ws {
        let url = if query.is_empty() {
            format!("ws://{}/ws", self.addr())
        } else {
            format!("ws://{}/ws?{query}", self.addr())
        };
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        ws
    }
}

pub async fn send(ws: &mut Ws, json: &str) {
    ws.send(Message::text(json)).await.unwrap();
}

/// The next text frame as JSON (pings and pongs skipped). Panics after 15 s or when the socket closes.
pub async fn next(ws: &mut Ws) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(15), ws.next())
            .await
            .expect("no frame within 15 s")
            .expect("socket closed")
            .unwrap();
        match message {
            Message::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
            Message::Ping(_) | Message::Pong(_) => {}
            other => panic!("unexpected frame {other:?}"),
        }
    }
}

/// Frames until one matches `done` (inclusive).
pub async fn until(ws: &mut Ws, mut done: impl FnMut(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let frame = next(ws).await;
        let stop = done(&frame);
        seen.push(frame);
        if stop {
            return seen;
        }
    }
}

/// The last event of a turn: back to idle.
pub fn is_idle(frame: &Value) -> bool {
    frame["type"] == "state_changed" && frame["to"] == "idle"
}

pub fn types(frames: &[Value]) -> Vec<&str> {
    frames.iter().map(|f| f["type"].as_str().unwrap()).collect()
}

pub fn seqs(frames: &[Value]) -> Vec<u64> {
    frames.iter().map(|f| f["seq"].as_u64().unwrap()).collect()
}
