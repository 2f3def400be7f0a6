//! Starting the answer in the user's pause. A voice turn ends only once the end of the turn is decided
//! (up to a second of silence when the end-of-turn model is unsure), but the pause's transcript is
//! often ready before that. The session then builds the request it would send and starts it here; when
//! the turn does end with the same words, the agent loop's identical request takes over the stream
//! already running (and what it has buffered) instead of asking again. Any other request, a new
//! anticipation or a cancel drops it, which aborts the request.

use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};

use crate::error::LlmError;
use crate::messages::{ChatMessage, ToolDefinition};
use crate::model::{ChatModel, LlmEvent, LlmStream};

/// A request started ahead of its turn.
struct Anticipated {
    messages: Vec<ChatMessage>,
    tools: Vec<ToolDefinition>,
    /// Whether the model accepted the request (errors before the first chunk come here).
    opened: oneshot::Receiver<Result<(), LlmError>>,
    events: mpsc::UnboundedReceiver<Result<LlmEvent, LlmError>>,
    task: AbortOnDrop,
}

/// The request's task: aborted (closing its connection) when the anticipation or its stream is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// At most one anticipated request per client.
#[derive(Clone, Default)]
pub(crate) struct AnticipationSlot(Arc<Mutex<Option<Anticipated>>>);

impl AnticipationSlot {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Anticipated>> {
        // The slot only ever holds a whole value; a panic elsewhere cannot leave it half-written.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `messages` + `tools` on `model` now; replaces (and aborts) an earlier anticipation.
    pub(crate) fn start(
        &self,
        model: Arc<dyn ChatModel>,
        messages: Vec<ChatMessage>,
        tools: Vec<ToolDefinition>,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (opened_tx, opened) = oneshot::channel();
        let (events_tx, events) = mpsc::unbounded_channel();
        let (request_messages, request_tools) = (messages.clone(), tools.clone());
        let task = runtime.spawn(async move {
            match model.stream_chat(&request_messages, &request_tools).await {
                Err(error) => {
                    let _ = opened_tx.send(Err(error));
                }
                Ok(mut stream) => {
                    if opened_tx.send(Ok(())).is_err() {
                        return;
                    }
                    while let Some(event) = stream.next().await {
                        if events_tx.send(event).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        *self.slot() = Some(Anticipated {
            messages,
            tools,
            opened,
            events,
            task: AbortOnDrop(task),
        });
    }

    pub(crate) fn cancel(&self) {
        self.slot().take();
    }

    /// The anticipated stream if it was started for exactly this request; `None` otherwise (an
    /// anticipation for anything else is dropped: the conversation moved on without it).
    pub(crate) async fn take(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
    ) -> Option<Result<LlmStream, LlmError>> {
        let anticipated = self.slot().take()?;
        if anticipated.messages != messages || anticipated.tools != tools {
            tracing::debug!("the anticipated request was for other words; dropped");
            return None;
        }
        let Anticipated {
            opened,
            events,
            task,
            ..
        } = anticipated;
        match opened.await {
            Ok(Ok(())) => {
                tracing::debug!("the answer started in the pause");
                // The task forwards the model's stream whole; should it end without the model's own
                // end (the task died), the stream ends with an error, never as a short answer.
                let stream = futures::stream::unfold(
                    (events, task, false),
                    |(mut events, task, finished)| async move {
                        match events.recv().await {
                            Some(event) => {
                                let finished =
                                    finished || matches!(event, Ok(LlmEvent::Finish(_)) | Err(_));
                                Some((event, (events, task, finished)))
                            }
                            None if !finished => Some((
                                Err(LlmError::Stream(
                                    "the request started in the pause stopped".into(),
                                )),
                                (events, task, true),
                            )),
                            None => None,
                        }
                    },
                );
                Some(Ok(Box::pin(stream)))
            }
            Ok(Err(error)) => Some(Err(error)),
            // The task ended without a word (aborted): ask afresh.
            Err(_) => None,
        }
    }
}
