//! `tomo serve`: one Tomo session exposed over WebSocket, so the web UI runs in an ordinary browser and any
//! other client can connect.
//!
//! # Routes
//! - `GET /ws` — the session socket (below).
//! - `GET /health` — `{"status":"ok","latest_seq":N,"clients":K}`.
//! - `GET /api/profiles` — the profiles a client may switch to: `[{"file","name","agent_id","live2d_model"}]`.
//! - everything else — static files of the UI directory (`index.html` for `/`).
//!
//! # The socket
//! Server → client: every session [`EventEnvelope`] as one text frame, exactly the JSON of
//! `tomo_protocol` (`{"seq":N,"type":...}`), to every connected client, in `seq` order. Frames the
//! server itself makes carry **no** `seq` (they are not session events):
//! (these are [`tomo_protocol::ServerFrame`]s)
//! - `{"type":"error","code":"invalid_op","message":...,"recoverable":true}` — a client frame was refused
//!   (bad JSON, unknown op, a profile outside the profiles directory, `shutdown`); the connection stays open.
//! - `{"type":"replay_gap","missed_from":A,"missed_to":B}` — the client asked for events older than the
//!   replay buffer keeps; events `A..=B` are gone (a client should reset its view, e.g. clear the transcript).
//!   The oldest events still kept follow, then live ones.
//! - `{"type":"session_reset","latest_seq":N}` — the client's `last_seq` is newer than anything this server
//!   emitted: it talked to an earlier server process. The whole buffer follows as for a new client.
//!
//! Client → server: [`tomo_protocol::Op`] JSON (`{"type":"user_text","text":"hi"}`, `interrupt`,
//! `speech_started`, `speech_ended`, `switch_profile` with a path inside the profiles directory, either
//! relative to it — the `file` of `/api/profiles` — or absolute). `shutdown` is refused: clients come and go,
//! the server owns the session's lifetime.
//!
//! # Reconnecting
//! Connect to `/ws?last_seq=N` (N = the last `seq` the client processed) to receive every event after `N`
//! exactly once and in order, then live events. Without `last_seq` a client gets the whole replay buffer
//! (`last_seq=0`), so a fresh UI learns the character from the first `session_ready`. The buffer keeps the
//! last [`ServerConfig::replay_capacity`] events (default 10 000), at most
//! [`ServerConfig::replay_max_bytes`] of them (default 32 MiB).
//!
//! # Security
//! Loopback is not a trust boundary: any local process, and any web page in the user's browser, can
//! reach a loopback port. So every request carries a per-run token (`tomo serve` makes one when none is
//! given): `Authorization: Bearer <token>`, `?token=<token>`, or the cookie a browser gets when it opens
//! the address `tomo serve` prints (`/?token=…`; HttpOnly, SameSite=Strict), compared in constant time.
//! A non-loopback address also needs [`ServerConfig::allow_remote`] and a token of at least
//! [`MIN_TOKEN_LEN`] characters. On a loopback address requests must name a loopback host
//! (`Host: localhost:…`/`127.0.0.1:…`/`[::1]:…`), which defeats DNS rebinding, and WebSocket upgrades from
//! a browser must come from the server's own origin (or one in [`ServerConfig::allowed_origins`]).
//! What an authorized client may send is [`ClientOpPolicy`]'s decision.

pub mod auth;
mod hub;
mod listener;
pub mod policy;
pub mod profiles;
pub mod replay;
mod routes;
mod static_guard;
mod ws;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tomo_protocol::{EventEnvelope, Op};

use hub::Hub;
pub use listener::ConnectionLimits;
pub use policy::{ClientOpPolicy, OpRefused};
pub use replay::{Replay, ReplayRing};

/// How long [`Server::shutdown`] waits for open connections to finish.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Shortest token accepted for a non-loopback bind: a short token on a network is guessable.
pub const MIN_TOKEN_LEN: usize = 16;

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Default `127.0.0.1:7860`; port 0 picks a free port (see [`Server::local_addr`]).
    pub addr: SocketAddr,
    /// Must be set to bind a non-loopback address.
    pub allow_remote: bool,
    /// Every request must carry it (`tomo serve` always sets one, generated when not given: any local
    /// process or web page can reach a loopback port). Required for non-loopback binds. `None` leaves
    /// the server open to every local process: for tests only.
    pub token: Option<String>,
    /// Browser origins besides the server's own that may open the socket (UI development).
    pub allowed_origins: Vec<String>,
    /// Static UI files served at `/`; `None` serves a short notice instead.
    pub ui_dir: Option<PathBuf>,
    /// The user's own Live2D models (the repository's `assets/live2d/`), served at `/live2d/` ahead of the
    /// models bundled with the UI, so a profile can name `assets/live2d/<folder>/<file>` without a rebuild.
    pub models_dir: Option<PathBuf>,
    /// The only directory `switch_profile` may load profiles from, and what `/api/profiles` lists.
    /// `None` refuses every switch.
    pub profiles_dir: Option<PathBuf>,
    /// Events kept for reconnecting clients.
    pub replay_capacity: usize,
    /// Bytes of events kept for reconnecting clients (a few huge events must not pin memory).
    pub replay_max_bytes: usize,
    /// Frames queued for one client before it counts as too slow and is disconnected.
    pub client_queue: usize,
    /// Open connections at once, and how long a request head may take.
    pub limits: ConnectionLimits,
}

impl ServerConfig {
    /// The bind and token rules, without binding: lets a caller refuse a bad configuration before it
    /// starts a session. [`Server::start`] checks the same.
    pub fn check(&self) -> Result<(), ServerError> {
        let token = self.token.as_deref().filter(|t| !t.is_empty());
        if !self.addr.ip().is_loopback() {
            if !self.allow_remote {
                return Err(ServerError::RemoteNotAllowed { addr: self.addr });
            }
            if token.is_none() {
                return Err(ServerError::RemoteNeedsToken { addr: self.addr });
            }
        }
        if token.is_some_and(|t| t.chars().count() < MIN_TOKEN_LEN) {
            return Err(ServerError::TokenTooShort);
        }
        Ok(())
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 7860)),
            allow_remote: false,
            token: None,
            allowed_origins: Vec::new(),
            ui_dir: None,
            models_dir: None,
            profiles_dir: None,
            replay_capacity: 10_000,
            replay_max_bytes: 32 << 20,
            client_queue: 1024,
            limits: ConnectionLimits::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(
        "refusing to bind {addr}: it is not a loopback address; pass --allow-remote and a token to expose the session"
    )]
    RemoteNotAllowed { addr: SocketAddr },
    #[error(
        "refusing to bind {addr} without a token: set --token or TOMO_SERVER_TOKEN (at least {MIN_TOKEN_LEN} characters)"
    )]
    RemoteNeedsToken { addr: SocketAddr },
    #[error("the server token is too short: at least {MIN_TOKEN_LEN} characters are needed")]
    TokenTooShort,
    #[error("cannot bind {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the server failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// A running server. Dropping it leaves the server running until the runtime ends; call
/// [`Server::shutdown`] to stop it.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    hub: Arc<Hub>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), std::io::Error>>,
}

/// Shared by every request handler.
#[derive(Debug)]
pub(crate) struct AppState {
    pub hub: Arc<Hub>,
    pub ops: mpsc::Sender<Op>,
    pub token: Option<String>,
    /// The cookie a browser keeps the token in (per port: cookies ignore ports).
    pub cookie_name: String,
    /// Loopback bind: enforce loopback `Host` headers.
    pub loopback: bool,
    pub allowed_origins: Vec<String>,
    pub profiles_dir: Option<PathBuf>,
    /// What clients may send.
    pub policy: ClientOpPolicy,
}

impl Server {
    /// Binds, starts forwarding the session's `events` to clients and clients' ops to `ops`.
    /// `events` must be the receiver `start_session` returned, unread, so the replay buffer starts at seq 1.
    pub async fn start(
        config: ServerConfig,
        ops: mpsc::Sender<Op>,
        events: mpsc::UnboundedReceiver<EventEnvelope>,
    ) -> Result<Self, ServerError> {
        config.check()?;
        let token = config.token.clone().filter(|t| !t.is_empty());
        let loopback = config.addr.ip().is_loopback();
        let listener =
            TcpListener::bind(config.addr)
                .await
                .map_err(|source| ServerError::Bind {
                    addr: config.addr,
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: config.addr,
            source,
        })?;

        let hub = Arc::new(Hub::new(
            config.replay_capacity,
            config.replay_max_bytes,
            config.client_queue,
        ));
        tokio::spawn(Arc::clone(&hub).pump(events));
        let state = Arc::new(AppState {
            hub: Arc::clone(&hub),
            ops,
            loopback,
            cookie_name: format!("tomo_token_{}", addr.port()),
            allowed_origins: config.allowed_origins.clone(),
            token,
            profiles_dir: config.profiles_dir.clone(),
            policy: ClientOpPolicy {
                profiles_dir: config.profiles_dir.clone(),
            },
        });
        let app = routes::router(
            state,
            config.ui_dir.as_deref(),
            config.models_dir.as_deref(),
        );
        let (stop, stopped) = oneshot::channel();
        let listener = listener::LimitedListener::new(listener, config.limits);
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
        });
        tracing::info!(%addr, "tomo server listening");
        Ok(Self {
            addr,
            hub,
            stop: Some(stop),
            task,
        })
    }

    /// The bound address (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections, closes every WebSocket and waits for the server task, at most
    /// [`SHUTDOWN_GRACE`]: a client that never finishes its request must not hold the program open.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Graceful shutdown waits for open connections; sockets would keep it waiting forever.
        self.hub.close();
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut self.task).await {
            Ok(Ok(result)) => result.map_err(ServerError::Serve),
            Ok(Err(join)) => Err(ServerError::Serve(std::io::Error::other(join))),
            Err(_) => {
                tracing::info!("connections still open after {SHUTDOWN_GRACE:?}; closing them");
                self.task.abort();
                Ok(())
            }
        }
    }
}
