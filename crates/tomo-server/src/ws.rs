//! One WebSocket client: replay, then live events out; ops in.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use serde::Deserialize;
use tokio::sync::mpsc;
use tomo_protocol::{ErrorCode, Op, ServerFrame};

use crate::hub::{Subscription, control};
use crate::{AppState, OpRefused, auth};

/// Ops are small; a client sending megabytes is broken or hostile.
const MAX_MESSAGE_BYTES: usize = 1 << 20;

#[derive(Debug, Deserialize)]
pub(crate) struct WsQuery {
    /// The last `seq` the client processed; events after it are replayed.
    last_seq: Option<u64>,
}

pub(crate) async fn upgrade(
    State(state): State<Arc<AppState>>,
    Query(query): Query<WsQuery>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if !auth::origin_allowed(&headers, &state.allowed_origins) {
        tracing::warn!(origin = ?headers.get("origin"), "refused WebSocket from a foreign origin");
        return (StatusCode::FORBIDDEN, "origin not allowed\n").into_response();
    }
    let last_seq = query.last_seq.unwrap_or(0);
    // A frame as big as a message at most: the library's 16 MiB frame default would be buffered whole
    // before the message limit is checked (16 clients × 15 MiB took RSS from 54 to 301 MB).
    ws.max_message_size(MAX_MESSAGE_BYTES)
        .max_frame_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| client(socket, state, last_seq))
}

async fn client(socket: WebSocket, state: Arc<AppState>, last_seq: u64) {
    let Subscription { id, replay, live } = state.hub.subscribe(last_seq);
    tracing::debug!(
        client = id,
        last_seq,
        replay = replay.len(),
        "client connected"
    );
    let (mut out, mut incoming) = socket.split();
    // Error frames for this client's own mistakes; a client spamming garbage may miss some.
    let (replies_tx, mut replies) = mpsc::channel::<Utf8Bytes>(16);

    let writer = async {
        for frame in replay {
            if out.send(Message::Text(frame)).await.is_err() {
                return;
            }
        }
        let mut live = live;
        loop {
            tokio::select! {
                frame = live.recv() => match frame {
                    Some(frame) => {
                        if out.send(Message::Text(frame)).await.is_err() {
                            return;
                        }
                    }
                    None => {
                        let _ = out.send(Message::Close(Some(close_reason(&state)))).await;
                        return;
                    }
                },
                Some(reply) = replies.recv() => {
                    if out.send(Message::Text(reply)).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    let reader = async {
        while let Some(Ok(message)) = incoming.next().await {
            let outcome = match message {
                Message::Text(text) => handle_op(&state, text.as_str()).await,
                Message::Binary(_) => Err(FrameRefused::Binary),
                Message::Close(_) => break,
                Message::Ping(_) | Message::Pong(_) => Ok(()),
            };
            if let Err(problem) = outcome {
                tracing::debug!(client = id, %problem, "refused a client frame");
                let _ = replies_tx.try_send(error_frame(&problem.to_string()));
            }
        }
    };
    // Whichever side ends first ends the connection.
    tokio::select! {
        () = writer => {}
        () = reader => {}
    }
    state.hub.unsubscribe(id);
    tracing::debug!(client = id, "client disconnected");
}

/// Why live events stopped: the session is over, or this client fell too far behind.
fn close_reason(state: &AppState) -> CloseFrame {
    if state.hub.is_closed() {
        CloseFrame {
            code: close_code::AWAY,
            reason: Utf8Bytes::from_static("session ended"),
        }
    } else {
        CloseFrame {
            code: close_code::AGAIN,
            reason: Utf8Bytes::from_static("client too slow; reconnect with ?last_seq="),
        }
    }
}

fn error_frame(message: &str) -> Utf8Bytes {
    control(&ServerFrame::Error {
        code: ErrorCode::InvalidOp,
        message: message.to_owned(),
        // Only this frame was refused; the connection stays open.
        recoverable: true,
    })
}

/// Why one client frame was refused; the client gets it as an `invalid_op` error frame.
#[derive(Debug, thiserror::Error)]
enum FrameRefused {
    #[error("binary frames are not supported; send ops as JSON text")]
    Binary,
    #[error("not a valid op: {0}")]
    NotAnOp(#[source] serde_json::Error),
    #[error(transparent)]
    Policy(#[from] OpRefused),
    #[error("the session has stopped")]
    SessionStopped,
}

/// Parses and checks one client op, then hands it to the session.
async fn handle_op(state: &AppState, text: &str) -> Result<(), FrameRefused> {
    let op: Op = serde_json::from_str(text).map_err(FrameRefused::NotAnOp)?;
    let op = state.policy.check(op)?;
    state
        .ops
        .send(op)
        .await
        .map_err(|_| FrameRefused::SessionStopped)
}
