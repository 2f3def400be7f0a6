//! The agent loop against a scripted OpenAI-compatible server that speaks the real SSE wire format.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Barrier, mpsc};
use tokio_util::sync::CancellationToken;
use tomo_core::agent::{AgentConfig, AgentError, TurnItem, TurnOutcome, run_turn};
use tomo_core::llm::{ChatMessage, LlmClient, LlmEndpoint, LlmError};
use tomo_core::protocol::{ToolStatus, TurnEnd};
use tomo_core::tools::{ToolContext, ToolError, ToolRegistry, ToolSpec};
use tomo_testkit::{ScriptedResponse, ScriptedServer, StreamStep, chunk, script};

use support::FnTool;

fn client(base_url: &str) -> LlmClient {
    LlmClient::new(LlmEndpoint {
        base_url: base_url.to_owned(),
        model: "scripted-model".to_owned(),
        api_key: Some("sk-test-secret".to_owned()),
        temperature: Some(0.5),
        max_tokens: None,
        idle_timeout: Duration::from_secs(5),
    })
    .unwrap()
}

fn fast_retries() -> AgentConfig {
    AgentConfig {
        retry_base_delay: Duration::from_millis(10),
        ..AgentConfig::default()
    }
}

fn ctx(cancel: &CancellationToken) -> ToolContext {
    ToolContext {
        agent_id: "test".to_owned(),
        data_dir: std::env::temp_dir(),
        cancel: cancel.clone(),
    }
}

fn start_messages() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a test."),
        ChatMessage::user("hi"),
    ]
}

struct Run {
    outcome: Result<TurnOutcome, AgentError>,
    items: Vec<TurnItem>,
}

impl Run {
    fn text(&self) -> String {
        self.items
            .iter()
            .filter_map(|i| match i {
                TurnItem::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    fn tool_events(&self) -> Vec<(String, ToolStatus, Option<String>)> {
        self.items
            .iter()
            .filter_map(|i| match i {
                TurnItem::ToolCall(e) => Some((e.tool_name.clone(), e.status, e.result.clone())),
                _ => None,
            })
            .collect()
    }
}

async fn run(server: &ScriptedServer, tools: &ToolRegistry, config: &AgentConfig) -> Run {
    run_with_cancel(
        &server.base_url(),
        tools,
        config,
        CancellationToken::new(),
        None,
    )
    .await
}

async fn run_with_cancel(
    base_url: &str,
    tools: &ToolRegistry,
    config: &AgentConfig,
    cancel: CancellationToken,
    cancel_after_items: Option<usize>,
) -> Run {
    let (tx, mut rx) = mpsc::channel(16);
    let client = client(base_url);
    let turn = run_turn(&client, tools, config, start_messages(), ctx(&cancel), tx);
    let collect = async {
        let mut items = Vec::new();
        while let Some(item) = rx.recv().await {
            items.push(item);
            if Some(items.len()) == cancel_after_items {
                cancel.cancel();
            }
        }
        items
    };
    let (outcome, items) = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::join!(turn, collect)
    })
    .await
    .expect("turn hung");
    Run { outcome, items }
}

fn echo_tool() -> Arc<FnTool> {
    FnTool::new(
        ToolSpec::new(
            "echo",
            "Echo text back",
            json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}),
        ),
        |args| async move {
            Ok(format!(
                "echo: {}",
                args["text"].as_str().unwrap_or_default()
            ))
        },
    )
}

fn registry(tools: Vec<Arc<FnTool>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool).unwrap();
    }
    registry
}

fn tool_messages(request: &tomo_testkit::RecordedRequest) -> Vec<Value> {
    request
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

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
async fn tool_arguments_split_over_many_chunks_are_assembled() {
    let args = r#"{"text":"a fairly long argument, split into many small pieces"}"#;
    let server = ScriptedServer::start(vec![
        script::tool_calls(&[("call_1", "echo", args)], 12),
        script::text_reply("It said so."),
    ])
    .await
    .unwrap();
    let tools = registry(vec![echo_tool()]);
    let run = run(&server, &tools, &fast_retries()).await;
    assert_eq!(run.outcome.as_ref().unwrap().end, TurnEnd::Completed);
    let events = run.tool_events();
    assert_eq!(events[0], ("echo".to_owned(), ToolStatus::Running, None));
    assert_eq!(
        events[1],
        (
            "echo".to_owned(),
            ToolStatus::Completed,
            Some("echo: a fairly long argument, split into many small pieces".to_owned())
        )
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let body = &requests[1].body;
    assert_eq!(body["tools"][0]["function"]["name"], "echo");
    let assistant = &requests[1].messages()[2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], args);
    assert_eq!(
        tool_messages(&requests[1]),
        vec![
            json!({"role":"tool","tool_call_id":"call_1","content":"echo: a fairly long argument, split into many small pieces"})
        ]
    );
}

#[tokio::test]
async fn two_tools_of_a_round_run_concurrently_and_are_announced_first() {
    // Each call waits for the other at a barrier: the round can only finish if both run at the same time.
    let barrier = Arc::new(Barrier::new(2));
    let meet = |name: &'static str| {
        let barrier = Arc::clone(&barrier);
        FnTool::new(
            ToolSpec::new(name, "waits for its twin", json!({"type":"object"}))
                .with_timeout(Duration::from_secs(5)),
            move |_| {
                let barrier = Arc::clone(&barrier);
                async move {
                    barrier.wait().await;
                    Ok(format!("{name} met its twin"))
                }
            },
        )
    };
    let server = ScriptedServer::start(vec![
        script::tool_calls(&[("a", "left", "{}"), ("b", "right", "{}")], 2),
        script::text_reply("Both done."),
    ])
    .await
    .unwrap();
    let tools = registry(vec![meet("left"), meet("right")]);
    let run = run(&server, &tools, &fast_retries()).await;
    let events = run.tool_events();
    assert_eq!(events.len(), 4);
    assert_eq!(events[0].1, ToolStatus::Running);
    assert_eq!(events[1].1, ToolStatus::Running);
    assert!(
        events[2..].iter().all(|e| e.1 == ToolStatus::Completed),
        "{events:?}"
    );
    // Tool messages follow call order whatever the completion order.
    let sent = tool_messages(&server.requests()[1]);
    assert_eq!(sent[0]["tool_call_id"], "a");
    assert_eq!(sent[1]["tool_call_id"], "b");
    assert_eq!(run.outcome.unwrap().transcript.text, "Both done.");
}

#[tokio::test]
async fn a_hung_tool_times_out_and_the_turn_goes_on() {
    let hang = FnTool::new(
        ToolSpec::new("hang", "never returns", json!({"type":"object"}))
            .with_timeout(Duration::from_millis(200)),
        |_| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(String::new())
        },
    );
    let server = ScriptedServer::start(vec![
        script::tool_calls(&[("h", "hang", "{}")], 1),
        script::text_reply("That tool is stuck."),
    ])
    .await
    .unwrap();
    let run = run(&server, &registry(vec![hang]), &fast_retries()).await;
    let events = run.tool_events();
    assert_eq!(events[1].1, ToolStatus::Error);
    assert!(
        events[1].2.as_deref().unwrap().contains("timeout"),
        "{events:?}"
    );
    let outcome = run.outcome.unwrap();
    assert_eq!(outcome.end, TurnEnd::Completed);
    assert_eq!(outcome.transcript.text, "That tool is stuck.");
    assert!(
        tool_messages(&server.requests()[1])[0]["content"]
            .as_str()
            .unwrap()
            .contains("\"kind\":\"timeout\"")
    );
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_event() {
    let boom = FnTool::new(
        ToolSpec::new("boom", "panics", json!({"type":"object"})),
        |_| async {
            panic!("kaboom");
        },
    );
    let server = ScriptedServer::start(vec![
        script::tool_calls(&[("x", "boom", "{}")], 1),
        script::text_reply("Oops."),
    ])
    .await
    .unwrap();
    let run = run(&server, &registry(vec![boom]), &fast_retries()).await;
    let events = run.tool_events();
    assert_eq!(events[1].1, ToolStatus::Error);
    assert!(events[1].2.as_deref().unwrap().contains("kaboom"));
    assert_eq!(run.outcome.unwrap().end, TurnEnd::Completed);
}

#[tokio::test]
async fn transient_tool_failures_are_retried_per_the_spec() {
    let attempts = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&attempts);
    let flaky = FnTool::new(
        ToolSpec::new("flaky", "fails once", json!({"type":"object"})).with_retries(2),
        move |_| {
            let counter = Arc::clone(&counter);
            async move {
                if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(ToolError::transient("network blip"))
                } else {
                    Ok("fine now".to_owned())
                }
            }
        },
    );
    let server = ScriptedServer::start(vec![
        script::tool_calls(&[("f", "flaky", "{}")], 1),
        script::text_reply("Ok."),
    ])
    .await
    .unwrap();
    let run = run(&server, &registry(vec![flaky]), &fast_retries()).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert_eq!(run.tool_events()[1].2.as_deref(), Some("fine now"));
}

#[tokio::test]
async fn schema_invalid_arguments_go_back_to_the_model_for_repair() {
    let add = FnTool::new(
        ToolSpec::new(
            "add",
            "adds",
            json!({"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}),
        ),
        |args| async move {
            Ok((args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0)).to_string())
        },
    );
    let server = ScriptedServer::start(vec![
        script::tool_calls(&[("c1", "add", r#"{"a":"two","b":3}"#)], 3),
        script::tool_calls(&[("c2", "add", r#"{"a":2,"b":3}"#)], 3),
        script::text_reply("Five."),
    ])
    .await
    .unwrap();
    let run = run(&server, &registry(vec![add]), &fast_retries()).await;
    let events = run.tool_events();
    assert_eq!(events[1].1, ToolStatus::Error);
    let complaint = events[1].2.clone().unwrap();
    assert!(
        complaint.contains("invalid_arguments") && complaint.contains("/a"),
        "{complaint}"
    );
    assert_eq!(
        events[3],
        (
            "add".to_owned(),
            ToolStatus::Completed,
            Some("5".to_owned())
        )
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        tool_messages(&requests[1])[0]["content"]
            .as_str()
            .unwrap()
            .contains("invalid_arguments")
    );
    let outcome = run.outcome.unwrap();
    assert_eq!(outcome.transcript.rounds, 3);
    assert_eq!(outcome.transcript.text, "Five.");
}

#[tokio::test]
async fn malformed_json_arguments_are_reported_not_crashed_on() {
    let server = ScriptedServer::start(vec![
        script::tool_calls(&[("c1", "echo", r#"{"text": "unterminated"#)], 2),
        script::text_reply("Sorry."),
    ])
    .await
    .unwrap();
    let run = run(&server, &registry(vec![echo_tool()]), &fast_retries()).await;
    let events = run.tool_events();
    assert_eq!(events[1].1, ToolStatus::Error);
    assert!(events[1].2.as_deref().unwrap().contains("not valid JSON"));
    assert_eq!(run.outcome.unwrap().end, TurnEnd::Completed);
}

#[tokio::test]
async fn the_round_cap_ends_the_turn_with_a_clear_outcome() {
    let mut responses = Vec::new();
    for round in 0..6 {
        let id = format!("r{round}");
        responses.push(script::tool_calls(
            &[(id.as_str(), "echo", r#"{"text":"again"}"#)],
            1,
        ));
    }
    let server = ScriptedServer::start(responses).await.unwrap();
    let run = run(&server, &registry(vec![echo_tool()]), &fast_retries()).await;
    let outcome = run.outcome.clone().unwrap();
    assert_eq!(outcome.end, TurnEnd::RoundLimit);
    assert_eq!(outcome.transcript.rounds, 6);
    assert_eq!(server.requests().len(), 6, "never a seventh request");
    let events = run.tool_events();
    // Five rounds ran (running + completed); the sixth round's call was refused.
    assert_eq!(
        events
            .iter()
            .filter(|e| e.1 == ToolStatus::Completed)
            .count(),
        5
    );
    let last = events.last().unwrap();
    assert_eq!(last.1, ToolStatus::Error);
    assert!(
        last.2
            .as_deref()
            .unwrap()
            .contains("limit of 6 tool rounds")
    );
    // Nothing lost: every call has its result in the transcript (a valid conversation to continue from).
    let calls = outcome
        .transcript
        .messages
        .iter()
        .filter(|m| matches!(m, ChatMessage::Tool { .. }))
        .count();
    assert_eq!(calls, 6);
}

#[tokio::test]
async fn tool_calls_with_finish_reason_stop_are_still_run() {
    let server = ScriptedServer::start(vec![
        script::tool_calls_finish_stop(&[("s1", "echo", r#"{"text":"x"}"#)], 2),
        script::text_reply("Done."),
    ])
    .await
    .unwrap();
    let run = run(&server, &registry(vec![echo_tool()]), &fast_retries()).await;
    assert_eq!(run.tool_events()[1].2.as_deref(), Some("echo: x"));
    assert_eq!(server.requests().len(), 2);
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

#[tokio::test]
async fn interrupt_during_tools_cancels_them() {
    let started = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&started);
    let slow = FnTool::new(
        ToolSpec::new("slow", "slow", json!({"type":"object"}))
            .with_timeout(Duration::from_secs(30)),
        move |_| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok("late".to_owned())
            }
        },
    );
    let server = ScriptedServer::start(vec![script::tool_calls(&[("s", "slow", "{}")], 1)])
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        canceller.cancel();
    });
    let run = run_with_cancel(
        &server.base_url(),
        &registry(vec![slow]),
        &fast_retries(),
        cancel,
        None,
    )
    .await;
    assert_eq!(started.load(Ordering::SeqCst), 1);
    assert!(
        matches!(run.outcome, Err(AgentError::Cancelled { .. })),
        "{:?}",
        run.outcome
    );
    assert!(run.tool_events().iter().any(|e| e.1 == ToolStatus::Error && e.2.as_deref().unwrap_or("").contains("cancelled")));
}
