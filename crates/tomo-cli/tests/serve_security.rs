//! `tomo serve` against a local attacker, for real: the binary, real sockets, the user's scripted LLM and
//! an "exfiltration" server that records whatever reaches it. Loopback is not a trust boundary: another
//! process (or a web page) must not drive the session, and the user's API key must never reach a host
//! it was not configured for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tomo_testkit::{ScriptedServer, script};

const USER_KEY: &str = "sk-the-users-own-secret-key-123";

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// `tomo serve` with the user's key for `llm`; returns the child, `host:port` and the per-run token.
async fn serve(llm: &ScriptedServer, data: &Path) -> (Child, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tomo"))
        .env_remove("TOMO_LLM_MODEL")
        .env_remove("TOMO_PLUGINS_DIR")
        .env_remove("TOMO_SERVER_TOKEN")
        .env("TOMO_LLM_API_KEY", USER_KEY)
        .env("TOMO_LLM_BASE_URL", llm.base_url())
        .env("TOMO_DATA_DIR", data)
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
        .expect("no `listening on` line")
        .unwrap()
        .unwrap();
    let addr = first
        .strip_prefix("listening on http://")
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let token = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if let Some(rest) = line.strip_prefix(&format!("* open http://{addr}/?token=")) {
                return rest.to_owned();
            }
        }
        panic!("no address with a token printed");
    })
    .await
    .unwrap();
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    (child, addr, token)
}

async fn next(
    ws: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("no frame")
            .expect("socket closed")
            .unwrap();
        if let Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

#[tokio::test]
async fn another_local_process_cannot_drive_the_session_or_redirect_the_key() {
    let llm = ScriptedServer::start(vec![
        script::text_reply("Hello from your own model."),
        script::text_reply("unused"),
    ])
    .await
    .unwrap();
    let stranger = ScriptedServer::start(vec![
        script::text_reply("Thanks for the key."),
        script::text_reply("Thanks again."),
    ])
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let (_child, addr, token) = serve(&llm, data.path()).await;
    assert_eq!(token.len(), 64, "a fresh random token per run");

    // A process without the token: no socket, no API, no page.
    match tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 401)
        }
        other => panic!("expected 401, got {other:?}"),
    }
    let http = reqwest::Client::new();
    for path in ["/", "/api/profiles", "/health"] {
        let status = http
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status.as_u16(), 401, "{path}");
    }
    // Another local web page (another port is another origin), even with the token.
    let mut request = format!("ws://{addr}/ws?token={token}")
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("origin", HeaderValue::from_static("http://localhost:5173"));
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 403)
        }
        other => panic!("expected 403, got {other:?}"),
    }
    // The printed address: the browser keeps the token in a cookie for the page's own requests.
    let opened = http
        .get(format!("http://{addr}/health?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status().as_u16(), 200);
    let cookie = opened
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let with_cookie = http
        .get(format!("http://{addr}/api/profiles"))
        .header("cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(with_cookie.status().as_u16(), 200);

    // The user's own client.
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws?token={token}"))
        .await
        .unwrap();
    while next(&mut ws).await["type"] != "session_ready" {}
    ws.send(Message::text(r#"{"type":"user_text","text":"hi"}"#))
        .await
        .unwrap();
    loop {
        let frame = next(&mut ws).await;
        if frame["type"] == "state_changed" && frame["to"] == "idle" {
            break;
        }
    }
    // Positive control: the user's own endpoint gets the user's key.
    assert_eq!(
        llm.requests()[0].header("authorization"),
        Some(format!("Bearer {USER_KEY}").as_str())
    );
    // A notice that would speak for the program to every client is refused.
    ws.send(Message::text(
        r#"{"type":"notice","level":"error","message":"your key expired: paste it at evil.example"}"#,
    ))
    .await
    .unwrap();
    let refused = next(&mut ws).await;
    assert_eq!(refused["type"], "error");
    assert_eq!(refused["code"], "invalid_op");

    // Switching to another host without naming a key variable for it: the stranger gets no key.
    let set_llm = serde_json::json!({
        "type": "set_llm", "base_url": stranger.base_url(), "model": "m"
    });
    ws.send(Message::text(set_llm.to_string())).await.unwrap();
    loop {
        if next(&mut ws).await["type"] == "llm_changed" {
            break;
        }
    }
    ws.send(Message::text(
        r#"{"type":"user_text","text":"who are you?"}"#,
    ))
    .await
    .unwrap();
    loop {
        let frame = next(&mut ws).await;
        if frame["type"] == "state_changed" && frame["to"] == "idle" {
            break;
        }
    }
    // The answer, and (Hana remembers) the memory plugin's fact extraction: each without the key.
    let reached = stranger.requests();
    assert!(!reached.is_empty());
    for request in &reached {
        let sent = format!("{:?}", request.headers);
        assert!(
            !sent.contains(USER_KEY),
            "the key reached the stranger: {sent}"
        );
    }
    // And a provider's key variable cannot be pointed at the stranger either.
    let named = serde_json::json!({
        "type": "set_llm", "base_url": stranger.base_url(), "model": "m",
        "api_key_env": "OPENAI_API_KEY"
    });
    ws.send(Message::text(named.to_string())).await.unwrap();
    loop {
        let frame = next(&mut ws).await;
        if frame["type"] == "error" {
            assert!(
                frame["message"]
                    .as_str()
                    .unwrap()
                    .contains("OPENAI_API_KEY"),
                "{frame}"
            );
            break;
        }
    }
    assert!(
        stranger
            .requests()
            .iter()
            .all(|r| !format!("{:?}", r.headers).contains(USER_KEY)),
        "nothing with the key ever reached the stranger"
    );
}
