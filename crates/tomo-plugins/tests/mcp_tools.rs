//! MCP tools end to end: `connect_mcp` spawns the `tomo-mcp-fixture` binary over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use tomo_config::manifest::{McpServerConfig, ToolLimits};
use tomo_llm::tools::{Tool, ToolContext, ToolError};
use tomo_plugin_api::PluginError;
use tomo_plugins::connect_mcp;

fn fixture() -> McpServerConfig {
    McpServerConfig {
        command: env!("CARGO_BIN_EXE_tomo-mcp-fixture").to_owned(),
        args: Vec::new(),
        env: BTreeMap::from([("RUST_LOG".to_owned(), "warn".to_owned())]),
        pass_env: Vec::new(),
        startup_timeout_secs: 20.0,
    }
}

fn ctx() -> ToolContext {
    ToolContext {
        agent_id: "agent".into(),
        data_dir: std::env::temp_dir(),
        cancel: CancellationToken::new(),
    }
}

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.spec().name == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool `{name}`"))
}

#[tokio::test]
async fn lists_tools_with_schemas_and_limits() {
    let limits = ToolLimits {
        timeout_secs: 7.5,
        retries: 2,
        ..ToolLimits::default()
    };
    let tools = connect_mcp("fixture", &fixture(), &limits).await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "echo", "fail", "slow"]);

    let add = find(&tools, "add");
    let spec = add.spec();
    assert_eq!(spec.description, "Add two numbers");
    assert_eq!(
        spec.parameters["properties"]["a"],
        json!({"type": "number"})
    );
    assert_eq!(spec.parameters["required"], json!(["a", "b"]));
    assert_eq!(spec.timeout, Duration::from_millis(7500));
    assert_eq!(spec.retries, 2);
}

#[tokio::test]
async fn calls_add_and_echo() {
    let tools = connect_mcp("fixture", &fixture(), &ToolLimits::default())
        .await
        .unwrap();
    let sum = find(&tools, "add")
        .call(json!({"a": 2, "b": 40.5}), ctx())
        .await
        .unwrap();
    assert_eq!(sum, "42.5");
    let echoed = find(&tools, "echo")
        .call(json!({"text": "こんにちは, Tomo"}), ctx())
        .await
        .unwrap();
    assert_eq!(echoed, "こんにちは, Tomo");

    // Concurrent calls on one connection are answered independently.
    let (a, b) = tokio::join!(
        find(&tools, "slow").call(json!({"ms": 200}), ctx()),
        find(&tools, "echo").call(json!({"text": "fast"}), ctx()),
    );
    assert_eq!(a.unwrap(), "slept 200 ms");
    assert_eq!(b.unwrap(), "fast");
}

#[tokio::test]
async fn error_results_and_protocol_errors_fail_the_call() {
    let tools = connect_mcp("fixture", &fixture(), &ToolLimits::default())
        .await
        .unwrap();
    let err = find(&tools, "fail")
        .call(json!({}), ctx())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::failed("fixture failure: this tool always fails")
    );
    assert!(!err.is_retryable());

    let err = find(&tools, "add")
        .call(json!({"a": "two", "b": 1}), ctx())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`a` must be a number"), "{err}");
}

#[tokio::test]
async fn cancellation_stops_a_slow_call() {
    let tools = connect_mcp("fixture", &fixture(), &ToolLimits::default())
        .await
        .unwrap();
    let ctx = ctx();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let err = find(&tools, "slow")
        .call(json!({"ms": 10_000}), ctx)
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    // The connection is still usable afterwards.
    let out = find(&tools, "echo")
        .call(json!({"text": "still here"}), self::ctx())
        .await
        .unwrap();
    assert_eq!(out, "still here");
}

#[tokio::test]
async fn nonexistent_command_is_a_start_error() {
    let server = McpServerConfig {
        command: "tomo-definitely-not-an-mcp-server".into(),
        ..fixture()
    };
    let err = connect_mcp("ghost", &server, &ToolLimits::default())
        .await
        .err()
        .unwrap();
    match err {
        PluginError::Start { plugin, message } => {
            assert_eq!(plugin, "ghost");
            assert!(
                message.contains("tomo-definitely-not-an-mcp-server"),
                "{message}"
            );
        }
        other => panic!("expected Start, got {other:?}"),
    }
}

#[tokio::test]
async fn server_process_ends_when_the_last_tool_is_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("pid");
    let mut server = fixture();
    server.env.insert(
        "TOMO_FIXTURE_PID_FILE".into(),
        pid_file.display().to_string(),
    );
    let tools = connect_mcp("fixture", &server, &ToolLimits::default())
        .await
        .unwrap();
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists(), "fixture runs");

    let echo = find(&tools, "echo");
    drop(tools);
    // One tool still holds the connection.
    assert_eq!(
        echo.call(json!({"text": "alive"}), ctx()).await.unwrap(),
        "alive"
    );
    assert!(proc_dir.exists(), "still running while a tool is alive");

    drop(echo);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while proc_dir.exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !proc_dir.exists(),
        "fixture process {pid} outlived its tools"
    );
}
