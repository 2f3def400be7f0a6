//! One round of the agent loop: a streamed request (with retries before the first token) and the
//! concurrent execution of the tool calls it produced.

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::text_tools::TextToolFilter;
use super::{AgentConfig, TurnItem};
use crate::tools::{ToolContext, ToolError, ToolRegistry};
use crate::{
    AssembledCall, ChatMessage, FunctionCall, LlmClient, LlmError, LlmEvent, LlmStream,
    ToolCallAssembler, ToolDefinition, WireToolCall,
};
use tomo_protocol::{ToolCallEvent, ToolStatus};

pub(super) struct StreamedRound {
    pub text: String,
    pub calls: Vec<AssembledCall>,
}

pub(super) enum RoundError {
    Llm {
        error: LlmError,
        partial_text: String,
    },
    Cancelled {
        partial_text: String,
    },
}

/// What is left of the turn's streaming bounds ([`AgentConfig::max_turn_duration`] and
/// [`AgentConfig::max_turn_bytes`]).
pub(super) struct TurnBudget {
    deadline: tokio::time::Instant,
    bytes_left: usize,
    config_duration: std::time::Duration,
    config_bytes: usize,
}

impl TurnBudget {
    pub(super) fn new(config: &AgentConfig) -> Self {
        let now = tokio::time::Instant::now();
        Self {
            // A duration too big to add means no bound in practice.
            deadline: now
                .checked_add(config.max_turn_duration)
                .unwrap_or(now + std::time::Duration::from_secs(86_400 * 365)),
            bytes_left: config.max_turn_bytes,
            config_duration: config.max_turn_duration,
            config_bytes: config.max_turn_bytes,
        }
    }

    fn spend(&mut self, bytes: usize) -> Result<(), LlmError> {
        match self.bytes_left.checked_sub(bytes) {
            Some(left) => {
                self.bytes_left = left;
                Ok(())
            }
            None => Err(LlmError::TurnLimit(format!(
                "the model streamed more than {} bytes in one turn",
                self.config_bytes
            ))),
        }
    }

    fn expired(&self) -> LlmError {
        LlmError::TurnLimit(format!(
            "the model streamed for more than {:.0?} in one turn",
            self.config_duration
        ))
    }
}

/// What one request sends: the client it goes through, the context and the tools offered.
pub(super) struct RoundRequest<'a> {
    pub client: &'a LlmClient,
    pub messages: &'a [ChatMessage],
    pub tools: &'a [ToolDefinition],
}

/// What one attempt of a request has produced so far (started afresh on each retry).
struct Attempt {
    text: String,
    assembler: ToolCallAssembler,
    forwarded_anything: bool,
    /// Small models write tool calls as text: held back from the stream and run like structured ones.
    text_calls: Option<TextCalls>,
}

impl Attempt {
    fn new(tools: &[ToolDefinition]) -> Self {
        Self {
            text: String::new(),
            assembler: ToolCallAssembler::default(),
            forwarded_anything: false,
            text_calls: (!tools.is_empty())
                .then(|| TextCalls::new(tools.iter().map(|t| t.function.name.clone()))),
        }
    }
}

/// Streams one request. Text and reasoning are forwarded as they arrive. A failure before anything was
/// forwarded is retried (if retryable) with exponential backoff; after that, retrying would repeat words.
pub(super) async fn stream_round(
    request: &RoundRequest<'_>,
    config: &AgentConfig,
    round: u32,
    cancel: &CancellationToken,
    items: &mpsc::Sender<TurnItem>,
    budget: &mut TurnBudget,
) -> Result<StreamedRound, RoundError> {
    let mut attempt = 0;
    loop {
        let mut progress = Attempt::new(request.tools);
        let result = stream_once(request, cancel, items, &mut progress, budget).await;
        let Attempt {
            text,
            assembler,
            forwarded_anything,
            text_calls,
        } = progress;
        match result {
            Ok(()) => {
                let mut calls = assembler.finish(round);
                if let Some(found) = text_calls {
                    calls.extend(found.into_calls(round));
                }
                return Ok(StreamedRound { text, calls });
            }
            Err(RoundError::Llm { error, .. })
                if !forwarded_anything && error.is_retryable() && attempt < config.max_retries =>
            {
                attempt += 1;
                tracing::info!(attempt, %error, "LLM request failed before the first token, retrying");
                if items
                    .send(TurnItem::Retrying {
                        attempt,
                        error: error.clone(),
                    })
                    .await
                    .is_err()
                {
                    return Err(RoundError::Cancelled {
                        partial_text: String::new(),
                    });
                }
                let delay = config.retry_base_delay * 2u32.saturating_pow(attempt - 1);
                tokio::select! {
                    () = cancel.cancelled() => return Err(RoundError::Cancelled { partial_text: String::new() }),
                    () = tokio::time::sleep(delay) => {}
                }
            }
            Err(RoundError::Llm { error, .. }) => {
                return Err(RoundError::Llm {
                    error,
                    partial_text: text,
                });
            }
            Err(RoundError::Cancelled { .. }) => {
                return Err(RoundError::Cancelled { partial_text: text });
            }
        }
    }
}

async fn stream_once(
    request: &RoundRequest<'_>,
    cancel: &CancellationToken,
    items: &mpsc::Sender<TurnItem>,
    progress: &mut Attempt,
    budget: &mut TurnBudget,
) -> Result<(), RoundError> {
    let Attempt {
        text,
        assembler,
        forwarded_anything,
        text_calls,
    } = progress;
    let cancelled = || RoundError::Cancelled {
        partial_text: String::new(),
    };
    let llm = |error| RoundError::Llm {
        error,
        partial_text: String::new(),
    };
    let deadline = budget.deadline;
    let mut stream: LlmStream = tokio::select! {
        () = cancel.cancelled() => return Err(cancelled()),
        () = tokio::time::sleep_until(deadline) => return Err(llm(budget.expired())),
        started = request.client.stream_chat(request.messages, request.tools) => started.map_err(llm)?,
    };
    loop {
        let next = tokio::select! {
            () = cancel.cancelled() => return Err(cancelled()),
            () = tokio::time::sleep_until(deadline) => return Err(llm(budget.expired())),
            next = stream.next() => next,
        };
        let event = match next {
            None => {
                if let Some(found) = text_calls.as_mut() {
                    let rest = found.finish();
                    if !rest.is_empty() {
                        text.push_str(&rest);
                        if items.send(TurnItem::Text(rest)).await.is_err() {
                            return Err(cancelled());
                        }
                    }
                }
                return Ok(());
            }
            Some(Err(error)) => return Err(llm(error)),
            Some(Ok(event)) => event,
        };
        let size = match &event {
            LlmEvent::Text(delta) | LlmEvent::Reasoning(delta) => delta.len(),
            LlmEvent::ToolCall(fragment) => {
                let arguments = match &fragment.arguments {
                    Some(Value::String(text)) => text.len(),
                    Some(other) => other.to_string().len(),
                    None => 0,
                };
                arguments + fragment.name.as_ref().map_or(0, String::len)
            }
            LlmEvent::Finish(_) | LlmEvent::Usage(_) => 0,
        };
        budget.spend(size).map_err(llm)?;
        match event {
            LlmEvent::Text(delta) => {
                let delta = match text_calls.as_mut() {
                    Some(found) => found.push(&delta),
                    None => delta,
                };
                if delta.is_empty() {
                    continue;
                }
                text.push_str(&delta);
                *forwarded_anything = true;
                if items.send(TurnItem::Text(delta)).await.is_err() {
                    return Err(cancelled());
                }
            }
            LlmEvent::Reasoning(delta) => {
                *forwarded_anything = true;
                if items.send(TurnItem::Reasoning(delta)).await.is_err() {
                    return Err(cancelled());
                }
            }
            LlmEvent::ToolCall(fragment) => {
                *forwarded_anything = true;
                assembler.push(fragment);
            }
            // Calls are run whether the server says "tool_calls" or (as some do) "stop".
            LlmEvent::Finish(reason) => tracing::debug!(%reason, "round finished"),
            LlmEvent::Usage(usage) => tracing::debug!(%usage, "token usage"),
        }
    }
}

/// The text filter of one request and the calls it found.
struct TextCalls {
    filter: TextToolFilter,
    calls: Vec<super::text_tools::TextToolCall>,
}

impl TextCalls {
    fn new(names: impl IntoIterator<Item = String>) -> Self {
        Self {
            filter: TextToolFilter::new(names),
            calls: Vec::new(),
        }
    }

    /// The visible part of `delta`.
    fn push(&mut self, delta: &str) -> String {
        let out = self.filter.push(delta);
        self.calls.extend(out.calls);
        out.text
    }

    fn finish(&mut self) -> String {
        let out = self.filter.finish();
        self.calls.extend(out.calls);
        out.text
    }

    fn into_calls(self, round: u32) -> impl Iterator<Item = AssembledCall> {
        self.calls
            .into_iter()
            .enumerate()
            .map(move |(n, call)| AssembledCall {
                id: format!("call_r{round}_text{n}"),
                name: call.name,
                arguments: call.arguments,
            })
    }
}

pub(super) fn to_wire(call: &AssembledCall) -> WireToolCall {
    WireToolCall {
        id: call.id.clone(),
        kind: "function".to_owned(),
        function: FunctionCall {
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        },
    }
}

fn parsed_args(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

fn event(call: &AssembledCall, round: u32, status: ToolStatus, result: Option<String>) -> TurnItem {
    TurnItem::ToolCall(ToolCallEvent {
        tool_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: parsed_args(&call.arguments),
        status,
        result,
        round,
    })
}

/// Text handed back to the model for a failed call: structured, so it can correct itself.
fn error_result(error: &ToolError) -> String {
    let kind = match error {
        ToolError::InvalidArguments(_) => "invalid_arguments",
        ToolError::Failed { .. } => "failed",
        ToolError::Timeout(_) => "timeout",
        ToolError::Panicked(_) => "crashed",
        ToolError::Cancelled => "cancelled",
        ToolError::UnknownTool(_) => "unknown_tool",
    };
    serde_json::json!({ "error": { "kind": kind, "message": error.to_string() } }).to_string()
}

/// Announces every call as running, runs them all at once, reports each as it ends, and returns the tool
/// messages in call order.
pub(super) async fn run_calls(
    tools: &ToolRegistry,
    calls: &[AssembledCall],
    round: u32,
    ctx: &ToolContext,
    items: &mpsc::Sender<TurnItem>,
) -> Vec<ChatMessage> {
    for call in calls {
        // A closed receiver means the turn is gone; the cancel token stops the tools below.
        let _ = items
            .send(event(call, round, ToolStatus::Running, None))
            .await;
    }
    let mut running: FuturesUnordered<_> = calls
        .iter()
        .enumerate()
        .map(|(position, call)| {
            let ctx = ctx.clone();
            async move {
                (
                    position,
                    tools.execute(&call.name, &call.arguments, ctx).await,
                )
            }
        })
        .collect();
    let mut results: Vec<Option<String>> = vec![None; calls.len()];
    while let Some((position, execution)) = running.next().await {
        let call = &calls[position];
        let (status, content) = match &execution.result {
            Ok(output) => (ToolStatus::Completed, output.clone()),
            Err(error) => {
                tracing::warn!(tool = %call.name, %error, "tool call failed");
                (ToolStatus::Error, error_result(error))
            }
        };
        let _ = items
            .send(event(call, round, status, Some(content.clone())))
            .await;
        results[position] = Some(content);
    }
    calls
        .iter()
        .zip(results)
        .map(|(call, content)| ChatMessage::Tool {
            tool_call_id: call.id.clone(),
            content: content.unwrap_or_else(|| error_result(&ToolError::Cancelled)),
        })
        .collect()
}

/// Calls requested in the last allowed round are not run; each gets an explicit error result.
pub(super) async fn refuse_calls(
    calls: &[AssembledCall],
    round: u32,
    items: &mpsc::Sender<TurnItem>,
) -> Vec<ChatMessage> {
    let reason = ToolError::failed(format!(
        "not run: the limit of {round} tool rounds for one turn was reached"
    ));
    let content = error_result(&reason);
    let mut messages = Vec::with_capacity(calls.len());
    for call in calls {
        let _ = items
            .send(event(call, round, ToolStatus::Error, Some(content.clone())))
            .await;
        messages.push(ChatMessage::Tool {
            tool_call_id: call.id.clone(),
            content: content.clone(),
        });
    }
    messages
}
