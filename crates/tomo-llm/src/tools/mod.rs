//! LLM-callable tools: the [`Tool`] trait and the [`ToolRegistry`] that validates arguments and runs calls
//! with a timeout, retries, and panic isolation.

mod registry;

pub use registry::{RegistryError, ToolExecution, ToolRegistry};

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Static description of a tool, as advertised to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Unique name within a registry (`^[a-zA-Z0-9_-]{1,64}$`, the OpenAI rule).
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// Upper bound for one attempt.
    pub timeout: Duration,
    /// Extra attempts after a failed one (errors marked retryable only).
    pub retries: u32,
}

impl ToolSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            timeout: Duration::from_secs(10),
            retries: 0,
        }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }
}

/// What a tool knows about the character it works for.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The character's memory space; tools that persist anything keep it under `data_dir`.
    pub agent_id: String,
    /// Per-character data directory (already includes the agent id).
    pub data_dir: PathBuf,
    /// Cancelled when the turn is interrupted.
    pub cancel: CancellationToken,
}

/// Why a tool call failed. The message goes back to the model as the tool result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("{message}")]
    Failed { message: String, retryable: bool },
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("tool panicked: {0}")]
    Panicked(String),
    #[error("cancelled")]
    Cancelled,
    #[error("unknown tool `{0}`")]
    UnknownTool(String),
}

impl ToolError {
    /// A failure that is not worth retrying.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            retryable: false,
        }
    }

    /// A transient failure (network, busy resource) that may succeed on retry.
    pub fn transient(message: impl Into<String>) -> Self {
        Self::Failed {
            message: message.into(),
            retryable: true,
        }
    }

    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Failed { retryable, .. } => *retryable,
            Self::Timeout(_) => true,
            Self::InvalidArguments(_) => false,
            Self::Panicked(_) => false,
            Self::Cancelled => false,
            Self::UnknownTool(_) => false,
        }
    }
}

/// An LLM-callable function.
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    /// Run the tool. `args` has already been validated against `spec().parameters`.
    /// Returns the text handed back to the model.
    fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<'static, Result<String, ToolError>>;
}
