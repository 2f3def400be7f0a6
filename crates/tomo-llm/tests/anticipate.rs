//! A request started in the user's pause (`LlmClient::anticipate`) against the scripted server speaking
//! the real SSE wire format: taken over when the turn sends exactly that request, replaced otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use tomo_llm::{
    ChatMessage, ChatModel, LlmClient, LlmEndpoint, LlmError, LlmEvent, LlmStream, ToolDefinition,
};
use tomo_testkit::{ScriptedServer, script};

use support::agent::client;

fn asking(words: &str) -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a test."),
        ChatMessage::user(words),
    ]
}

async fn answer(client: &LlmClient, messages: &[ChatMessage]) -> String {
    let mut stream = client.stream_chat(messages, &[]).await.unwrap();
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let LlmEvent::Text(delta) = event.unwrap() {
            text.push_str(&delta);
        }
    }
    text
}

#[tokio::test]
async fn the_turn_takes_over_the_request_started_in_the_pause() {
    let server = ScriptedServer::start(vec![
        script::text_reply_with_delay(
            "Hello from the pause.",
            Duration::from_millis(100),
            Duration::ZERO,
        ),
        script::text_reply("A second request."),
    ])
    .await
    .unwrap();
    let client = client(&server.base_url());
    client.anticipate(asking("what time is it"), Vec::new());
    server
        .wait_for_requests(1, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(
        answer(&client, &asking("what time is it")).await,
        "Hello from the pause."
    );
    assert_eq!(server.requests().len(), 1, "no second request");
    // Taken once: the next identical request asks the server again.
    assert_eq!(
        answer(&client, &asking("what time is it")).await,
        "A second request."
    );
}

#[tokio::test]
async fn other_words_drop_the_anticipation_and_ask_for_themselves() {
    let server = ScriptedServer::start(vec![
        script::text_reply("For the pause."),
        script::text_reply("For the whole sentence."),
    ])
    .await
    .unwrap();
    let client = client(&server.base_url());
    client.anticipate(asking("I was thinking"), Vec::new());
    server
        .wait_for_requests(1, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(
        answer(&client, &asking("I was thinking maybe we could go out")).await,
        "For the whole sentence."
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[1].body["messages"][1]["content"],
        "I was thinking maybe we could go out"
    );
}

#[tokio::test]
async fn a_cancelled_or_replaced_anticipation_is_not_used() {
    let server = ScriptedServer::start(vec![
        script::text_reply("First pause."),
        script::text_reply("Second pause."),
        script::text_reply("Asked afresh."),
    ])
    .await
    .unwrap();
    let client = client(&server.base_url());
    client.anticipate(asking("one"), Vec::new());
    server
        .wait_for_requests(1, Duration::from_secs(5))
        .await
        .unwrap();
    // A later pause replaces the earlier anticipation.
    client.anticipate(asking("one two"), Vec::new());
    server
        .wait_for_requests(2, Duration::from_secs(5))
        .await
        .unwrap();
    client.cancel_anticipation();
    assert_eq!(answer(&client, &asking("one two")).await, "Asked afresh.");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn side_requests_leave_the_anticipation_alone() {
    let server = ScriptedServer::start(vec![
        script::text_reply_with_delay(
            "The turn's answer.",
            Duration::from_millis(50),
            Duration::ZERO,
        ),
        script::text_reply("{\"add\": []}"),
    ])
    .await
    .unwrap();
    let client = client(&server.base_url());
    client.anticipate(asking("hello"), Vec::new());
    server
        .wait_for_requests(1, Duration::from_secs(5))
        .await
        .unwrap();
    // A memory extraction or a summary in the meantime.
    let side = client.complete(&asking("extract facts")).await.unwrap();
    assert_eq!(side, "{\"add\": []}");
    assert_eq!(
        answer(&client, &asking("hello")).await,
        "The turn's answer."
    );
    assert_eq!(server.requests().len(), 2);
}

/// A model whose stream gives some text and then its task dies (a panic in the engine's client).
struct DiesMidAnswer(LlmEndpoint);

impl ChatModel for DiesMidAnswer {
    fn endpoint(&self) -> &LlmEndpoint {
        &self.0
    }

    fn stream_chat<'a>(
        &'a self,
        _messages: &'a [ChatMessage],
        _tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<LlmStream, LlmError>> {
        Box::pin(async {
            let text = futures::stream::iter([Ok(LlmEvent::Text("Half an ans".into()))]);
            let dies = futures::stream::once(async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                panic!("the client died");
            });
            let stream: LlmStream = Box::pin(text.chain(dies));
            Ok(stream)
        })
    }
}

#[tokio::test]
async fn a_started_request_that_dies_ends_with_an_error_not_as_a_short_answer() {
    let client = LlmClient::new(DiesMidAnswer(LlmEndpoint {
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "m".into(),
        api_key: None,
        temperature: None,
        max_tokens: None,
        idle_timeout: Duration::from_secs(5),
    }));
    client.anticipate(asking("hello"), Vec::new());
    let mut stream = client.stream_chat(&asking("hello"), &[]).await.unwrap();
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        seen.push(event);
    }
    assert_eq!(seen[0], Ok(LlmEvent::Text("Half an ans".into())));
    assert!(
        matches!(seen.last(), Some(Err(LlmError::Stream(_)))),
        "{seen:?}"
    );
}
