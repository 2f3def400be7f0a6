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

/// One engine at a time: two engines' llama.cpp threads on two cores spin against each other (the two
/// tests took 74 s side by side, 20 s one after the other).
static ONE_ENGINE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
    let _alone = ONE_ENGINE.lock().await;
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

/// A side request with a long prompt (about 1,300 tokens): its evaluation takes a while.
fn long_side_request() -> Vec<ChatMessage> {
    let notes =
        "The user said they like hiking, their sister lives in Lyon, and they plan a trip in May. "
            .repeat(60);
    vec![
        ChatMessage::system("Summarize the notes in one sentence."),
        ChatMessage::user(notes),
    ]
}

#[tokio::test]
async fn a_turn_arriving_while_a_side_prompt_is_evaluated_goes_between_its_batches() {
    let Some(model) = support::fixture() else {
        return;
    };
    let _alone = ONE_ENGINE.lock().await;
    let clock = Arc::new(AtomicUsize::new(0));
    // Each alone, on a fresh engine (nothing cached: the runs below start from nothing too).
    let engine = support::start(support::config(model.clone())).await;
    let client = engine_client(&engine);
    let (side_alone, _, _) = read(
        client.stream_side(&long_side_request()).await.unwrap(),
        &clock,
    )
    .await;
    let (turn_alone, _, _) = read(client.stream_chat(&turn(), &[]).await.unwrap(), &clock).await;
    engine.stop().await;

    // Together, on another fresh engine: the turn comes while the side prompt is still being evaluated
    // (the engine answers the side request's HTTP call only with its first token).
    let engine = support::start(support::config(model)).await;
    let client = engine_client(&engine);
    let side_client = client.clone();
    let side_clock = Arc::clone(&clock);
    let side = tokio::spawn(async move {
        let stream = side_client.stream_side(&long_side_request()).await.unwrap();
        read(stream, &side_clock).await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (turn_text, _, turn_finished) =
        read(client.stream_chat(&turn(), &[]).await.unwrap(), &clock).await;
    let (side_text, _, side_finished) = side.await.unwrap();

    assert!(
        turn_finished < side_finished,
        "the turn waited for the side request to end"
    );
    assert_eq!(turn_text, turn_alone);
    assert_eq!(side_text, side_alone, "the side prompt's cache is whole");
    engine.stop().await;
}
