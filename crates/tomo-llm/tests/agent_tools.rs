//! The agent loop's tool calls against the scripted server: fragment assembly, concurrency, timeouts,
//! panics, retries, schema repair, the round cap, cancellation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;
use tomo_llm::ChatMessage;
use tomo_llm::agent::AgentError;
use tomo_llm::tools::{ToolError, ToolSpec};
use tomo_protocol::{ToolStatus, TurnEnd};
use tomo_testkit::{ScriptedServer, script};

use support::FnTool;
use support::agent::{echo_tool, fast_retries, registry, run, run_with_cancel, tool_messages};

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
    // Cancel once the tool is running (a fixed delay raced the HTTP round trip on a loaded machine).
    let running = Arc::clone(&started);
    tokio::spawn(async move {
        while running.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
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

/// A tool that answers with megabytes (an MCP server's dump): cut to the spec's cap with a marker, in
/// the event clients see and in the message the model and the history get.
#[tokio::test]
async fn huge_tool_output_is_truncated_with_a_marker() {
    let server = ScriptedServer::start(vec![
        script::tool_calls(&[("c1", "dump", "{}")], 1),
        script::text_reply("That was a lot."),
    ])
    .await
    .unwrap();
    let dump = FnTool::new(
        ToolSpec::new("dump", "Dumps", json!({"type": "object"})),
        |_| async { Ok("é".repeat(3 * 1024 * 1024)) },
    );
    let run = run(&server, &registry(vec![dump]), &fast_retries()).await;
    let events = run.tool_events();
    let shown = events[1].2.as_deref().unwrap();
    assert!(shown.len() < 33 * 1024, "{} bytes", shown.len());
    assert!(
        shown.ends_with("[tool output truncated: 32768 of 6291456 bytes shown]"),
        "{}",
        &shown[shown.len() - 80..]
    );
    assert_eq!(run.outcome.unwrap().end, TurnEnd::Completed);
    let sent = tool_messages(&server.requests()[1]);
    assert_eq!(sent[0]["content"].as_str().unwrap(), shown);
}
