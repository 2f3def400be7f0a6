//! The agent loop's streaming and error handling against a scripted OpenAI-compatible server that speaks
//! the real SSE wire format: plain text, reasoning, retries, HTTP errors, disconnects, interrupts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use tomo_llm::agent::{AgentError, TurnItem};
use tomo_llm::tools::ToolRegistry;
use tomo_llm::{ChatMessage, LlmError};
use tomo_protocol::TurnEnd;
use tomo_testkit::{ScriptedResponse, ScriptedServer, StreamStep, chunk, script};

use support::agent::{fast_retries, run, run_with_cancel};

#[tokio::test]
async fn plain_text_streams_and_the_request_is_well_formed() {
    let answer = "Hello there. How are you today? I'm fine!";
    let server = ScriptedServer::start(vec![script::text_reply(answer)])
        .await
        .unwrap();
    let run = run(&server, &ToolRegistry::new(), &fast_retries()).await;
    let outcome = run.outcome.as_ref().unwrap();
    assert_eq!(outcome.end, TurnEnd::Completed);
    assert_eq!(run.text(), answer);
    assert!(
        run.items
            .iter()
            .filter(|i| matches!(i, TurnItem::Text(_)))
            .count()
            > 5,
        "streamed in pieces"
    );
    assert_eq!(outcome.transcript.text, answer);
    assert_eq!(
        outcome.transcript.messages,
        vec![ChatMessage::assistant(answer)]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["model"], "scripted-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["temperature"], 0.5);
    assert!(body.get("tools").is_none(), "no tools array without tools");
    assert_eq!(
        body["messages"][0],
        json!({"role":"system","content":"You are a test."})
    );
    assert_eq!(body["messages"][1], json!({"role":"user","content":"hi"}));
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-test-secret")
    );
}

#[tokio::test]
async fn reasoning_is_kept_apart_from_the_answer() {
    let server = ScriptedServer::start(vec![script::reasoning_then_text(
        "The user greets me. I should greet back.",
        "Hi!",
    )])
    .await
    .unwrap();
    let run = run(&server, &ToolRegistry::new(), &fast_retries()).await;
    let reasoning: String = run
        .items
        .iter()
        .filter_map(|i| match i {
            TurnItem::Reasoning(r) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "The user greets me. I should greet back.");
    assert_eq!(run.text(), "Hi!");
    assert_eq!(run.outcome.unwrap().transcript.text, "Hi!");
}

#[tokio::test]
async fn empty_content_strings_and_keepalives_are_harmless() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Stream(vec![
        StreamStep::Chunk(chunk::role()),
        StreamStep::Chunk(chunk::empty_content()),
        StreamStep::Raw(": keepalive\n\n".to_owned()),
        StreamStep::Chunk(chunk::text("Fine.")),
        StreamStep::Chunk(chunk::empty_content()),
        StreamStep::Chunk(chunk::finish("stop")),
        StreamStep::Chunk(chunk::usage(3, 1)),
        StreamStep::Done,
    ])])
    .await
    .unwrap();
    let run = run(&server, &ToolRegistry::new(), &fast_retries()).await;
    assert_eq!(run.text(), "Fine.");
    assert_eq!(
        run.items.len(),
        1,
        "empty deltas are not forwarded: {:?}",
        run.items
    );
}

#[tokio::test]
async fn http_500_is_retried_then_reported_with_the_server_message() {
    let failure = ScriptedResponse::Status {
        code: 500,
        message: "model crashed".to_owned(),
    };
    let server = ScriptedServer::start(vec![failure.clone(), failure.clone(), failure])
        .await
        .unwrap();
    let run = run(&server, &ToolRegistry::new(), &fast_retries()).await;
    let Err(AgentError::Llm { error, .. }) = run.outcome else {
        panic!("expected an LLM error, got {:?}", run.outcome);
    };
    assert!(
        matches!(&error, LlmError::Http { status: 500, message } if message.contains("model crashed")),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 3, "one try and two retries");
    assert_eq!(
        run.items
            .iter()
            .filter(|i| matches!(i, TurnItem::Retrying { .. }))
            .count(),
        2
    );
}

#[tokio::test]
async fn a_retry_before_the_first_token_recovers() {
    let server = ScriptedServer::start(vec![
        ScriptedResponse::Status {
            code: 503,
            message: "loading model".to_owned(),
        },
        ScriptedResponse::Stream(vec![StreamStep::Disconnect]),
        script::text_reply("Ready now."),
    ])
    .await
    .unwrap();
    let run = run(&server, &ToolRegistry::new(), &fast_retries()).await;
    assert_eq!(run.outcome.unwrap().transcript.text, "Ready now.");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn http_4xx_is_not_retried() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Status {
        code: 401,
        message: "Incorrect API key provided".to_owned(),
    }])
    .await
    .unwrap();
    let run = run(&server, &ToolRegistry::new(), &fast_retries()).await;
    let Err(AgentError::Llm { error, .. }) = run.outcome else {
        panic!("expected an LLM error");
    };
    assert!(
        matches!(&error, LlmError::Http { status: 401, message } if message.contains("Incorrect API key"))
    );
    assert!(
        !error.to_string().contains("sk-test-secret"),
        "the key never appears in errors"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_unreachable() {
    // Bind then drop a listener to get a port that refuses connections.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let run = run_with_cancel(
        &url,
        &ToolRegistry::new(),
        &fast_retries(),
        CancellationToken::new(),
        None,
    )
    .await;
    let Err(AgentError::Llm { error, .. }) = run.outcome else {
        panic!("expected an LLM error");
    };
    assert!(matches!(error, LlmError::Unreachable { .. }), "{error:?}");
    assert!(error.is_retryable());
    assert!(error.to_string().contains(&url));
}

#[tokio::test]
async fn a_mid_stream_disconnect_is_an_error_and_keeps_the_partial_text() {
    let server =
        ScriptedServer::start(vec![script::text_then_disconnect("I was just saying that")])
            .await
            .unwrap();
    let run = run(&server, &ToolRegistry::new(), &fast_retries()).await;
    let Err(AgentError::Llm { error, transcript }) = run.outcome else {
        panic!("expected an LLM error");
    };
    assert!(matches!(error, LlmError::Stream(_)), "{error:?}");
    assert_eq!(transcript.unfinished_text, "I was just saying that");
    assert_eq!(server.requests().len(), 1, "no retry once words were out");
}

#[tokio::test]
async fn a_stream_that_ends_without_finishing_is_an_error() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Stream(vec![
        StreamStep::Chunk(chunk::role()),
        StreamStep::Chunk(chunk::text("Half an")),
    ])])
    .await
    .unwrap();
    let run = run(&server, &ToolRegistry::new(), &fast_retries()).await;
    assert!(matches!(
        run.outcome,
        Err(AgentError::Llm {
            error: LlmError::Stream(_),
            ..
        })
    ));
}

#[tokio::test]
async fn a_malformed_chunk_is_reported() {
    let server = ScriptedServer::start(vec![ScriptedResponse::Stream(vec![
        StreamStep::Chunk(chunk::role()),
        StreamStep::Chunk(chunk::text("Before")),
        StreamStep::Raw("data: {this is not json\n\n".to_owned()),
        StreamStep::Chunk(chunk::finish("stop")),
        StreamStep::Done,
    ])])
    .await
    .unwrap();
    let run = run(&server, &ToolRegistry::new(), &fast_retries()).await;
    let Err(AgentError::Llm { error, transcript }) = run.outcome else {
        panic!("expected an LLM error");
    };
    assert!(matches!(error, LlmError::Malformed(_)), "{error:?}");
    assert_eq!(transcript.unfinished_text, "Before");
}

#[tokio::test]
async fn interrupt_mid_stream_cancels_and_keeps_what_was_said() {
    let long = "One two three four five six seven eight nine ten eleven twelve thirteen fourteen.";
    let server = ScriptedServer::start(vec![script::text_reply_with_delay(
        long,
        Duration::ZERO,
        Duration::from_millis(40),
    )])
    .await
    .unwrap();
    let run = run_with_cancel(
        &server.base_url(),
        &ToolRegistry::new(),
        &fast_retries(),
        CancellationToken::new(),
        Some(3),
    )
    .await;
    let Err(AgentError::Cancelled { transcript }) = run.outcome else {
        panic!("expected cancellation, got {:?}", run.outcome);
    };
    assert!(!transcript.unfinished_text.is_empty());
    assert!(long.starts_with(&transcript.unfinished_text));
    assert!(transcript.unfinished_text.len() < long.len());
}

/// A server that keeps streaming: the idle timeout never fires, the turn's own bounds do, and the text
/// so far is kept. Neither is retried (the next attempt would stream just as long).
#[tokio::test]
async fn a_turn_that_streams_forever_is_cut_off_by_time_and_by_size() {
    let mut slow = vec![StreamStep::Chunk(chunk::role())];
    for _ in 0..400 {
        slow.push(StreamStep::Chunk(chunk::text("la ")));
        slow.push(StreamStep::Delay(Duration::from_millis(50)));
    }
    let server = ScriptedServer::start(vec![ScriptedResponse::Stream(slow)])
        .await
        .unwrap();
    let config = tomo_llm::agent::AgentConfig {
        max_turn_duration: Duration::from_millis(400),
        ..fast_retries()
    };
    let slow_run = run(&server, &ToolRegistry::new(), &config).await;
    let Err(AgentError::Llm { error, transcript }) = slow_run.outcome else {
        panic!("expected the turn to be cut off");
    };
    assert!(matches!(error, LlmError::TurnLimit(_)), "{error:?}");
    assert!(error.to_string().contains("400ms"), "{error}");
    assert!(transcript.unfinished_text.starts_with("la la"));
    assert_eq!(server.requests().len(), 1);

    let mut long = vec![StreamStep::Chunk(chunk::role())];
    for _ in 0..2_000 {
        long.push(StreamStep::Chunk(chunk::text("la ")));
    }
    let server = ScriptedServer::start(vec![ScriptedResponse::Stream(long)])
        .await
        .unwrap();
    let config = tomo_llm::agent::AgentConfig {
        max_turn_bytes: 1_000,
        ..fast_retries()
    };
    let run = run(&server, &ToolRegistry::new(), &config).await;
    let Err(AgentError::Llm { error, transcript }) = run.outcome else {
        panic!("expected the turn to be cut off");
    };
    assert!(error.to_string().contains("1000 bytes"), "{error}");
    assert!(transcript.unfinished_text.len() <= 1_000);
    assert_eq!(server.requests().len(), 1);
}
