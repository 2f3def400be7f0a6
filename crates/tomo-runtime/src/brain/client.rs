//! The character's client of the embedded brain: Tomo's OpenAI-compatible client on the engine's loopback
//! address and token, plus what only an engine we run can do: warm the next request's prefix, wait out a
//! restart instead of failing, say in plain words what happened when the engine died, and count what the
//! engine's cache saved.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use tomo_llm::{
    ChatMessage, ChatModel, EmbeddedRequest, LlmClient, LlmEndpoint, LlmError, LlmEvent, LlmStream,
    ToolDefinition, WarmedUp,
};
use tomo_llm_supervisor::EngineState;

use super::{BrainStats, Engine};

/// How long a request waits for an engine that is being restarted (it loads the model again).
const RESTART_WAIT: Duration = Duration::from_secs(120);
/// Requests remembered in [`BrainStats::requests`].
const KEPT: usize = 32;

/// The engine's counts for one streamed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    /// Prompt tokens found in the cache (not evaluated again).
    pub cached_tokens: u64,
    pub completion_tokens: u64,
}

struct EmbeddedClient {
    http: LlmClient,
    engine: Arc<Engine>,
    stats: Arc<Mutex<BrainStats>>,
}

pub(super) fn connect(
    engine: Arc<Engine>,
    request: &EmbeddedRequest,
    stats: Arc<Mutex<BrainStats>>,
) -> Result<LlmClient, LlmError> {
    let http = tomo_openai::connect_engine(LlmEndpoint {
        base_url: engine.engine.base_url().to_owned(),
        model: request.model.clone(),
        api_key: Some(engine.engine.api_key().to_owned()),
        temperature: request.temperature,
        max_tokens: request.max_tokens,
        idle_timeout: request.idle_timeout,
    })?;
    Ok(LlmClient::new(EmbeddedClient {
        http,
        engine,
        stats,
    }))
}

impl EmbeddedClient {
    /// Serving, or why not. A restart in progress is waited for (the answer that was cut off already
    /// failed; this is the next request).
    async fn ready(&self) -> Result<(), LlmError> {
        let mut states = self.engine.engine.subscribe();
        let waited = tokio::time::timeout(RESTART_WAIT, async {
            loop {
                let state = states.borrow_and_update().clone();
                match state {
                    EngineState::Ready => return Ok(()),
                    EngineState::Restarting { .. } => {}
                    EngineState::Failed { reason } => {
                        return Err(LlmError::Brain(format!(
                            "the embedded brain stopped and could not be started again ({reason}); \
                             restart Tomo, or pick another language model in Settings → Language model"
                        )));
                    }
                    EngineState::Stopped => {
                        return Err(LlmError::Brain("the embedded brain was stopped".into()));
                    }
                }
                if states.changed().await.is_err() {
                    return Err(LlmError::Brain("the embedded brain was stopped".into()));
                }
            }
        })
        .await;
        waited.unwrap_or_else(|_| {
            Err(LlmError::Brain(format!(
                "the embedded brain did not come back within {} s",
                RESTART_WAIT.as_secs()
            )))
        })
    }

    /// The engine's stream with its usage counted and a broken stream explained.
    fn counted(&self, stream: Result<LlmStream, LlmError>) -> Result<LlmStream, LlmError> {
        let stream = stream.map_err(explain)?;
        let client = EmbeddedClient {
            http: self.http.clone(),
            engine: Arc::clone(&self.engine),
            stats: Arc::clone(&self.stats),
        };
        Ok(Box::pin(stream.map(move |event| match event {
            Ok(LlmEvent::Usage(value)) => {
                client.record(usage_of(&value));
                Ok(LlmEvent::Usage(value))
            }
            Ok(other) => Ok(other),
            Err(error) => Err(explain(error)),
        })))
    }

    fn record(&self, usage: Usage) {
        let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        if stats.requests.len() == KEPT {
            stats.requests.remove(0);
        }
        stats.requests.push(usage);
    }
}

/// A broken stream from the engine means it died mid-answer (a crash, an out-of-memory kill): said so,
/// with what happens next.
fn explain(error: LlmError) -> LlmError {
    match error {
        LlmError::Stream(detail) => LlmError::Stream(format!(
            "the embedded brain stopped in the middle of the answer ({detail}); it is starting again by \
             itself, so ask again in a moment"
        )),
        other => other,
    }
}

fn usage_of(value: &serde_json::Value) -> Usage {
    Usage {
        prompt_tokens: value["prompt_tokens"].as_u64().unwrap_or(0),
        cached_tokens: value["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        completion_tokens: value["completion_tokens"].as_u64().unwrap_or(0),
    }
}

impl ChatModel for EmbeddedClient {
    fn endpoint(&self) -> &LlmEndpoint {
        self.http.endpoint()
    }

    fn stream_chat<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<LlmStream, LlmError>> {
        Box::pin(async move {
            self.ready().await?;
            let stream = self.http.stream_chat(messages, tools).await;
            self.counted(stream)
        })
    }

    /// Marked as a side request on the wire: the engine serves the conversation's requests first.
    fn stream_side<'a>(
        &'a self,
        messages: &'a [ChatMessage],
    ) -> BoxFuture<'a, Result<LlmStream, LlmError>> {
        Box::pin(async move {
            self.ready().await?;
            let stream = self.http.stream_side(messages).await;
            self.counted(stream)
        })
    }

    fn warm_up<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<Option<WarmedUp>, LlmError>> {
        Box::pin(async move {
            self.ready().await?;
            let started = Instant::now();
            // The same JSON the client sends (tomo-openai serializes these types as they are), so the
            // engine builds the same tokens.
            let encode = |e: serde_json::Error| LlmError::Config(format!("warm-up: {e}"));
            let messages = serde_json::to_value(messages).map_err(encode)?;
            let tools = serde_json::to_value(tools).map_err(encode)?;
            let done = self
                .engine
                .engine
                .warm_up(&messages, &tools)
                .await
                .map_err(|e| LlmError::Brain(e.to_string()))?;
            let warmed = WarmedUp {
                prompt_tokens: done.prompt_tokens,
                cached_tokens: done.cached_tokens,
                elapsed: started.elapsed(),
            };
            self.stats
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .warm_ups
                .push(warmed);
            Ok(Some(warmed))
        })
    }
}
