//! Errors talking to the LLM server.

use tomo_protocol::ErrorCode;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the LLM server at {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("the LLM server answered HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("the LLM stream broke off: {0}")]
    Stream(String),
    #[error("the LLM server sent a malformed chunk: {0}")]
    Malformed(String),
    #[error("the LLM server did not answer within {0:.0?}")]
    Timeout(std::time::Duration),
    #[error("invalid LLM configuration: {0}")]
    Config(String),
    /// The embedded brain cannot serve: not installed, failed to start, or stopped for good. The message
    /// says what to do.
    #[error("{0}")]
    Brain(String),
    /// The turn streamed for longer, or more, than a turn may (a server that never stops).
    #[error("the answer was cut off: {0}")]
    TurnLimit(String),
    #[error("cancelled")]
    Cancelled,
}

impl LlmError {
    /// Whether trying the same request again may succeed. Exhaustive on purpose: a new variant must decide.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Unreachable { .. } => true,
            Self::Http { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            Self::Stream(_) => true,
            Self::Timeout(_) => true,
            Self::Malformed(_) => false,
            Self::Config(_) => false,
            // A restart in progress waits inside the client; what comes out here stays.
            Self::Brain(_) => false,
            // The next attempt would stream just as long.
            Self::TurnLimit(_) => false,
            Self::Cancelled => false,
        }
    }

    /// The same error with `secrets` replaced in every text it carries (a server may echo the key).
    pub fn redacted(self, secrets: &[&str]) -> Self {
        let r = |text: String| crate::redact::redact(&text, secrets);
        match self {
            Self::Unreachable { url, message } => Self::Unreachable {
                url: r(url),
                message: r(message),
            },
            Self::Http { status, message } => Self::Http {
                status,
                message: r(message),
            },
            Self::Stream(message) => Self::Stream(r(message)),
            Self::Malformed(message) => Self::Malformed(r(message)),
            Self::Config(message) => Self::Config(r(message)),
            Self::TurnLimit(message) => Self::TurnLimit(r(message)),
            Self::Brain(message) => Self::Brain(r(message)),
            Self::Timeout(after) => Self::Timeout(after),
            Self::Cancelled => Self::Cancelled,
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Unreachable { .. } | Self::Timeout(_) | Self::Brain(_) => {
                ErrorCode::LlmUnreachable
            }
            Self::Http { .. } => ErrorCode::LlmHttp,
            Self::Stream(_) | Self::TurnLimit(_) | Self::Cancelled => ErrorCode::LlmStream,
            Self::Malformed(_) => ErrorCode::LlmMalformed,
            Self::Config(_) => ErrorCode::Profile,
        }
    }
}
