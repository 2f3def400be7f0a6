//! Side requests (`LlmClient::complete`: summaries, memory extraction) on the wire: Tomo's own engine is
//! told they can wait (`"priority": "background"`), every other server gets a plain request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::Value;
use tomo_llm::{ChatMessage, LlmClient, LlmEndpoint, Priority};
use tomo_testkit::{ScriptedServer, script};

fn endpoint(server: &ScriptedServer) -> LlmEndpoint {
    LlmEndpoint {
        base_url: server.base_url(),
        model: "scripted-model".to_owned(),
        api_key: Some("sk-test-secret".to_owned()),
        temperature: None,
        max_tokens: None,
        idle_timeout: Duration::from_secs(5),
    }
}

async fn two_replies() -> ScriptedServer {
    ScriptedServer::start(vec![script::text_reply("Fine."), script::text_reply("Hi.")])
        .await
        .unwrap()
}

/// The `priority` field of each request the server got, in order (`None` when absent).
async fn priorities(client: &LlmClient, server: &ScriptedServer) -> Vec<Option<Value>> {
    let messages = [ChatMessage::user("Hello")];
    assert_eq!(client.complete(&messages).await.unwrap(), "Fine.");
    let mut stream = client.stream_chat(&messages, &[]).await.unwrap();
    while futures::StreamExt::next(&mut stream).await.is_some() {}
    server
        .requests()
        .iter()
        .map(|request| request.body.get("priority").cloned())
        .collect()
}

#[tokio::test]
async fn the_engine_hears_that_a_side_request_can_wait_and_the_turn_cannot() {
    let server = two_replies().await;
    let client = tomo_openai::connect_engine(endpoint(&server)).unwrap();
    assert_eq!(
        priorities(&client, &server).await,
        [Some(Value::from("background")), None]
    );
}

#[tokio::test]
async fn a_summary_the_turn_waits_for_does_not_stand_aside() {
    let server = ScriptedServer::start(vec![script::text_reply("Fine.")])
        .await
        .unwrap();
    let client = tomo_openai::connect_engine(endpoint(&server)).unwrap();
    let messages = [ChatMessage::user("Summarize")];
    let answer = client.complete_as(&messages, Priority::Conversation).await;
    assert_eq!(answer.unwrap(), "Fine.");
    assert_eq!(server.requests()[0].body.get("priority"), None);
}

#[tokio::test]
async fn other_servers_never_get_the_field() {
    let server = two_replies().await;
    let client = tomo_openai::connect(endpoint(&server)).unwrap();
    assert_eq!(priorities(&client, &server).await, [None, None]);
}
