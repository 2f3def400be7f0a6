//! Vector search support: an OpenAI-compatible `/embeddings` client, and vectors stored as little-endian
//! `f32` blobs compared by cosine similarity in Rust (a character has hundreds of facts, not millions, so
//! a scan is fast enough and needs no vector extension in SQLite).

use std::time::Duration;

use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("embeddings endpoint {url}: {message}")]
    Request { url: String, message: String },
}

/// Client for `POST <base_url>/embeddings`.
#[derive(Debug, Clone)]
pub struct Embedder {
    url: String,
    model: String,
    api_key: Option<String>,
    http: reqwest::Client,
}

impl Embedder {
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> Result<Self, EmbedError> {
        let url = format!("{}/embeddings", base_url.trim_end_matches('/'));
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| EmbedError::Request {
                url: url.clone(),
                message: format!("cannot build HTTP client: {e}"),
            })?;
        Ok(Self {
            url,
            model: model.to_owned(),
            api_key,
            http,
        })
    }

    /// One vector per input, in input order.
    pub async fn embed(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let fail = |message: String| EmbedError::Request {
            url: self.url.clone(),
            message,
        };
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let body = json!({ "model": self.model, "input": inputs });
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| fail(e.to_string()))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| fail(e.to_string()))?;
        if !status.is_success() {
            return Err(fail(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&bytes)
                    .chars()
                    .take(200)
                    .collect::<String>()
            )));
        }
        let value: Value =
            serde_json::from_slice(&bytes).map_err(|e| fail(format!("answer is not JSON: {e}")))?;
        parse_embeddings(&value, inputs.len()).map_err(fail)
    }
}

/// Reads `{"data": [{"index": 0, "embedding": [..]}, ..]}`, ordered by `index`.
fn parse_embeddings(value: &Value, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or("answer has no `data` array")?;
    let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(position);
        let vector: Vec<f32> = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or("a `data` item has no `embedding` array")?
            .iter()
            .filter_map(Value::as_f64)
            // Embedding components are f32 on every server; the narrowing is the storage format.
            .map(|x| x as f32)
            .collect();
        if let Some(slot) = out.get_mut(index) {
            *slot = Some(vector);
        }
    }
    out.into_iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| format!("no embedding for input {i}")))
        .collect()
}

pub fn encode_vector(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn decode_vector(blob: &[u8]) -> Option<Vec<f32>> {
    if !blob.len().is_multiple_of(4) {
        return None;
    }
    Some(
        blob.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

/// Cosine similarity; `None` when the dimensions differ (the model changed) or a vector is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f32> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    (na > 0.0 && nb > 0.0).then(|| dot / (na * nb))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn vectors_round_trip_and_compare() {
        let v = vec![0.5_f32, -1.0, 2.0];
        assert_eq!(decode_vector(&encode_vector(&v)).unwrap(), v);
        assert!((cosine(&v, &v).unwrap() - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&v, &[1.0]), None);
    }

    #[test]
    fn embeddings_are_ordered_by_index() {
        let answer = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]}
        ]});
        let vectors = parse_embeddings(&answer, 2).unwrap();
        assert_eq!(vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert!(parse_embeddings(&json!({"data": []}), 1).is_err());
    }
}
