//! `tomo chat` against a real OpenAI-compatible server: llama.cpp serving Gemma 3 270M, started by
//! `scripts/test` (see scripts/real_llm.sh), which exports its URL as `TOMO_E2E_LLM_URL`.
//! The base model's words are not meaningful, so these tests check the plumbing, not the content.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

fn server_url() -> Option<String> {
    match std::env::var("TOMO_E2E_LLM_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("TOMO_E2E_LLM_URL is not set: CI must run the tests through scripts/test")
        }
        _ => {
            eprintln!("skipped: no real LLM server (run scripts/test to start one)");
            None
        }
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real_llm")
        .join(name)
}

async fn chat(
    url: &str,
    data: &Path,
    profile: &Path,
    text: &str,
) -> (Option<i32>, Vec<Value>, String) {
    let output = tokio::time::timeout(
        Duration::from_secs(240),
        Command::new(env!("CARGO_BIN_EXE_tomo"))
            .env("TOMO_LLM_BASE_URL", url)
            .env("TOMO_DATA_DIR", data)
            .env_remove("TOMO_LLM_MODEL")
            .env_remove("TOMO_LLM_API_KEY")
            .arg("chat")
            .arg("--json")
            .arg("--plugins-dir")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins"))
            .arg("--profile")
            .arg(profile)
            .arg("--once")
            .arg(text)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("tomo hung against the real server")
    .expect("tomo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let events = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("every stdout line is a JSON event"))
        .collect();
    (
        output.status.code(),
        events,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test]
async fn a_turn_streams_from_a_real_llama_cpp_server_and_is_remembered() {
    let Some(url) = server_url() else { return };
    let data = tempfile::tempdir().unwrap();
    let profile = fixture("profile.toml");
    let (code, events, stderr) =
        chat(&url, data.path(), &profile, "Hello! What do you like?").await;
    assert_eq!(code, Some(0), "stderr: {stderr}\nevents: {events:#?}");

    let deltas: String = of_type(&events, "text_delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert!(
        of_type(&events, "text_delta").len() >= 2,
        "streamed token by token: {events:#?}"
    );
    let finished = of_type(&events, "turn_finished");
    assert_eq!(finished.len(), 1);
    let text = finished[0]["text"].as_str().unwrap();
    assert!(!text.trim().is_empty());
    assert_eq!(text, deltas, "the turn's text is exactly what streamed");
    assert!(!of_type(&events, "sentence").is_empty(), "{events:#?}");
    assert!(of_type(&events, "error").is_empty(), "{events:#?}");
    let last_state = of_type(&events, "state_changed")
        .last()
        .map(|e| e["to"].clone());
    assert_eq!(last_state, Some(Value::from("idle")));

    // The exchange is in the character's history, ready for the next turn.
    let history =
        std::fs::read_to_string(data.path().join("characters/gemma-e2e/history.jsonl")).unwrap();
    let records: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["role"], "user");
    assert_eq!(records[1]["role"], "assistant");
    assert_eq!(records[1]["content"], text);

    let (code, events, stderr) = chat(&url, data.path(), &profile, "And what else?").await;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_eq!(of_type(&events, "turn_finished").len(), 1);
}

#[tokio::test]
async fn a_real_server_refusal_reaches_the_user_with_its_message() {
    let Some(url) = server_url() else { return };
    // This llama.cpp server runs without Jinja templates, so it rejects requests that carry tools.
    let data = tempfile::tempdir().unwrap();
    let (code, events, stderr) = chat(
        &url,
        data.path(),
        &fixture("with_tools.toml"),
        "What time is it?",
    )
    .await;
    assert_eq!(code, Some(1), "stderr: {stderr}");
    let errors = of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{events:#?}");
    assert_eq!(errors[0]["code"], "llm_http");
    assert_eq!(errors[0]["recoverable"], true);
    assert!(
        errors[0]["message"].as_str().unwrap().contains("--jinja"),
        "the server's own message is shown: {}",
        errors[0]["message"]
    );
}
