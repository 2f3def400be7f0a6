//! The streaming agent loop: one user turn = up to `max_rounds` LLM requests; each round streams text at
//! once, assembles tool calls, runs all calls of the round concurrently, feeds results back, continues.

mod round;
pub mod text_tools;

use std::time::Duration;

use tokio::sync::mpsc;

use crate::tools::{ToolContext, ToolRegistry};
use crate::{ChatMessage, LlmClient, LlmError};
use tomo_protocol::{ToolCallEvent, TurnEnd};

/// Limits of the loop.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// LLM requests per turn (the spec caps this at 6).
    pub max_rounds: u32,
    /// Retries of a request that failed before its first token.
    pub max_retries: u32,
    /// First backoff delay; doubles with each retry.
    pub retry_base_delay: Duration,
    /// How long the model may stream in one turn, all rounds together (tools not counted): the idle
    /// timeout never fires on a server that keeps sending.
    pub max_turn_duration: Duration,
    /// How much text, reasoning and tool-call arguments the model may stream in one turn.
    pub max_turn_bytes: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_rounds: 6,
            max_retries: 2,
            retry_base_delay: Duration::from_millis(300),
            // A slow CPU model at 2 tokens/s still says 1,200 tokens in ten minutes.
            max_turn_duration: Duration::from_secs(600),
            // About 40,000 words: far beyond any spoken answer.
            max_turn_bytes: 256 * 1024,
        }
    }
}

/// What the loop streams while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnItem {
    Text(String),
    Reasoning(String),
    ToolCall(ToolCallEvent),
    /// A request failed before its first token and is being retried.
    Retrying {
        attempt: u32,
        error: LlmError,
    },
}

/// Everything a turn produced, for history.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnTranscript {
    /// The assistant text of every round, joined.
    pub text: String,
    /// Assistant and tool messages to append after the user message, in order.
    pub messages: Vec<ChatMessage>,
    /// Text of a round that was cut off (interrupt or error), not yet in `messages`.
    pub unfinished_text: String,
    pub rounds: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub end: TurnEnd,
    pub transcript: TurnTranscript,
}

/// A turn that did not complete. The transcript keeps everything produced before it stopped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentError {
    #[error("{error}")]
    Llm {
        error: LlmError,
        transcript: TurnTranscript,
    },
    #[error("turn cancelled")]
    Cancelled { transcript: TurnTranscript },
}

/// Runs one turn. `messages` is the full context (system, history, the new user message).
/// Items are sent on `items` as they happen; a closed receiver is treated as a cancellation.
pub async fn run_turn(
    client: &LlmClient,
    tools: &ToolRegistry,
    config: &AgentConfig,
    mut messages: Vec<ChatMessage>,
    tool_ctx: ToolContext,
    items: mpsc::Sender<TurnItem>,
) -> Result<TurnOutcome, AgentError> {
    let mut transcript = TurnTranscript::default();
    let definitions = tools.definitions();
    let max_rounds = config.max_rounds.max(1);
    let mut budget = round::TurnBudget::new(config);
    for round in 1..=max_rounds {
        transcript.rounds = round;
        let request = round::RoundRequest {
            client,
            messages: &messages,
            tools: &definitions,
        };
        let streamed = round::stream_round(
            &request,
            config,
            round,
            &tool_ctx.cancel,
            &items,
            &mut budget,
        )
        .await;
        let streamed = match streamed {
            Ok(streamed) => streamed,
            Err(round::RoundError::Llm {
                error,
                partial_text,
            }) => {
                transcript.unfinished_text = partial_text;
                join_text(&mut transcript.text, &transcript.unfinished_text);
                return Err(AgentError::Llm { error, transcript });
            }
            Err(round::RoundError::Cancelled { partial_text }) => {
                transcript.unfinished_text = partial_text;
                join_text(&mut transcript.text, &transcript.unfinished_text);
                return Err(AgentError::Cancelled { transcript });
            }
        };
        join_text(&mut transcript.text, &streamed.text);
        if streamed.calls.is_empty() {
            transcript
                .messages
                .push(ChatMessage::assistant(streamed.text));
            return Ok(TurnOutcome {
                end: TurnEnd::Completed,
                transcript,
            });
        }
        let assistant = ChatMessage::Assistant {
            content: (!streamed.text.is_empty()).then(|| streamed.text.clone()),
            tool_calls: streamed.calls.iter().map(round::to_wire).collect(),
        };
        transcript.messages.push(assistant.clone());
        messages.push(assistant);
        let results = if round == max_rounds {
            // The model still wants tools after the last allowed round. Answer each call so the history stays
            // a valid conversation, and end the turn with what was said so far.
            round::refuse_calls(&streamed.calls, round, &items).await
        } else {
            round::run_calls(tools, &streamed.calls, round, &tool_ctx, &items).await
        };
        transcript.messages.extend(results.iter().cloned());
        messages.extend(results);
        if tool_ctx.cancel.is_cancelled() {
            return Err(AgentError::Cancelled { transcript });
        }
        if round == max_rounds {
            return Ok(TurnOutcome {
                end: TurnEnd::RoundLimit,
                transcript,
            });
        }
    }
    // Unreachable in practice (the loop returns on its last round), kept total for safety.
    Ok(TurnOutcome {
        end: TurnEnd::RoundLimit,
        transcript,
    })
}

fn join_text(total: &mut String, more: &str) {
    if more.is_empty() {
        return;
    }
    if !total.is_empty()
        && !total.ends_with(char::is_whitespace)
        && !more.starts_with(char::is_whitespace)
    {
        total.push(' ');
    }
    total.push_str(more);
}
