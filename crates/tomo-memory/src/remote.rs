//! Client of an external memory service (the `http` backend). The contract is in
//! `plugins/memory/README.md`: `GET /memories/search` to recall, `POST /memories` to hand over a finished
//! exchange (the service extracts and supersedes facts itself).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("memory service {url}: {message}")]
    Request { url: String, message: String },
}

/// A memory as the service returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteMemory {
    pub id: String,
    pub fact: String,
    pub created_at: Option<DateTime<Utc>>,
}

impl RemoteMemory {
    pub fn line(&self) -> String {
        crate::learned::line(&self.fact, self.created_at)
    }
}

#[derive(Debug, Clone)]
pub struct RemoteMemoryClient {
    base_url: String,
    user_id: String,
    agent_id: String,
    http: reqwest::Client,
}

impl RemoteMemoryClient {
    pub fn new(
        base_url: &str,
        user_id: &str,
        agent_id: &str,
        timeout: Duration,
    ) -> Result<Self, RemoteError> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()
            .map_err(|e| RemoteError::Request {
                url: base_url.clone(),
                message: format!("cannot build HTTP client: {e}"),
            })?;
        Ok(Self {
            base_url,
            user_id: user_id.to_owned(),
            agent_id: agent_id.to_owned(),
            http,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `GET /memories/search?q=&agent_id=&user_id=&limit=`
    pub async fn search(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<RemoteMemory>, RemoteError> {
        let url = format!("{}/memories/search", self.base_url);
        let fail = |message: String| RemoteError::Request {
            url: url.clone(),
            message,
        };
        let mut parsed = reqwest::Url::parse(&url).map_err(|e| fail(e.to_string()))?;
        parsed
            .query_pairs_mut()
            .append_pair("q", query)
            .append_pair("agent_id", &self.agent_id)
            .append_pair("user_id", &self.user_id)
            .append_pair("limit", &limit.to_string());
        let response = self
            .http
            .get(parsed)
            .send()
            .await
            .map_err(|e| fail(describe(&e)))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| fail(describe(&e)))?;
        if !status.is_success() {
            return Err(fail(format!("HTTP {status}")));
        }
        let value: Value =
            serde_json::from_slice(&bytes).map_err(|e| fail(format!("answer is not JSON: {e}")))?;
        let items = value
            .get("memories")
            .and_then(Value::as_array)
            .ok_or_else(|| fail("answer has no `memories` list".to_owned()))?;
        Ok(items
            .iter()
            .filter_map(memory_from_json)
            .take(limit)
            .collect())
    }

    /// `POST /memories` with the finished exchange.
    pub async fn add_exchange(
        &self,
        user_text: &str,
        assistant_text: &str,
        source_turn: u64,
        at: DateTime<Utc>,
    ) -> Result<(), RemoteError> {
        let url = format!("{}/memories", self.base_url);
        let fail = |message: String| RemoteError::Request {
            url: url.clone(),
            message,
        };
        let body = json!({
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "messages": [
                {"role": "user", "content": user_text},
                {"role": "assistant", "content": assistant_text},
            ],
            "source_turn": source_turn,
            "at": at.to_rfc3339(),
        });
        let response = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| fail(describe(&e)))?;
        let status = response.status();
        if !status.is_success() {
            return Err(fail(format!("HTTP {status}")));
        }
        Ok(())
    }
}

/// reqwest's Display hides the cause ("error sending request"); the cause says "connection refused".
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn memory_from_json(item: &Value) -> Option<RemoteMemory> {
    let fact = ["memory", "fact", "text"]
        .iter()
        .find_map(|key| item.get(*key).and_then(Value::as_str))?
        .trim()
        .to_owned();
    if fact.is_empty() {
        return None;
    }
    let id = match item.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let created_at = item
        .get("created_at")
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|d| d.with_timezone(&Utc));
    Some(RemoteMemory {
        id,
        fact,
        created_at,
    })
}
