//! Context compression over a 200-turn scripted conversation: every request stays under the token
//! budget, old turns reach the summariser before they leave the prompt, and the persisted running summary
//! (the scripted summariser's answer) comes back in later prompts.
//!
//! The chat and the summariser share one endpoint; a small proxy routes the summariser's requests (told
//! apart by their system prompt) to a second scripted server, so each script stays in order.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tomo_config::profile::load_profile;
use tomo_core::session::compress::{RunningSummary, SUMMARISER_MARKER};
use tomo_core::session::{Environment, LlmOverrides, character_dir, start_session};
use tomo_core::sink::TextSink;
use tomo_protocol::{Event, Op, SessionState};
use tomo_testkit::{RecordedRequest, ScriptedServer, script};

const BUDGET: usize = 1500;
const TURNS: usize = 200;

/// Forwards each connection to `summariser` if its request is a summariser request, else to `chat`.
async fn start_router(chat: std::net::SocketAddr, summariser: std::net::SocketAddr) -> String {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Some(request) = read_request(&mut client).await else {
                    return;
                };
                let is_summary = String::from_utf8_lossy(&request).contains(SUMMARISER_MARKER);
                let target = if is_summary { summariser } else { chat };
                let mut upstream = TcpStream::connect(target).await.unwrap();
                upstream.write_all(&request).await.unwrap();
                // The scripted servers close after each answer, so copying to EOF relays one response.
                let _ = tokio::io::copy(&mut upstream, &mut client).await;
                let _ = client.shutdown().await;
            });
        }
    });
    url
}

/// Reads one request (head + Content-Length body) as raw bytes.
async fn read_request(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    loop {
        let n = stream.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let n = stream.read(&mut tmp).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            return Some(buf);
        }
    }
}

/// The same estimate the engine documents: characters / 4 (rounded up) plus 4 per message.
fn estimated_tokens(request: &RecordedRequest) -> usize {
    request
        .messages()
        .iter()
        .map(|m| {
            let content = m.get("content").and_then(Value::as_str).unwrap_or_default();
            4 + content.chars().count().div_ceil(4)
        })
        .sum()
}

fn text_of(request: &RecordedRequest) -> String {
    request
        .messages()
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

fn user_text(turn: usize) -> String {
    match turn {
        1 => "Turn 1: my cat is called Miso and I work as a baker in Lyon.".to_owned(),
        n => format!(
            "Turn {n}: just chatting about nothing in particular, {}",
            "la la la ".repeat(10)
        ),
    }
}

fn write_profile(dir: &Path, base_url: &str) -> std::path::PathBuf {
    let path = dir.join("hana.toml");
    std::fs::write(
        &path,
        format!(
            r#"[character]
name = "Hana"
agent_id = "hana"
persona = "You are Hana, a test character."

[llm]
base_url = "{base_url}"
model = "scripted-model"
context_turns = 20
context_budget_tokens = {BUDGET}
"#
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_turns_stay_under_budget_and_the_summary_keeps_early_facts() {
    let dir = tempfile::tempdir().unwrap();
    let chat = ScriptedServer::start(vec![]).await.unwrap();
    let summariser = ScriptedServer::start(
        (1..=TURNS)
            .map(|v| {
                script::text_reply(&format!(
                    "Summary v{v}: the user has a cat called Miso and works as a baker in Lyon; the rest was small talk."
                ))
            })
            .collect(),
    )
    .await
    .unwrap();
    let url = start_router(chat.addr(), summariser.addr()).await;
    let profile = load_profile(&write_profile(dir.path(), &url))
        .unwrap()
        .profile;
    let env = Environment {
        plugins_dir: dir.path().join("no-plugins"),
        data_root: dir.path().to_path_buf(),
        llm: LlmOverrides::default(),
        llm_connector: std::sync::Arc::new(tomo_openai::OpenAiConnector),
        hook_timeout: Duration::from_secs(5),
        extra_hooks: Vec::new(),
        plugin_factories: tomo_plugins::builtin_factories(),
    };
    let (session, mut events) = start_session(profile, env, Arc::new(TextSink))
        .await
        .unwrap();
    for turn in 1..=TURNS {
        chat.push(script::text_reply(&format!(
            "Reply {turn}: how nice, tell me more about it please."
        )));
        session
            .send(Op::UserText {
                text: user_text(turn),
            })
            .await
            .unwrap();
        loop {
            let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
                .await
                .expect("turn timed out")
                .unwrap()
                .event;
            assert!(
                !matches!(event, Event::Error { .. }),
                "turn {turn}: {event:?}"
            );
            if matches!(
                event,
                Event::StateChanged {
                    to: SessionState::Idle,
                    ..
                }
            ) {
                break;
            }
        }
    }
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;

    let chats = chat.requests();
    let summaries = summariser.requests();
    assert_eq!(chats.len(), TURNS);
    assert!(summaries.len() >= 5, "only {} summaries", summaries.len());

    // Every prompt under budget.
    for (i, request) in chats.iter().enumerate() {
        let tokens = estimated_tokens(request);
        assert!(
            tokens <= BUDGET,
            "turn {}: {tokens} tokens > {BUDGET}",
            i + 1
        );
    }
    // The summariser received the early turns, and each summary builds on the previous one.
    assert!(text_of(&summaries[0]).contains("my cat is called Miso"));
    for (i, request) in summaries.iter().enumerate().skip(1) {
        assert!(
            text_of(request).contains(&format!("Summary v{i}:")),
            "summary {} is not running",
            i + 1
        );
    }
    // Nothing dropped without being summarised: each turn is verbatim in the last prompt or was
    // given to the summariser.
    let last = text_of(&chats[TURNS - 1]);
    let summarised: String = summaries.iter().map(text_of).collect();
    for turn in 1..TURNS {
        let marker = format!("Turn {turn}:");
        assert!(
            last.contains(&marker) || summarised.contains(&marker),
            "turn {turn} was dropped without a summary"
        );
    }
    // Turn 1 left the verbatim window long ago, yet its fact is in the late prompts via the summary.
    assert!(!last.contains("Turn 1: my cat"));
    let system = chats[TURNS - 1].messages()[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("[conversation so far]"), "{system}");
    assert!(system.contains("cat called Miso"), "{system}");
    // Persisted, with its cursor.
    let saved = RunningSummary::load(&character_dir(dir.path(), "hana"));
    assert!(saved.text.contains("Miso"));
    assert!(
        saved.through_turn > 100 && saved.through_turn < TURNS as u64,
        "{saved:?}"
    );
    assert_eq!(
        saved.text,
        format!(
            "Summary v{}: the user has a cat called Miso and works as a baker in Lyon; the rest was small talk.",
            summaries.len()
        )
    );
}
