//! The subset of the OpenAI chat-completions wire format that Tomo's client sends and reads
//! (crates/tomo-openai/src/wire.rs, crates/tomo-llm/src/messages.rs): messages with tool calls, `tools`, `stream` with
//! `stream_options.include_usage`, `temperature`, `max_tokens`, and Tomo's `priority`. Unknown fields are
//! ignored, as servers do.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub tools: Vec<Tool>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub top_p: Option<f32>,
    #[serde(default, alias = "max_completion_tokens")]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub seed: Option<u32>,
    /// `"background"`: a side request nobody waits for (Tomo's memory extraction, summaries); the engine
    /// serves conversation requests in the middle of it. Tomo's extension; absent means conversation.
    #[serde(default)]
    pub priority: tomo_llm::Priority,
}

#[derive(Debug, Clone, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Message {
    pub role: String,
    /// A string, `null` (assistant messages that only call tools), or OpenAI's array of text parts.
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// The text of the content, whatever its form (text parts are joined; other parts are skipped).
    pub fn text(&self) -> String {
        match &self.content {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            Some(other) => other.to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolCall {
    #[serde(default)]
    pub id: Option<String>,
    pub function: FunctionCall,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// JSON text (OpenAI) or, from some clients, a JSON object.
    #[serde(default)]
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Tool {
    pub function: FunctionDef,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub parameters: Value,
}

/// Token counts and times of one generation, sent as OpenAI's `usage` plus llama.cpp-style `timings`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub prompt_tokens: u32,
    /// Prompt tokens that were already in the KV cache (not evaluated again).
    pub cached_tokens: u32,
    pub completion_tokens: u32,
    /// Evaluating the new part of the prompt.
    pub prompt_ms: f64,
    /// From the first sampled token to the last.
    pub generation_ms: f64,
}

impl Usage {
    /// OpenAI's usage object; `timings` inside it too, because clients hand the usage object on whole
    /// (Tomo's `LlmEvent::Usage`, which `tomo bench llm` reads) and drop unknown top-level fields.
    pub fn usage_json(&self) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": { "cached_tokens": self.cached_tokens },
            "timings": self.timings_json(),
        })
    }

    pub fn timings_json(&self) -> Value {
        let evaluated = self.prompt_tokens.saturating_sub(self.cached_tokens);
        json!({
            "cache_n": self.cached_tokens,
            "prompt_n": evaluated,
            "prompt_ms": self.prompt_ms,
            "prompt_per_second": per_second(evaluated, self.prompt_ms),
            "predicted_n": self.completion_tokens,
            "predicted_ms": self.generation_ms,
            "predicted_per_second": per_second(self.completion_tokens.saturating_sub(1), self.generation_ms),
        })
    }
}

fn per_second(tokens: u32, ms: f64) -> f64 {
    if ms > 0.0 {
        f64::from(tokens) * 1000.0 / ms
    } else {
        0.0
    }
}

/// Identifies one completion in its chunks.
#[derive(Debug, Clone)]
pub struct CompletionId {
    pub id: String,
    pub created: u64,
    pub model: String,
}

impl CompletionId {
    pub fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish_reason }],
        })
    }

    /// The trailing chunk of `stream_options.include_usage`: no choices, only usage.
    pub fn usage_chunk(&self, usage: &Usage) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage.usage_json(),
            "timings": usage.timings_json(),
        })
    }

    pub fn completion(&self, text: &str, finish_reason: &str, usage: &Usage) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": text },
                "finish_reason": finish_reason,
            }],
            "usage": usage.usage_json(),
            "timings": usage.timings_json(),
        })
    }
}

/// An OpenAI-style error body.
pub fn error_body(message: &str, kind: &str) -> Value {
    json!({ "error": { "message": message, "type": kind } })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn tomo_requests_parse_including_tool_turns() {
        let body = json!({
            "model": "x",
            "messages": [
                {"role": "system", "content": "You are Hana."},
                {"role": "user", "content": "time?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "10:00"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "get_time", "description": "d", "parameters": {}}}],
            "temperature": 0.8,
            "max_tokens": 400,
            "unknown_field": 1,
        });
        let request: ChatRequest = serde_json::from_value(body).unwrap();
        assert!(request.stream);
        assert!(request.stream_options.unwrap().include_usage);
        assert_eq!(request.max_tokens, Some(400));
        assert_eq!(request.messages[2].tool_calls[0].function.name, "get_time");
        assert_eq!(request.messages[2].text(), "");
        assert_eq!(request.messages[4].text(), "ab");
        assert_eq!(request.tools[0].function.name, "get_time");
        assert_eq!(
            request.priority,
            tomo_llm::Priority::Conversation,
            "absent: a turn"
        );
    }

    #[test]
    fn a_side_request_says_so_and_a_wrong_priority_is_refused() {
        let side: ChatRequest = serde_json::from_value(json!({
            "messages": [], "priority": "background"
        }))
        .unwrap();
        assert_eq!(side.priority, tomo_llm::Priority::Background);
        let wrong =
            serde_json::from_value::<ChatRequest>(json!({"messages": [], "priority": "urgent"}));
        assert!(wrong.unwrap_err().to_string().contains("urgent"));
    }

    #[test]
    fn usage_counts_only_evaluated_prompt_tokens_for_the_speed() {
        let usage = Usage {
            prompt_tokens: 300,
            cached_tokens: 250,
            completion_tokens: 11,
            prompt_ms: 500.0,
            generation_ms: 1000.0,
        };
        let timings = usage.timings_json();
        assert_eq!(timings["prompt_n"], 50);
        assert_eq!(timings["prompt_per_second"], 100.0);
        assert_eq!(timings["predicted_per_second"], 10.0);
        assert_eq!(usage.usage_json()["total_tokens"], 311);
    }
}
