//! The real engine (llama.cpp + SmolLM2-135M) through the supervisor and Tomo's own streaming client:
//! streaming in OpenAI's format with usage, prefix reuse across turns and after a warm-up, the bounds
//! on an answer, the token, and the bad model files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tomo_llm::{ChatMessage, LlmClient, LlmEvent};
use tomo_llm_supervisor::{EngineError, LocalEngine};

struct Answer {
    deltas: Vec<String>,
    finish: Option<String>,
    usage: Option<Value>,
}

impl Answer {
    fn text(&self) -> String {
        self.deltas.concat()
    }
    fn usage(&self, key: &str) -> u64 {
        let usage = self.usage.as_ref().expect("a usage chunk");
        match key {
            "cached" => usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap(),
            key => usage[key].as_u64().unwrap(),
        }
    }
}

async fn ask(client: &LlmClient, messages: &[ChatMessage]) -> Answer {
    let mut stream = client
        .stream_chat(messages, &[])
        .await
        .expect("request accepted");
    let mut answer = Answer {
        deltas: Vec::new(),
        finish: None,
        usage: None,
    };
    while let Some(event) = stream.next().await {
        match event.expect("no stream error") {
            LlmEvent::Text(delta) => answer.deltas.push(delta),
            LlmEvent::Finish(reason) => answer.finish = Some(reason),
            LlmEvent::Usage(usage) => answer.usage = Some(usage),
            _ => {}
        }
    }
    answer
}

const PERSONA: &str = "You are Hana, a warm and cheerful companion who lives on the user's desktop. \
You are curious, encouraging and a little playful. Keep answers short: one or two sentences.";

#[tokio::test]
async fn an_answer_streams_in_pieces_with_a_finish_and_usage() {
    let Some(model) = support::fixture() else {
        return;
    };
    let engine = support::start(support::config(model)).await;
    let client = support::client(&engine, Some(48));
    let answer = ask(
        &client,
        &[
            ChatMessage::system(PERSONA),
            ChatMessage::user("Hello! Who are you?"),
        ],
    )
    .await;
    assert!(
        answer.deltas.len() >= 2,
        "streamed token by token: {:?}",
        answer.deltas
    );
    assert!(!answer.text().trim().is_empty());
    assert!(matches!(answer.finish.as_deref(), Some("stop" | "length")));
    assert!(answer.usage("prompt_tokens") > 20);
    assert!(answer.usage("completion_tokens") >= answer.deltas.len() as u64 / 2);
    assert!(answer.usage.as_ref().unwrap()["timings"]["prompt_ms"].is_number());
    engine.stop().await;
}

#[tokio::test]
async fn a_follow_up_evaluates_only_what_is_new() {
    let Some(model) = support::fixture() else {
        return;
    };
    let engine = support::start(support::config(model)).await;
    let client = support::client(&engine, Some(24));
    let mut messages = vec![
        ChatMessage::system(PERSONA),
        ChatMessage::user("My name is Alex."),
    ];
    let first = ask(&client, &messages).await;
    assert_eq!(
        first.usage("cached"),
        0,
        "nothing cached before the first request"
    );
    messages.push(ChatMessage::assistant(first.text()));
    messages.push(ChatMessage::user("What is my name?"));
    let second = ask(&client, &messages).await;
    let first_prompt = first.usage("prompt_tokens");
    // Everything the first request evaluated is reused (the template's turn boundary may differ by a token
    // or two: the first prompt ends with the assistant header, the second continues it).
    assert!(
        second.usage("cached") + 2 >= first_prompt,
        "cached {} of a {first_prompt}-token first prompt",
        second.usage("cached")
    );
    assert!(second.usage("prompt_tokens") > second.usage("cached"));
    engine.stop().await;
}

#[tokio::test]
async fn a_warm_up_leaves_the_persona_in_the_cache_for_the_first_turn() {
    let Some(model) = support::fixture() else {
        return;
    };
    let engine = support::start(support::config(model)).await;
    let tools = json!([{"type": "function", "function": {
        "name": "get_time", "description": "Get the current time.", "parameters": {"type": "object", "properties": {}}
    }}]);
    engine
        .warm_up(&json!([{"role": "system", "content": PERSONA}]), &tools)
        .await
        .unwrap();
    // The first real turn: the same system prompt and tools, then the user's words.
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", engine.base_url()))
        .bearer_auth(engine.api_key())
        .body(
            json!({
                "messages": [{"role": "system", "content": PERSONA}, {"role": "user", "content": "Hi!"}],
                "tools": tools, "max_tokens": 8, "temperature": 0
            })
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    let usage = &body["usage"];
    let prompt = usage["prompt_tokens"].as_u64().unwrap();
    let cached = usage["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(cached > 100, "the persona and tools were cached: {usage}");
    assert!(
        prompt - cached < 20,
        "only the user's turn was evaluated: {usage}"
    );
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    engine.stop().await;
}

#[tokio::test]
async fn an_answer_that_never_ends_is_cut_at_the_token_cap_and_at_the_time_cap() {
    let Some(model) = support::fixture() else {
        return;
    };
    let endless = [
        ChatMessage::system("You count."),
        ChatMessage::user("Count from 1 to 100000, one number per line, and do not stop."),
    ];
    let mut config = support::config(model.clone());
    config.max_tokens = 16;
    let engine = support::start(config).await;
    // The client asks for more than the engine allows: the engine's cap wins.
    let answer = ask(&support::client(&engine, Some(5000)), &endless).await;
    assert_eq!(answer.finish.as_deref(), Some("length"));
    assert!(answer.usage("completion_tokens") <= 16);
    engine.stop().await;

    let mut config = support::config(model);
    config.max_tokens = 1900;
    config.max_answer_time = Duration::from_secs(1);
    let engine = support::start(config).await;
    let answer = ask(&support::client(&engine, None), &endless).await;
    assert_eq!(
        answer.finish.as_deref(),
        Some("length"),
        "{}",
        answer.text()
    );
    assert!(
        answer.usage("completion_tokens") < 1900,
        "stopped by the time cap, not the token cap"
    );
    engine.stop().await;
}

#[tokio::test]
async fn requests_without_the_token_are_refused() {
    let Some(model) = support::fixture() else {
        return;
    };
    let engine = support::start(support::config(model)).await;
    let http = reqwest::Client::new();
    let url = format!("{}/chat/completions", engine.base_url());
    let body = json!({"messages": [{"role": "user", "content": "hi"}]}).to_string();
    let none = http.post(&url).body(body.clone()).send().await.unwrap();
    assert_eq!(none.status(), 401);
    let wrong = http
        .post(&url)
        .bearer_auth("x".repeat(64))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let health = http
        .get(engine.base_url().replace("/v1", "/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    engine.stop().await;
}

#[tokio::test]
async fn a_missing_model_file_names_the_file_and_the_install_command() {
    let dir = tempfile::tempdir().unwrap();
    let config = support::config(dir.path().join(support::FIXTURE_FILE));
    let error = LocalEngine::start(config, |_| {}).await.unwrap_err();
    assert!(matches!(error, EngineError::ModelMissing { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("smollm2-135m-instruct-q4_1.gguf"), "{text}");
    assert!(text.contains("tomo models install smollm2-135m"), "{text}");
}

#[tokio::test]
async fn a_truncated_model_file_is_caught_before_and_by_the_engine() {
    let Some(model) = support::fixture() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("smollm2-cut.gguf");
    let bytes = std::fs::read(&model).unwrap();
    std::fs::File::create(&cut)
        .unwrap()
        .write_all(&bytes[..bytes.len() / 3])
        .unwrap();
    // With the manifest's size: refused before anything starts.
    let error = LocalEngine::start(support::config(cut.clone()), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(error, EngineError::ModelTruncated { .. }),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("tomo models install --force smollm2-135m")
    );
    // Without it: the engine itself fails to load it and says so.
    let mut config = support::config(cut.clone());
    config.expected_size = None;
    let error = LocalEngine::start(config, |_| {}).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, EngineError::LoadFailed { .. }), "{text}");
    assert!(
        text.contains("smollm2-cut.gguf") && text.contains("tomo models install"),
        "{text}"
    );
}

#[tokio::test]
async fn the_engine_exits_when_its_parent_goes_away() {
    let Some(model) = support::fixture() else {
        return;
    };
    // The supervisor holds the engine's stdin; when the app dies the kernel closes it. Here the test is
    // the parent and closes it by hand.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_tomo-llm-engine"))
        .arg("--model")
        .arg(&model)
        .arg("--exit-with-stdin")
        .env("TOMO_LLM_ENGINE_TOKEN", "t".repeat(32))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("the engine exited after its stdin closed")
        .unwrap();
    assert!(status.success(), "{status}");
}
