//! Warm-up: evaluate the conversation's stable prefix (persona + tools + history) while the app starts,
//! so the first turn only evaluates the user's new message.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{EngineError, LocalEngine};

impl LocalEngine {
    /// Sends `messages` (OpenAI chat messages: the system prompt and the history, *without* the coming user
    /// message) and `tools` (OpenAI `tools` array, as the turns will send them) for a one-token answer.
    /// The engine keeps their tokens in its cache; a turn that starts with the same messages reuses them.
    /// Returns how long the evaluation took.
    pub async fn warm_up(&self, messages: &Value, tools: &Value) -> Result<Duration, EngineError> {
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
        Ok(started.elapsed())
    }
}
