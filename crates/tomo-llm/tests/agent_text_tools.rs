//! Tool calls written as text (small models) through the agent loop, against the scripted server: the call
//! is never streamed as text, runs like a structured call, a schema error goes back to the model (repair
//! round), and the repaired call's result reaches the next request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use tomo_llm::agent::TurnItem;
use tomo_protocol::{ToolStatus, TurnEnd};
use tomo_testkit::{ScriptedServer, script};

use support::agent::{echo_tool, fast_retries, registry, run, tool_messages};

#[tokio::test]
async fn a_fenced_call_is_run_repaired_and_answered_without_being_shown() {
    let server = ScriptedServer::start(vec![
        // Round 1: prose, then a call with a wrong argument name, in a fence.
        script::text_reply(
            "Let me check.\n```json\n{\"name\": \"echo\", \"arguments\": {\"txt\": \"hi\"}}\n```",
        ),
        // Round 2: the model corrects itself, as a <tool_call> block.
        script::text_reply(
            "<tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"hi\"}}</tool_call>",
        ),
        script::text_reply("It says hi."),
    ])
    .await
    .unwrap();
    let tools = registry(vec![echo_tool()]);
    let run = run(&server, &tools, &fast_retries()).await;
    let outcome = run.outcome.as_ref().unwrap();
    assert_eq!(outcome.end, TurnEnd::Completed);
    let events = run.tool_events();
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[1].1, ToolStatus::Error);
    assert!(
        events[1]
            .2
            .as_deref()
            .unwrap()
            .contains("invalid_arguments")
    );
    assert_eq!(
        events[3],
        (
            "echo".to_owned(),
            ToolStatus::Completed,
            Some("echo: hi".to_owned())
        )
    );
    let shown = run.text();
    assert!(shown.starts_with("Let me check."), "{shown}");
    assert!(shown.ends_with("It says hi."), "{shown}");
    assert!(
        !shown.contains("echo") && !shown.contains('{'),
        "calls are never shown: {shown}"
    );
    assert!(
        !run.items
            .iter()
            .any(|i| matches!(i, TurnItem::Text(t) if t.contains("tool_call")))
    );

    // What the model sees next: its call as a structured call and the error, then the result.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let assistant = &requests[1].messages()[2];
    assert_eq!(assistant["content"], "Let me check.\n");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "echo");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        r#"{"txt":"hi"}"#
    );
    assert!(
        tool_messages(&requests[1])[0]["content"]
            .as_str()
            .unwrap()
            .contains("invalid_arguments")
    );
    assert_eq!(
        tool_messages(&requests[2]).last().unwrap()["content"],
        "echo: hi"
    );
}

#[tokio::test]
async fn without_tools_offered_json_in_the_answer_is_just_text() {
    let answer = "{\"name\": \"echo\", \"arguments\": {\"text\": \"hi\"}}";
    let server = ScriptedServer::start(vec![script::text_reply(answer)])
        .await
        .unwrap();
    let tools = registry(vec![]);
    let run = run(&server, &tools, &fast_retries()).await;
    assert_eq!(run.outcome.as_ref().unwrap().end, TurnEnd::Completed);
    assert_eq!(run.text(), answer);
    assert!(run.tool_events().is_empty());
}
