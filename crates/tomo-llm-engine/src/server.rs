//! The HTTP side: `GET /health`, `GET /v1/models`, `POST /v1/chat/completions` (streamed as OpenAI
//! `chat.completion.chunk` server-sent events, or whole), on loopback, behind a per-run bearer token:
//! loopback is not a trust boundary (any local user or web page's fetch can reach it).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use tokio::sync::{mpsc, watch};

use crate::api::{ChatRequest, CompletionId, error_body};
use crate::engine::{GenEvent, Job, Status};

pub struct Shared {
    pub token: String,
    pub status: watch::Receiver<Status>,
    pub jobs: std::sync::Mutex<std::sync::mpsc::Sender<Job>>,
    /// How long a request waits for the model to finish loading.
    pub load_wait: Duration,
    pub counter: AtomicU64,
}

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .with_state(shared)
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

fn error(status: StatusCode, message: &str, kind: &str) -> Response {
    json_response(status, error_body(message, kind))
}

fn authorized(shared: &Shared, headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some(given) = value.strip_prefix("Bearer ") else {
        return false;
    };
    given.as_bytes().ct_eq(shared.token.as_bytes()).into()
}

/// 200 when the model is loaded, 503 with the load progress meanwhile, 500 when loading failed.
/// No token needed: it tells only whether the engine is up.
async fn health(State(shared): State<Arc<Shared>>) -> Response {
    let status = shared.status.borrow().clone();
    match status {
        Status::Ready { model } => {
            json_response(StatusCode::OK, json!({ "status": "ok", "model": model }))
        }
        Status::Loading { progress } => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({ "status": "loading", "progress": progress }),
        ),
        Status::Failed { message } => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({ "status": "error", "message": message }),
        ),
    }
}

async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !authorized(&shared, &headers) {
        return error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token",
            "auth",
        );
    }
    let name = match &*shared.status.borrow() {
        Status::Ready { model } => model.clone(),
        _ => String::new(),
    };
    json_response(
        StatusCode::OK,
        json!({ "object": "list", "data": [{ "id": name, "object": "model", "owned_by": "tomo" }] }),
    )
}

/// Waits until the model is loaded (requests that arrive during start-up are served, not refused).
async fn wait_ready(shared: &Shared) -> Result<String, Box<Response>> {
    let mut status = shared.status.clone();
    let waited = tokio::time::timeout(shared.load_wait, async {
        loop {
            let current = status.borrow_and_update().clone();
            match current {
                Status::Ready { model } => return Ok(model),
                Status::Failed { message } => {
                    return Err(Box::new(error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        &message,
                        "model_load",
                    )));
                }
                Status::Loading { .. } => {}
            }
            if status.changed().await.is_err() {
                return Err(Box::new(error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the engine stopped",
                    "server_error",
                )));
            }
        }
    })
    .await;
    waited.unwrap_or_else(|_| {
        Err(Box::new(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the model is still loading",
            "model_load",
        )))
    })
}

/// Sets the job's cancel flag when dropped: the response body (and with it this guard) is dropped when the
/// client disconnects, which stops the generation at its next token.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

async fn chat(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&shared, &headers) {
        return error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token",
            "auth",
        );
    }
    let request: ChatRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("invalid request body: {e}"),
                "invalid_request_error",
            );
        }
    };
    if request.messages.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "`messages` is empty",
            "invalid_request_error",
        );
    }
    let model = match wait_ready(&shared).await {
        Ok(model) => model,
        Err(response) => return *response,
    };
    let n = shared.counter.fetch_add(1, Ordering::Relaxed);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let id = CompletionId {
        id: format!("chatcmpl-{created}-{n}"),
        created,
        model: request
            .model
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or(model),
    };
    let stream = request.stream;
    let include_usage = request
        .stream_options
        .as_ref()
        .is_some_and(|o| o.include_usage);
    let cancel = Arc::new(AtomicBool::new(false));
    let (events_tx, mut events) = mpsc::channel(64);
    let job = Job {
        request,
        events: events_tx,
        cancel: Arc::clone(&cancel),
    };
    let sent = shared
        .jobs
        .lock()
        .map(|jobs| jobs.send(job).is_ok())
        .unwrap_or(false);
    if !sent {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the engine stopped",
            "server_error",
        );
    }
    let guard = CancelOnDrop(cancel);
    // The first event decides the status: a request refused before any token gets a proper HTTP error.
    let first = events.recv().await;
    if let Some(GenEvent::Failed { status, message }) = &first {
        let code = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return error(code, message, "server_error");
    }
    if !stream {
        return whole(id, first, events, guard).await;
    }
    let body = futures::stream::unfold(
        Streaming {
            phase: Phase::Head,
            pending: first,
            events,
            _guard: guard,
            id,
            include_usage,
        },
        next_chunks,
    )
    .flat_map(futures::stream::iter)
    .map(Ok::<_, std::convert::Infallible>);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| {
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "response",
                "server_error",
            )
        })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Events,
    Finished,
}

struct Streaming {
    phase: Phase,
    /// The event already read to choose the status code.
    pending: Option<GenEvent>,
    events: mpsc::Receiver<GenEvent>,
    _guard: CancelOnDrop,
    id: CompletionId,
    include_usage: bool,
}

/// The SSE frames of the next step. `[DONE]` only follows a finished answer: a failure mid-answer is an
/// in-stream error object and the stream ends without a finish reason, so the client reports a broken
/// stream instead of a short answer.
async fn next_chunks(mut s: Streaming) -> Option<(Vec<Bytes>, Streaming)> {
    match s.phase {
        Phase::Head => {
            s.phase = Phase::Events;
            let head = sse(&s
                .id
                .chunk(json!({ "role": "assistant", "content": "" }), None));
            Some((vec![head], s))
        }
        Phase::Events => {
            let event = match s.pending.take() {
                Some(event) => Some(event),
                None => s.events.recv().await,
            };
            let frames = match event {
                Some(GenEvent::Text(text)) => {
                    vec![sse(&s.id.chunk(json!({ "content": text }), None))]
                }
                Some(GenEvent::Done {
                    finish_reason,
                    usage,
                }) => {
                    s.phase = Phase::Finished;
                    let mut frames = vec![sse(&s.id.chunk(json!({}), Some(finish_reason)))];
                    if s.include_usage {
                        frames.push(sse(&s.id.usage_chunk(&usage)));
                    }
                    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
                    frames
                }
                Some(GenEvent::Failed { message, .. }) => {
                    s.phase = Phase::Finished;
                    vec![sse(&error_body(&message, "server_error"))]
                }
                None => {
                    s.phase = Phase::Finished;
                    vec![sse(&error_body(
                        "the engine stopped mid-answer",
                        "server_error",
                    ))]
                }
            };
            Some((frames, s))
        }
        Phase::Finished => None,
    }
}

fn sse(chunk: &Value) -> Bytes {
    Bytes::from(format!("data: {chunk}\n\n"))
}

async fn whole(
    id: CompletionId,
    first: Option<GenEvent>,
    mut events: mpsc::Receiver<GenEvent>,
    _guard: CancelOnDrop,
) -> Response {
    let mut text = String::new();
    let mut next = first;
    loop {
        match next {
            Some(GenEvent::Text(piece)) => text.push_str(&piece),
            Some(GenEvent::Done {
                finish_reason,
                usage,
            }) => {
                return json_response(StatusCode::OK, id.completion(&text, finish_reason, &usage));
            }
            Some(GenEvent::Failed { message, .. }) => {
                return error(StatusCode::INTERNAL_SERVER_ERROR, &message, "server_error");
            }
            None => {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the engine stopped mid-answer",
                    "server_error",
                );
            }
        }
        next = events.recv().await;
    }
}
