//! The real engine (llama.cpp + SmolLM2-135M) serving a conversation request in the middle of a side
//! request (memory extraction, a summary): the conversation does not wait for it, and neither answer is
//! disturbed by the other.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use tomo_llm::{ChatMessage, LlmClient, LlmEndpoint, LlmEvent, LlmStream};
use tomo_llm_supervisor::LocalEngine;

/// Tomo's engine client (side requests marked as such), greedy, long answers allowed.
fn engine_client(engine: &LocalEngine) -> LlmClient {
    tomo_openai::connect_engine(LlmEndpoint {
        base_url: engine.base_url().to_owned(),
        model: support::FIXTURE.to_owned(),
        api_key: Some(engine.api_key().to_owned()),
        temperature: Some(0.0),
        max_tokens: Some(160),
        idle_timeout: Duration::from_secs(60),
    })
    .unwrap()
}

fn side_request() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a storyteller. Write long, detailed stories."),
        ChatMessage::user("Tell me a long story about a lighthouse keeper and a storm."),
    ]
}

fn turn() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are Hana, a cheerful companion. Answer in one short sentence."),
        ChatMessage::user("What is a good name for a cat?"),
    ]
}

/// Reads a stream to its end; returns the text, the completion tokens, and the `clock` tick at which it
/// finished.
async fn read(mut stream: LlmStream, clock: &AtomicUsize) -> (String, u64, usize) {
    let (mut text, mut tokens) = (String::new(), 0);
    while let Some(event) = stream.next().await {
        match event.expect("no stream error") {
            LlmEvent::Text(delta) => text.push_str(&delta),
            LlmEvent::Usage(usage) => tokens = usage["completion_tokens"].as_u64().unwrap(),
            _ => {}
        }
    }
    (text, tokens, clock.fetch_add(1, Ordering::SeqCst))
}

#[tokio::test]
async fn a_turn_is_served_in_the_middle_of_a_side_request_and_neither_answer_changes() {
    let Some(model) = support::fixture() else {
        return;
    };
    let engine = support::start(support::config(model)).await;
    let client = engine_client(&engine);
    let clock = Arc::new(AtomicUsize::new(0));

    // Each request once alone, then again: the second run finds its prompt in its slot's cache, as the
    // runs below do, so their computations are the same step for step.
    for _ in 0..2 {
        let _ = read(client.stream_side(&side_request()).await.unwrap(), &clock).await;
        let _ = read(client.stream_chat(&turn(), &[]).await.unwrap(), &clock).await;
    }
    let (side_alone, side_tokens, _) =
        read(client.stream_side(&side_request()).await.unwrap(), &clock).await;
    let (turn_alone, _, _) = read(client.stream_chat(&turn(), &[]).await.unwrap(), &clock).await;
    assert!(
        side_tokens >= 100,
        "the side request must run long enough for a turn to arrive in its middle: {side_tokens} tokens"
    );

    // The side request starts; once its first words are out, the user's turn comes.
    let mut side = client.stream_side(&side_request()).await.unwrap();
    let first = match side.next().await.expect("a first event").unwrap() {
        LlmEvent::Text(delta) => delta,
        other => panic!("the side request began with {other:?}"),
    };
    let side_clock = Arc::clone(&clock);
    let side = tokio::spawn(async move {
        let (rest, _, finished) = read(side, &side_clock).await;
        (format!("{first}{rest}"), finished)
    });
    let (turn_text, _, turn_finished) =
        read(client.stream_chat(&turn(), &[]).await.unwrap(), &clock).await;
    let (side_text, side_finished) = side.await.unwrap();

    assert!(
        turn_finished < side_finished,
        "the turn waited for the side request to end"
    );
    assert_eq!(
        turn_text, turn_alone,
        "the turn's answer is its answer alone"
    );
    assert_eq!(
        side_text, side_alone,
        "the side request went on where it stopped, its cache untouched"
    );
    engine.stop().await;
}
