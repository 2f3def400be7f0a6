//! Scripted OpenAI-compatible streaming server for Tomo's tests and benchmarks.
//!
//! [`ScriptedServer`] binds `127.0.0.1:0` and answers `POST /v1/chat/completions` from a queue of
//! [`ScriptedResponse`]s, one per request, in arrival order. HTTP/1.1 is written by hand (not via a
//! framework) so tests control every byte: streams are real `Transfer-Encoding: chunked` SSE, and a
//! [`StreamStep::Disconnect`] really cuts the body short, as a crashed or flaky server would.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tomo_testkit::TestkitError> {
//! use tomo_testkit::{ScriptedServer, script};
//! let server = ScriptedServer::start(vec![script::text_reply("Hello there!")]).await?;
//! // point the client under test at `server.base_url()`, then inspect what it sent:
//! let requests = server.wait_for_requests(1, std::time::Duration::from_secs(5)).await?;
//! # let _ = requests;
//! # Ok(()) }
//! ```

pub mod chunk;
mod foreign_lock;
mod http;
pub mod prereq;
pub mod script;
mod server;

use std::time::Duration;

use serde_json::Value;

pub use foreign_lock::ForeignLock;
pub use server::{NO_RESPONSE_LEFT, ScriptedServer};

/// Errors from starting or querying a [`ScriptedServer`].
#[derive(Debug, thiserror::Error)]
pub enum TestkitError {
    #[error("scripted server: cannot bind 127.0.0.1: {0}")]
    Bind(#[source] std::io::Error),
    #[error("scripted server: expected {expected} request(s) within {timeout:?}, got {received}")]
    Timeout {
        expected: usize,
        received: usize,
        timeout: Duration,
    },
}

/// One request the server received on `POST …/chat/completions`, recorded before it was answered.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// Request target as sent, including any query string (e.g. `/v1/chat/completions`).
    pub path: String,
    /// Header names are lowercased (HTTP names are case-insensitive); values are trimmed. Order and
    /// duplicates are kept as sent.
    pub headers: Vec<(String, String)>,
    /// The JSON body. An empty body is `Null`; a body that is not JSON is kept as a `String`
    /// (lossy UTF-8) so a test can still see what the client sent (the server answers 400 then).
    pub body: Value,
}

impl RecordedRequest {
    /// The `messages` array of the chat request, or an empty slice if there is none.
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// First value of a header, case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How the server answers one chat-completions request.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedResponse {
    /// `200 OK` SSE stream made of these steps, then the terminal chunk (unless a
    /// [`StreamStep::Disconnect`] cut it short).
    Stream(Vec<StreamStep>),
    /// Plain HTTP error with an OpenAI-style error body
    /// `{"error":{"message":..,"type":..,"param":null,"code":..}}`.
    Status { code: u16, message: String },
    /// Accept and read the request, then never answer (until the server is dropped).
    Hang,
    /// Accept and read the request, then close without any response.
    Close,
}

/// One step of a [`ScriptedResponse::Stream`]. Every write is its own HTTP chunk, flushed at once.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamStep {
    /// `data: <json>\n\n`.
    Chunk(Value),
    /// Written verbatim as SSE text, e.g. `"data: {not json\n\n"` or `": keepalive\n\n"`.
    /// An empty string writes nothing (an empty HTTP chunk would end the body).
    Raw(String),
    /// Pause before the next step (time to first token, inter-token latency).
    Delay(Duration),
    /// `data: [DONE]\n\n`.
    Done,
    /// Drop the connection at once, without the terminal `0\r\n\r\n` chunk: the client sees an
    /// incomplete body. Steps after it are never reached.
    Disconnect,
}
