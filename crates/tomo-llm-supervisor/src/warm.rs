//! Warm-up: evaluate the conversation's stable prefix (persona + tools + history) while the app starts,
//! so the first turn only evaluates the user's new message.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{EngineError, LocalEngine};

/// What one warm-up did, from the engine's own counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WarmUp {
    pub elapsed: Duration,
    /// Tokens of the prefix (and the one-token answer's prompt).
    pub prompt_tokens: u64,
    /// Of those, already in the cache before (0 on the first warm-up).
    pub cached_tokens: u64,
}

impl LocalEngine {
    /// Sends `messages` (OpenAI chat messages: the system prompt and the history, *without* the coming user
    /// message) and `tools` (OpenAI `tools` array, as the turns will send them) for a one-token answer.
    /// The engine keeps their tokens in its cache; a turn that starts with the same messages reuses them.
    pub async fn warm_up(&self, messages: &Value, tools: &Value) -> Result<WarmUp, EngineError> {
        let started = Instant::now();
        let mut body = json!({
            "messages": messages,
            "max_tokens": 1,
            "temperature": 0,
            "stream": false,
        });
        if tools.as_array().is_some_and(|t| !t.is_empty()) {
            body["tools"] = tools.clone();
        }
        let response = self
            .http()
            .post(format!("{}/chat/completions", self.base_url()))
            .bearer_auth(self.api_key())
            .header("content-type", "application/json")
            .body(body.to_string())
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .map_err(|e| EngineError::Request(format!("warm-up: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(EngineError::Request(format!(
                "warm-up: HTTP {}: {}",
                status.as_u16(),
                text.chars().take(300).collect::<String>()
            )));
        }
        let text = response
            .text()
            .await
            .map_err(|e| EngineError::Request(format!("warm-up: {e}")))?;
        let body: Value = serde_json::from_str(&text).unwrap_or_default();
        let usage = &body["usage"];
        Ok(WarmUp {
            elapsed: started.elapsed(),
            prompt_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
            cached_tokens: usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0),
        })
    }
}
