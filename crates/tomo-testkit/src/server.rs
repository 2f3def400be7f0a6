//! The server: an accept loop that serves each connection on its own task, one request per
//! connection (`Connection: close`), answering chat requests from the shared script queue.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::http::{self, ReadError, Request};
use crate::{RecordedRequest, ScriptedResponse, StreamStep, TestkitError, chunk};

/// Message of the 500 answered once the script is used up, so a test sees unexpected extra
/// requests as a failure instead of a hang.
pub const NO_RESPONSE_LEFT: &str = "scripted server: no response left";

/// An OpenAI-compatible server on `127.0.0.1` that replays a script. Shuts down on drop: the accept
/// loop and every open connection (including [`ScriptedResponse::Hang`]s) are aborted.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept_task: JoinHandle<()>,
}

struct Shared {
    // Queue and log share one lock so the n-th recorded request is the one given the n-th response,
    // even when clients race.
    state: Mutex<State>,
    /// Number of recorded requests, for `wait_for_requests` without polling.
    recorded: watch::Sender<usize>,
}

struct State {
    queue: VecDeque<ScriptedResponse>,
    requests: Vec<RecordedRequest>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave State half-updated in a way that matters to
        // a test harness; keep serving rather than cascade the panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ScriptedServer {
    /// Binds `127.0.0.1:0` and starts serving `script`, one response per chat request.
    /// Must be called inside a Tokio runtime.
    pub async fn start(script: Vec<ScriptedResponse>) -> Result<Self, TestkitError> {
        Self::start_on(std::net::Ipv4Addr::LOCALHOST.into(), script).await
    }

    /// Like [`ScriptedServer::start`] on another local address, e.g. the machine's LAN address, so a
    /// test can see how the client treats an endpoint that is not loopback.
    pub async fn start_on(
        ip: std::net::IpAddr,
        script: Vec<ScriptedResponse>,
    ) -> Result<Self, TestkitError> {
        let listener = TcpListener::bind((ip, 0))
            .await
            .map_err(TestkitError::Bind)?;
        let addr = listener.local_addr().map_err(TestkitError::Bind)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: script.into(),
                requests: Vec::new(),
            }),
            recorded: watch::Sender::new(0),
        });
        let accept_task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        tracing::debug!(%addr, "scripted server listening");
        Ok(Self {
            addr,
            shared,
            accept_task,
        })
    }

    /// Base URL for an OpenAI client, e.g. `http://127.0.0.1:41234/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends a response to the end of the queue.
    pub fn push(&self, response: ScriptedResponse) {
        self.shared.lock().queue.push_back(response);
    }

    /// Number of scripted responses not yet used.
    pub fn remaining(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Every chat-completions request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Waits until at least `n` chat requests were recorded, then returns all of them.
    pub async fn wait_for_requests(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, TestkitError> {
        let mut rx = self.shared.recorded.subscribe();
        // `wait_for` only fails if the sender is gone, and `self.shared` keeps it alive.
        let reached = tokio::time::timeout(timeout, rx.wait_for(|&count| count >= n)).await;
        match reached {
            Ok(Ok(_)) => Ok(self.requests()),
            _ => Err(TestkitError::Timeout {
                expected: n,
                received: *self.shared.recorded.borrow(),
                timeout,
            }),
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // Connections live in a JoinSet owned by this task: aborting the task drops the set, which
    // aborts every connection, so dropping the server closes hanging sockets too.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    connections.spawn(serve_connection(stream, peer, Arc::clone(&shared)));
                }
                Err(error) => {
                    // Transient (e.g. fd exhaustion); back off briefly instead of spinning.
                    tracing::warn!(%error, "scripted server: accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            // Reap finished connections so the set does not grow for the life of the server.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

enum Route {
    Chat,
    Models,
    Unknown,
}

fn route(request: &Request) -> Route {
    let path = request.target.split('?').next().unwrap_or_default();
    match (request.method.as_str(), path) {
        ("POST", "/v1/chat/completions" | "/chat/completions") => Route::Chat,
        ("GET", "/v1/models" | "/models") => Route::Models,
        _ => Route::Unknown,
    }
}

async fn serve_connection(mut stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    // Each SSE event must reach the client when written, not when Nagle decides (latency benches).
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "scripted server: set_nodelay failed");
    }
    let request = match http::read_request(&mut stream).await {
        Ok(request) => request,
        Err(ReadError::Closed) => return,
        Err(ReadError::Malformed(why)) => {
            tracing::debug!(%peer, why, "scripted server: malformed request");
            let _ = http::write_json(&mut stream, 400, &http::error_body(400, why)).await;
            return;
        }
        Err(ReadError::Io(error)) => {
            tracing::debug!(%peer, %error, "scripted server: read failed");
            return;
        }
    };
    let result = match route(&request) {
        Route::Chat => serve_chat(&mut stream, request, &shared).await,
        Route::Models => http::write_json(&mut stream, 200, &models_body()).await,
        Route::Unknown => {
            let message = format!("no route for {} {}", request.method, request.target);
            http::write_json(&mut stream, 404, &http::error_body(404, &message)).await
        }
    };
    if let Err(error) = result {
        // Usually the client gave up mid-stream (cancel, timeout); that is its business.
        tracing::debug!(%peer, %error, "scripted server: write failed");
    }
}

async fn serve_chat(
    stream: &mut TcpStream,
    request: Request,
    shared: &Shared,
) -> std::io::Result<()> {
    let parsed = if request.body.is_empty() {
        Ok(Value::Null)
    } else {
        serde_json::from_slice::<Value>(&request.body)
    };
    let body_is_json = parsed.is_ok();
    let recorded = RecordedRequest {
        method: request.method,
        path: request.target,
        headers: request.headers,
        body: parsed
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&request.body).into_owned())),
    };
    let response = {
        let mut state = shared.lock();
        state.requests.push(recorded);
        shared.recorded.send_replace(state.requests.len());
        // A garbage body is a client bug; answer it without spending a scripted response.
        body_is_json.then(|| state.queue.pop_front())
    };
    let response = match response {
        None => {
            let error = http::error_body(400, "scripted server: request body is not JSON");
            return http::write_json(stream, 400, &error).await;
        }
        Some(Some(response)) => response,
        Some(None) => ScriptedResponse::Status {
            code: 500,
            message: NO_RESPONSE_LEFT.to_owned(),
        },
    };
    match response {
        ScriptedResponse::Stream(steps) => write_stream(stream, steps).await,
        ScriptedResponse::Status { code, message } => {
            http::write_json(stream, code, &http::error_body(code, &message)).await
        }
        ScriptedResponse::Hang => std::future::pending().await,
        // Returning drops the socket with nothing written.
        ScriptedResponse::Close => Ok(()),
    }
}

async fn write_stream(stream: &mut TcpStream, steps: Vec<StreamStep>) -> std::io::Result<()> {
    http::write_stream_head(stream).await?;
    for step in steps {
        match step {
            StreamStep::Chunk(value) => {
                http::write_chunk(stream, format!("data: {value}\n\n").as_bytes()).await?;
            }
            StreamStep::Raw(text) => http::write_chunk(stream, text.as_bytes()).await?,
            StreamStep::Delay(duration) => tokio::time::sleep(duration).await,
            StreamStep::Done => http::write_chunk(stream, b"data: [DONE]\n\n").await?,
            // The caller drops the socket: EOF with no terminal chunk, an incomplete body.
            StreamStep::Disconnect => return Ok(()),
        }
    }
    http::write_last_chunk(stream).await
}

fn models_body() -> Value {
    json!({
        "object": "list",
        "data": [{ "id": chunk::MODEL, "object": "model", "created": chunk::CREATED, "owned_by": "tomo-testkit" }]
    })
}
