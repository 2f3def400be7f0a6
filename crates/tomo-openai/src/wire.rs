//! The request and chunk bodies of the OpenAI chat-completions wire format.
//!
//! We use our own types (through async-openai's "bring your own types" API) because the stock chunk types
//! drop fields that real servers send, notably `reasoning_content` (DeepSeek, llama.cpp, vLLM) and
//! `reasoning` (Ollama, OpenRouter).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tomo_llm::{ChatMessage, Priority, ToolDefinition};

/// The request body we send.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChatRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [ChatMessage],
    pub stream: bool,
    /// Asks OpenAI-style servers for the trailing usage chunk; servers that do not know it ignore it.
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub tools: &'a [ToolDefinition],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Only to Tomo's own engine, only for side requests (see `connect_engine`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct StreamOptions {
    pub include_usage: bool,
}

/// One `chat.completion.chunk`. Every field is optional because servers differ in what they send.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChunkWire {
    #[serde(default)]
    pub choices: Vec<ChoiceWire>,
    #[serde(default)]
    pub usage: Option<Value>,
    /// Some servers report failures inside the stream as `{"error": {...}}`.
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChoiceWire {
    #[serde(default)]
    pub delta: DeltaWire,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct DeltaWire {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub reasoning_content: Option<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallDeltaWire>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ToolCallDeltaWire {
    /// Missing on some servers that send each call whole; the position in the array is used then.
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDeltaWire>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct FunctionDeltaWire {
    #[serde(default)]
    pub name: Option<String>,
    /// Normally a string fragment; a few servers send the whole arguments object as JSON.
    #[serde(default)]
    pub arguments: Option<Value>,
}
