//! The seam between the agent loop and whatever serves the model: a [`ChatModel`] streams one chat
//! completion as [`LlmEvent`]s. The OpenAI-compatible HTTP client (crate `tomo-openai`) is one; tests
//! and other engines can be others. [`LlmClient`] is the cheap handle everything passes around.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{Stream, StreamExt};

use crate::anticipate::AnticipationSlot;
use crate::assemble::ToolCallFragment;
use crate::error::LlmError;
use crate::messages::{ChatMessage, Priority, ToolDefinition};

/// Where and how to reach the model. The key is held here only; `Debug` never prints it.
#[derive(Clone)]
pub struct LlmEndpoint {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// Longest silence allowed while connecting or between two chunks.
    pub idle_timeout: Duration,
}

impl fmt::Debug for LlmEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmEndpoint")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

/// What the stream yields, already decoded from chunks.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmEvent {
    Text(String),
    Reasoning(String),
    ToolCall(ToolCallFragment),
    /// `finish_reason` of the choice ("stop", "tool_calls", "length", ...).
    Finish(String),
    Usage(serde_json::Value),
}

pub type LlmStream = Pin<Box<dyn Stream<Item = Result<LlmEvent, LlmError>> + Send>>;

/// What a warm-up evaluated: how much of the prefix the engine already had, how much it added.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WarmedUp {
    pub prompt_tokens: u64,
    /// Tokens that were in the engine's cache already (not evaluated again).
    pub cached_tokens: u64,
    pub elapsed: Duration,
}

/// Something that serves chat completions.
pub trait ChatModel: Send + Sync {
    fn endpoint(&self) -> &LlmEndpoint;

    /// Evaluates `messages` (the system prompt and history of the *next* request, without its user
    /// message) and `tools` ahead of time, so that request finds them in the engine's prefix cache.
    /// `Ok(None)`: this model does not warm up (the default: a cloud endpoint would bill it).
    fn warm_up<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<Option<WarmedUp>, LlmError>> {
        let _ = (messages, tools);
        Box::pin(async { Ok(None) })
    }

    /// Starts one streamed completion. Errors before the first chunk come back here; later ones in the
    /// stream. A stream that ends without a `Finish` must end with an error: a server that dies
    /// mid-answer must not look like a short answer.
    fn stream_chat<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<LlmStream, LlmError>>;

    /// Starts a side request (a summary, memory extraction) without tools: one nobody waits for. An
    /// engine that serves one request at a time may put it aside for the conversation's requests
    /// ([`Priority::Background`]); by default it is an ordinary
    /// [`stream_chat`](Self::stream_chat).
    fn stream_side<'a>(
        &'a self,
        messages: &'a [ChatMessage],
    ) -> BoxFuture<'a, Result<LlmStream, LlmError>> {
        self.stream_chat(messages, &[])
    }
}

/// What a character asks of the embedded brain.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedRequest {
    /// The embedded model's name in the model store (e.g. `qwen2.5-coder-1.5b`).
    pub model: String,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub idle_timeout: Duration,
    /// The longest prompt the character sends, in tokens (its context budget): the engine's window
    /// must hold it and the answer.
    pub prompt_budget: u32,
}

/// Makes a [`ChatModel`] for an endpoint. The program decides which implementation serves which
/// endpoint (the runtime registers the OpenAI-compatible one, and the embedded brain).
pub trait LlmConnector: Send + Sync {
    fn connect(&self, endpoint: LlmEndpoint) -> Result<LlmClient, LlmError>;

    /// A client of the embedded brain (the engine on this computer), started if it is not running yet,
    /// shared when it is. The default: this program has none.
    fn connect_embedded(
        &self,
        request: EmbeddedRequest,
    ) -> BoxFuture<'_, Result<LlmClient, LlmError>> {
        Box::pin(async move {
            Err(LlmError::Brain(format!(
                "this program has no embedded brain to run `{}`; use an OpenAI-compatible endpoint",
                request.model
            )))
        })
    }
}

/// A shared handle on a model.
#[derive(Clone)]
pub struct LlmClient {
    model: Arc<dyn ChatModel>,
    anticipated: AnticipationSlot,
}

impl fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmClient")
            .field("endpoint", self.endpoint())
            .finish()
    }
}

impl LlmClient {
    pub fn new(model: impl ChatModel + 'static) -> Self {
        Self {
            model: Arc::new(model),
            anticipated: AnticipationSlot::default(),
        }
    }

    pub fn endpoint(&self) -> &LlmEndpoint {
        self.model.endpoint()
    }

    /// See [`ChatModel::stream_chat`]. A request [`anticipated`](Self::anticipate) with exactly these
    /// messages and tools continues the stream already started (see `anticipate.rs`).
    pub async fn stream_chat(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
    ) -> Result<LlmStream, LlmError> {
        if let Some(started) = self.anticipated.take(messages, tools).await {
            return started;
        }
        self.model.stream_chat(messages, tools).await
    }

    /// Starts the request the next turn will probably send (a voice turn's pause), so its answer is
    /// under way when the turn is decided. Replaces an earlier anticipation.
    /// Outside a tokio runtime it does nothing (the request is simply not started early).
    pub fn anticipate(&self, messages: Vec<ChatMessage>, tools: Vec<ToolDefinition>) {
        self.anticipated
            .start(Arc::clone(&self.model), messages, tools);
    }

    /// Drops an anticipated request (the user went on speaking, or said nothing after all).
    pub fn cancel_anticipation(&self) {
        self.anticipated.cancel();
    }

    /// See [`ChatModel::warm_up`].
    pub async fn warm_up(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
    ) -> Result<Option<WarmedUp>, LlmError> {
        self.model.warm_up(messages, tools).await
    }

    /// See [`ChatModel::stream_side`]. Never the anticipated request's: side requests must not take or
    /// drop it.
    pub async fn stream_side(&self, messages: &[ChatMessage]) -> Result<LlmStream, LlmError> {
        self.model.stream_side(messages).await
    }

    /// A whole side request (summaries, fact extraction): the streamed text, joined. See
    /// [`stream_side`](Self::stream_side).
    pub async fn complete(&self, messages: &[ChatMessage]) -> Result<String, LlmError> {
        self.complete_as(messages, Priority::Background).await
    }

    /// [`complete`](Self::complete) for a request a turn waits for (a summary the turn's context
    /// needs): [`Priority::Conversation`] does not stand aside. Never the anticipated request either.
    pub async fn complete_as(
        &self,
        messages: &[ChatMessage],
        priority: Priority,
    ) -> Result<String, LlmError> {
        let mut stream = match priority {
            Priority::Background => self.stream_side(messages).await?,
            Priority::Conversation => self.model.stream_chat(messages, &[]).await?,
        };
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            if let LlmEvent::Text(delta) = event? {
                text.push_str(&delta);
            }
        }
        Ok(text)
    }
}
