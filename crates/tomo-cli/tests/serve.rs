//! `tomo serve` end to end: the real binary with a shipped profile, the scripted LLM, a WebSocket client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio_tungstenite::tungstenite::Message;
use tomo_testkit::{ScriptedServer, script};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

const TOKEN: &str = "test-token-0123456789abcdef";

#[tokio::test]
async fn serve_runs_a_turn_over_websocket_and_stops_on_sigterm() {
    let llm = ScriptedServer::start(vec![script::text_reply(
        "[joy] Hello from the server! How are you?",
    )])
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tomo"))
        .env_remove("TOMO_LLM_MODEL")
        .env_remove("TOMO_LLM_API_KEY")
        .env_remove("TOMO_PLUGINS_DIR")
        .env("TOMO_SERVER_TOKEN", TOKEN)
        .env("TOMO_LLM_BASE_URL", llm.base_url())
        .env("TOMO_DATA_DIR", data.path())
        .env("RUST_LOG", "warn")
        .args(["serve", "--text", "--port", "0", "--profile"])
        .arg(repo("profiles/hana.toml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), stdout.next_line())
        .await
        .expect("no `listening on` line within 30 s")
        .unwrap()
        .expect("tomo serve exited before listening");
    let base = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .trim_end_matches('/')
        .to_owned();
    let addr = base.strip_prefix("http://").unwrap().to_owned();
    assert!(
        addr.starts_with("127.0.0.1:"),
        "loopback by default: {addr}"
    );

    let profiles: Value = serde_json::from_str(
        &reqwest::get(format!("{base}/api/profiles?token={TOKEN}"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = profiles
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"Hana") && names.contains(&"Kuro"),
        "{profiles}"
    );

    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws?token={TOKEN}"))
        .await
        .unwrap();
    let mut frames = Vec::new();
    let mut sent = false;
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("no event within 30 s")
            .expect("socket closed")
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let frame: Value = serde_json::from_str(text.as_str()).unwrap();
        if frame["type"] == "session_ready" && !sent {
            assert_eq!(frame["character"], "Hana");
            ws.send(Message::text(r#"{"type":"user_text","text":"hello?"}"#))
                .await
                .unwrap();
            sent = true;
        }
        let done = frame["type"] == "state_changed" && frame["to"] == "idle";
        frames.push(frame);
        if done {
            break;
        }
    }
    let seqs: Vec<u64> = frames.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let finished = frames
        .iter()
        .find(|f| f["type"] == "turn_finished")
        .expect("turn_finished");
    assert_eq!(
        finished["text"],
        "[joy] Hello from the server! How are you?"
    );
    assert!(frames.iter().any(|f| f["type"] == "text_delta"));
    let sentence = frames.iter().find(|f| f["type"] == "sentence").unwrap();
    assert_eq!(
        sentence["sentence"]["display_text"],
        "Hello from the server!"
    );

    // SIGTERM stops it cleanly, with a client still connected.
    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(40), child.wait())
        .await
        .expect("tomo serve did not stop after SIGTERM")
        .unwrap();
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr)
        .await
        .unwrap();
    assert!(status.success(), "{status}; stderr: {stderr}");
    // The socket was closed by the server, not left hanging.
    let end = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .unwrap();
    assert!(
        matches!(end, None | Some(Ok(Message::Close(_))) | Some(Err(_))),
        "{end:?}"
    );
}

#[tokio::test]
async fn serve_refuses_a_non_loopback_bind_without_token_before_starting_anything() {
    let data = tempfile::tempdir().unwrap();
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(env!("CARGO_BIN_EXE_tomo"))
            .env_remove("TOMO_SERVER_TOKEN")
            .env("TOMO_DATA_DIR", data.path())
            .env("TOMO_LLM_BASE_URL", "http://127.0.0.1:9/v1")
            .args([
                "serve",
                "--text",
                "--bind",
                "0.0.0.0",
                "--allow-remote",
                "--port",
                "0",
            ])
            .arg("--profile")
            .arg(repo("profiles/hana.toml"))
            .output(),
    )
    .await
    .expect("tomo serve hung")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("TOMO_SERVER_TOKEN"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing listened");
    assert_eq!(
        std::fs::read_dir(data.path()).unwrap().count(),
        0,
        "no session was started"
    );
}
