//! Helpers for the agent-loop tests: a client for the scripted server, a runner that collects items.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tomo_llm::agent::{AgentConfig, AgentError, TurnItem, TurnOutcome, run_turn};
use tomo_llm::tools::{ToolContext, ToolRegistry, ToolSpec};
use tomo_llm::{ChatMessage, LlmClient, LlmEndpoint};
use tomo_protocol::ToolStatus;
use tomo_testkit::ScriptedServer;

use super::FnTool;

pub fn client(base_url: &str) -> LlmClient {
    tomo_openai::connect(LlmEndpoint {
        base_url: base_url.to_owned(),
        model: "scripted-model".to_owned(),
        api_key: Some("sk-test-secret".to_owned()),
        temperature: Some(0.5),
        max_tokens: None,
        idle_timeout: Duration::from_secs(5),
    })
    .unwrap()
}

pub fn fast_retries() -> AgentConfig {
    AgentConfig {
        retry_base_delay: Duration::from_millis(10),
        ..AgentConfig::default()
    }
}

pub fn ctx(cancel: &CancellationToken) -> ToolContext {
    ToolContext {
        agent_id: "test".to_owned(),
        data_dir: std::env::temp_dir(),
        cancel: cancel.clone(),
    }
}

pub fn start_messages() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a test."),
        ChatMessage::user("hi"),
    ]
}

pub struct Run {
    pub outcome: Result<TurnOutcome, AgentError>,
    pub items: Vec<TurnItem>,
}

impl Run {
    pub fn text(&self) -> String {
        self.items
            .iter()
            .filter_map(|i| match i {
                TurnItem::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn tool_events(&self) -> Vec<(String, ToolStatus, Option<String>)> {
        self.items
            .iter()
            .filter_map(|i| match i {
                TurnItem::ToolCall(e) => Some((e.tool_name.clone(), e.status, e.result.clone())),
                _ => None,
            })
            .collect()
    }
}

pub async fn run(server: &ScriptedServer, tools: &ToolRegistry, config: &AgentConfig) -> Run {
    run_with_cancel(
        &server.base_url(),
        tools,
        config,
        CancellationToken::new(),
        None,
    )
    .await
}

pub async fn run_with_cancel(
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

pub fn echo_tool() -> Arc<FnTool> {
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

pub fn registry(tools: Vec<Arc<FnTool>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool).unwrap();
    }
    registry
}

pub fn tool_messages(request: &tomo_testkit::RecordedRequest) -> Vec<Value> {
    request
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}
