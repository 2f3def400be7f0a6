//! Streaming chat completions against any OpenAI-compatible server, through async-openai.

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use tomo_llm::{
    ChatMessage, ChatModel, LlmClient, LlmConnector, LlmEndpoint, LlmError, LlmEvent, LlmStream,
    Priority, ToolCallFragment, ToolDefinition,
};

use crate::capped::{BodyLimits, CappedService, CutReason};
use crate::wire::{ChatRequest, ChunkWire, StreamOptions};

/// An OpenAI-compatible server (Ollama, LM Studio, llama.cpp, vLLM, OpenAI, DeepSeek, OpenRouter, ...).
#[derive(Clone)]
pub struct OpenAiClient {
    endpoint: LlmEndpoint,
    client: Client<OpenAIConfig>,
    /// Why the transport cut the last response off (see [`crate::capped`]).
    cut: CutReason,
    /// Side requests carry `"priority": "background"` (Tomo's own engine only: see [`connect_engine`]).
    sends_priority: bool,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

/// Connects every endpoint through [`OpenAiClient`].
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiConnector;

impl LlmConnector for OpenAiConnector {
    fn connect(&self, endpoint: LlmEndpoint) -> Result<LlmClient, LlmError> {
        connect(endpoint)
    }
}

/// A shared client for `endpoint`.
pub fn connect(endpoint: LlmEndpoint) -> Result<LlmClient, LlmError> {
    OpenAiClient::new(endpoint).map(LlmClient::new)
}

/// A shared client for Tomo's own engine (`tomo-llm-engine`): like [`connect`], and its side requests
/// say they are [`Priority::Background`], so the engine serves the conversation first. Other servers
/// never get the field (OpenAI refuses unknown ones).
pub fn connect_engine(endpoint: LlmEndpoint) -> Result<LlmClient, LlmError> {
    let mut client = OpenAiClient::new(endpoint)?;
    client.sends_priority = true;
    Ok(LlmClient::new(client))
}

impl OpenAiClient {
    pub fn new(endpoint: LlmEndpoint) -> Result<Self, LlmError> {
        Self::with_limits(endpoint, BodyLimits::default())
    }

    /// Like [`OpenAiClient::new`] with other bounds on what one response may hold.
    pub fn with_limits(endpoint: LlmEndpoint, limits: BodyLimits) -> Result<Self, LlmError> {
        let base = endpoint.base_url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LlmError::Config(format!(
                "base_url must start with http:// or https://, got `{base}`"
            )));
        }
        // Explicit empty org/project so OPENAI_* variables from the environment never leak to other servers.
        let config = OpenAIConfig::new()
            .with_api_base(base)
            .with_api_key(endpoint.api_key.clone().unwrap_or_default())
            .with_org_id("")
            .with_project_id("");
        let http = reqwest::Client::builder()
            .connect_timeout(endpoint.idle_timeout.min(Duration::from_secs(10)))
            // A read timeout (not a total one): long answers are fine, a stalled stream is not.
            .read_timeout(endpoint.idle_timeout)
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build HTTP client: {e}")))?;
        // A bare transport: async-openai's default executor retries 5xx/429/connect errors on its own,
        // which would multiply our retries and hide them from the user. Bounded: see `capped`.
        let cut = CutReason::default();
        let client = Client::with_config(config)
            .with_http_client(http.clone())
            .with_http_service(CappedService::new(http, limits, cut.clone()));
        Ok(Self {
            client,
            endpoint,
            cut,
            sends_priority: false,
        })
    }

    fn map_error(&self, error: OpenAIError, phase: Phase) -> LlmError {
        let error = map_openai_error(
            error,
            phase,
            &self.endpoint.base_url,
            self.endpoint.idle_timeout,
        );
        redact_key(error, self.endpoint.api_key.as_deref())
    }
}

impl ChatModel for OpenAiClient {
    fn endpoint(&self) -> &LlmEndpoint {
        &self.endpoint
    }

    fn stream_chat<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<LlmStream, LlmError>> {
        Box::pin(self.stream(messages, tools, Priority::Conversation))
    }

    fn stream_side<'a>(
        &'a self,
        messages: &'a [ChatMessage],
    ) -> BoxFuture<'a, Result<LlmStream, LlmError>> {
        Box::pin(self.stream(messages, &[], Priority::Background))
    }
}

impl OpenAiClient {
    async fn stream(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
        priority: Priority,
    ) -> Result<LlmStream, LlmError> {
        {
            let request = ChatRequest {
                model: &self.endpoint.model,
                messages,
                stream: true,
                stream_options: StreamOptions {
                    include_usage: true,
                },
                tools,
                temperature: self.endpoint.temperature,
                max_tokens: self.endpoint.max_tokens,
                priority: (self.sends_priority && priority != Priority::Conversation)
                    .then_some(priority),
            };
            let body = serde_json::to_value(&request)
                .map_err(|e| LlmError::Config(format!("cannot encode request: {e}")))?;
            let raw = self
                .client
                .chat()
                .create_stream_byot::<serde_json::Value, ChunkWire>(body)
                .await
                .map_err(|e| self.map_error(e, Phase::Connect))?;
            let context = StreamContext {
                url: self.endpoint.base_url.clone(),
                idle: self.endpoint.idle_timeout,
                key: self.endpoint.api_key.clone(),
                cut: self.cut.clone(),
            };
            let stream: LlmStream = Box::pin(decode(raw, context));
            Ok(stream)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Connect,
    Streaming,
}

fn map_openai_error(error: OpenAIError, phase: Phase, url: &str, idle: Duration) -> LlmError {
    match error {
        OpenAIError::Reqwest(e) if e.is_timeout() => LlmError::Timeout(idle),
        OpenAIError::Reqwest(e)
            if phase == Phase::Connect && (e.is_connect() || e.is_request()) =>
        {
            LlmError::Unreachable {
                url: url.to_owned(),
                message: root_cause(&e),
            }
        }
        OpenAIError::Reqwest(e) => match e.status() {
            Some(status) => LlmError::Http {
                status: status.as_u16(),
                message: root_cause(&e),
            },
            None => LlmError::Stream(root_cause(&e)),
        },
        OpenAIError::ApiError(api) => LlmError::Http {
            status: api.status_code.as_u16(),
            message: server_message(api.api_error.message),
        },
        OpenAIError::JSONDeserialize(e, content) => {
            LlmError::Malformed(format!("{e} in `{}`", truncate(&content, 200)))
        }
        OpenAIError::StreamError(e) => match phase {
            Phase::Connect => LlmError::Unreachable {
                url: url.to_owned(),
                message: e.to_string(),
            },
            Phase::Streaming => LlmError::Stream(e.to_string()),
        },
        OpenAIError::InvalidArgument(message) => LlmError::Config(message),
        other => LlmError::Stream(other.to_string()),
    }
}

/// For 5xx answers async-openai passes the raw body; dig the message out of an OpenAI-style error body.
fn server_message(body: String) -> String {
    serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| truncate(body.trim(), 300))
}

/// reqwest's top-level message is generic ("error sending request"); the cause says what happened.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    message
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Every text of `error` without the endpoint's key.
fn redact_key(error: LlmError, key: Option<&str>) -> LlmError {
    match key {
        Some(key) => error.redacted(&[key]),
        None => error,
    }
}

/// What decoding a stream needs to know about its request.
struct StreamContext {
    url: String,
    idle: Duration,
    key: Option<String>,
    cut: CutReason,
}

impl StreamContext {
    fn error(&self, error: OpenAIError) -> LlmError {
        let error = match self.cut.take() {
            // The transport cut the body off; its own error says only "body error".
            Some(reason) => LlmError::Stream(reason),
            None => map_openai_error(error, Phase::Streaming, &self.url, self.idle),
        };
        redact_key(error, self.key.as_deref())
    }
}

/// Turns wire chunks into [`LlmEvent`]s, and a stream that ends without a finish into an error:
/// a server that dies mid-answer must not look like a short answer.
fn decode(
    raw: Pin<Box<dyn Stream<Item = Result<ChunkWire, OpenAIError>> + Send>>,
    context: StreamContext,
) -> impl Stream<Item = Result<LlmEvent, LlmError>> + Send {
    futures::stream::unfold(
        (raw, false, false, context),
        move |(mut raw, finished, done, context)| async move {
            if done {
                return None;
            }
            match raw.next().await {
                Some(Ok(chunk)) => {
                    let (events, saw_finish) = chunk_events(chunk);
                    let finished = finished || saw_finish;
                    let key = context.key.as_deref();
                    let events = events
                        .into_iter()
                        .map(|event| event.map_err(|error| redact_key(error, key)))
                        .collect();
                    Some((events, (raw, finished, false, context)))
                }
                Some(Err(e)) => {
                    let error = context.error(e);
                    Some((vec![Err(error)], (raw, finished, true, context)))
                }
                None if finished => None,
                None => Some((
                    vec![Err(LlmError::Stream(
                        "the server closed the stream before finishing the answer".to_owned(),
                    ))],
                    (raw, finished, true, context),
                )),
            }
        },
    )
    .flat_map(futures::stream::iter)
}

fn chunk_events(chunk: ChunkWire) -> (Vec<Result<LlmEvent, LlmError>>, bool) {
    let mut events = Vec::new();
    let mut finished = false;
    if let Some(error) = chunk.error {
        let message = error
            .get("message")
            .and_then(|m| m.as_str())
            .map_or_else(|| error.to_string(), str::to_owned);
        events.push(Err(LlmError::Stream(format!("server reported: {message}"))));
        return (events, true);
    }
    for choice in chunk.choices {
        let delta = choice.delta;
        if let Some(reasoning) = delta.reasoning_content.or(delta.reasoning)
            && !reasoning.is_empty()
        {
            events.push(Ok(LlmEvent::Reasoning(reasoning)));
        }
        if let Some(text) = delta.content
            && !text.is_empty()
        {
            events.push(Ok(LlmEvent::Text(text)));
        }
        for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
            let function = call.function.unwrap_or_default();
            events.push(Ok(LlmEvent::ToolCall(ToolCallFragment {
                position: u32::try_from(position).unwrap_or(u32::MAX),
                index: call.index,
                id: call.id,
                name: function.name,
                arguments: function.arguments,
            })));
        }
        if let Some(reason) = choice.finish_reason {
            finished = true;
            events.push(Ok(LlmEvent::Finish(reason)));
        }
    }
    if let Some(usage) = chunk.usage
        && !usage.is_null()
    {
        events.push(Ok(LlmEvent::Usage(usage)));
    }
    (events, finished)
}
