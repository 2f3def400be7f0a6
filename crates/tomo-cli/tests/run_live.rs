//! `tomo run` with real devices: a spoken question is played into the PulseAudio null sink, `tomo run`
//! hears it through the sink's monitor (its default microphone), recognizes it, asks the (scripted) LLM,
//! and speaks the answer through rodio to the same sink.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tomo_testkit::{ScriptedServer, script};

mod common;
use common::{device_ready, flite, repo};

#[tokio::test(flavor = "multi_thread")]
async fn tomo_run_hears_the_microphone_and_answers_through_the_speakers() {
    if !device_ready(&["silero-vad", "onnxruntime", "whisper-base", "piper-en-joe"]) {
        return;
    }
    let server = ScriptedServer::start(vec![script::text_reply(
        "[joy] Paris is the capital of France.",
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let question = dir.path().join("question.wav");
    flite("What is the capital of France?", &question);

    let mut child = Command::new(env!("CARGO_BIN_EXE_tomo"))
        .env("TOMO_LLM_BASE_URL", server.base_url())
        .env("TOMO_DATA_DIR", dir.path().join("data"))
        .args(["run", "--json", "--profile"])
        .arg(repo("crates/tomo-cli/tests/fixtures/voice/profile.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take(); // kept open: `tomo run` also reads typed lines
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();

    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            assert!(!line.contains("no microphone"), "{line}");
            if line.contains("listening on") {
                return;
            }
        }
        panic!("tomo run ended before listening");
    })
    .await
    .expect("tomo run never started listening");
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });

    // "Say" the question into the room: the null sink's monitor is the default microphone.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let played = Command::new("paplay")
        .arg(&question)
        .status()
        .await
        .unwrap();
    assert!(played.success());

    let mut events: Vec<Value> = Vec::new();
    let outcome = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = stdout.next_line().await.unwrap() {
            let event: Value = serde_json::from_str(&line).unwrap();
            let done = event["type"] == "playback_drained";
            events.push(event);
            if done {
                return;
            }
        }
    })
    .await;
    assert!(outcome.is_ok(), "no answer was played; events: {events:#?}");
    let heard = events
        .iter()
        .find(|e| e["type"] == "user_transcript")
        .map(|e| e["text"].as_str().unwrap().to_lowercase())
        .unwrap_or_else(|| panic!("no transcript in {events:#?}"));
    assert!(
        heard.contains("capital") && heard.contains("france"),
        "heard {heard:?}"
    );
    let asked = server.requests()[0].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_lowercase();
    assert!(asked.contains("capital"), "{asked}");
    assert!(events.iter().any(|e| e["type"] == "audio_started"));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "latency_report" && e["origin"] == "speech_end")
    );
    child.start_kill().unwrap();
}
