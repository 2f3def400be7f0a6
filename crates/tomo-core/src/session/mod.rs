//! The session coordinator: the one owner of the conversation state machine. It takes [`Op`]s, runs one
//! turn at a time (a new user message or an interrupt cancels the turn in flight: the user always wins),
//! and emits every [`Event`] with a per-session sequence number.

mod character;
pub mod compress;
mod hooks;
mod latency;
mod prompt;
mod turn;

use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use character::{
    Character, CharacterError, Environment, LlmOverrides, character_dir, default_data_root,
};
pub use hooks::HookFailure;

use crate::plugins::host::PluginProblem;
use crate::profile::{Profile, load_profile};
use crate::protocol::{ErrorCode, Event, EventEnvelope, Op, SessionState, TurnId};
use crate::sink::{OutputSink, SinkEvents};
use crate::state::StateMachine;
use latency::LatencyTracker;
use turn::{TurnInput, TurnMsg};

/// Sends ops to a running session.
#[derive(Debug)]
pub struct SessionHandle {
    ops: mpsc::Sender<Op>,
    task: JoinHandle<()>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the session has stopped")]
pub struct SessionClosed;

impl SessionHandle {
    pub async fn send(&self, op: Op) -> Result<(), SessionClosed> {
        self.ops.send(op).await.map_err(|_| SessionClosed)
    }

    /// A cloneable sender for other tasks (e.g. a Ctrl-C handler).
    pub fn sender(&self) -> mpsc::Sender<Op> {
        self.ops.clone()
    }

    /// Waits for the session to stop (after [`Op::Shutdown`] or when every sender is gone).
    pub async fn join(self) {
        drop(self.ops);
        let _ = self.task.await;
    }
}

/// Starts a session for `profile`. Events arrive on the returned receiver, starting with `session_ready`.
/// Events are never dropped (the channel is unbounded: they come at token speed and a client that stops
/// reading is a bug we would rather see as memory than as a lost sentence).
pub async fn start_session(
    profile: Profile,
    env: Environment,
    sink: Arc<dyn OutputSink>,
) -> Result<(SessionHandle, mpsc::UnboundedReceiver<EventEnvelope>), CharacterError> {
    let (character, problems) = Character::load(profile, &env).await?;
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let (ops_tx, ops_rx) = mpsc::channel(64);
    let (turn_tx, turn_rx) = mpsc::unbounded_channel();
    let (sink_tx, sink_rx) = mpsc::unbounded_channel();
    sink.attach(SinkEvents::new(sink_tx));
    let mut coordinator = Coordinator {
        character: Arc::new(character),
        env,
        sink,
        state: StateMachine::default(),
        seq: 0,
        events: events_tx,
        current: None,
        turn_tx,
        turn_rx,
        sink_rx,
    };
    coordinator.announce(problems);
    let task = tokio::spawn(coordinator.run(ops_rx));
    Ok((SessionHandle { ops: ops_tx, task }, events_rx))
}

struct ActiveTurn {
    id: TurnId,
    cancel: CancellationToken,
    task: JoinHandle<()>,
    latency: LatencyTracker,
}

struct Coordinator {
    character: Arc<Character>,
    env: Environment,
    sink: Arc<dyn OutputSink>,
    state: StateMachine,
    seq: u64,
    events: mpsc::UnboundedSender<EventEnvelope>,
    current: Option<ActiveTurn>,
    turn_tx: mpsc::UnboundedSender<(TurnId, TurnMsg)>,
    turn_rx: mpsc::UnboundedReceiver<(TurnId, TurnMsg)>,
    sink_rx: mpsc::UnboundedReceiver<Event>,
}

impl Coordinator {
    async fn run(mut self, mut ops: mpsc::Receiver<Op>) {
        loop {
            // Biased, sink first: a sink reports a clip's end before it reports itself drained, and the
            // turn turns "drained" into `playback_drained`; polling fairly could put that event before the
            // last `audio_finished`. Ops wait at most one event behind.
            tokio::select! {
                biased;
                Some(event) = self.sink_rx.recv() => self.emit(event),
                Some((turn_id, msg)) = self.turn_rx.recv() => self.handle_turn_msg(turn_id, msg),
                op = ops.recv() => match op {
                    None | Some(Op::Shutdown) => break,
                    Some(op) => self.handle_op(op).await,
                },
            }
        }
        self.stop_current_turn().await;
    }

    fn emit(&mut self, event: Event) {
        let report = self
            .current
            .as_mut()
            .and_then(|a| a.latency.observe(&event));
        self.send(event);
        if let Some(report) = report {
            self.send(report);
        }
    }

    fn send(&mut self, event: Event) {
        self.seq += 1;
        // A client that went away does not stop the session.
        let _ = self.events.send(EventEnvelope {
            seq: self.seq,
            event,
        });
    }

    fn announce(&mut self, problems: Vec<PluginProblem>) {
        for problem in problems {
            tracing::warn!(plugin = %problem.plugin, message = %problem.message, "plugin not loaded");
            self.emit(Event::Error {
                code: ErrorCode::Plugin,
                message: format!("plugin `{}`: {}", problem.plugin, problem.message),
                recoverable: true,
            });
        }
        let ready = Event::SessionReady {
            character: self.character.name().to_owned(),
            agent_id: self.character.agent_id().to_owned(),
            tools: self.character.tools.names(),
        };
        self.emit(ready);
    }

    fn transition(&mut self, to: SessionState) {
        match self.state.go(to) {
            Ok(from) => self.emit(Event::StateChanged { from, to }),
            Err(illegal) => {
                tracing::error!(%illegal, "refused state transition");
                self.emit(Event::Error {
                    code: ErrorCode::IllegalState,
                    message: illegal.to_string(),
                    recoverable: true,
                });
            }
        }
    }

    async fn handle_op(&mut self, op: Op) {
        match op {
            Op::UserText { text } => {
                let text = text.trim().to_owned();
                if text.is_empty() {
                    return;
                }
                self.stop_current_turn().await;
                self.start_turn(text, false, None);
            }
            Op::SpeechStarted => {
                // The user wins: whatever the character was doing stops.
                self.stop_current_turn().await;
                if self.state.state() == SessionState::Idle {
                    self.transition(SessionState::Listening);
                }
            }
            Op::SpeechEnded { transcript, asr_ms } => {
                let text = transcript.trim().to_owned();
                if text.is_empty() {
                    // Noise or a cough: no turn.
                    if self.state.state() == SessionState::Listening {
                        self.transition(SessionState::Idle);
                    }
                    return;
                }
                self.stop_current_turn().await;
                self.emit(Event::UserTranscript { text: text.clone() });
                self.start_turn(text, false, Some(std::time::Duration::from_millis(asr_ms)));
            }
            Op::Interrupt => {
                if let Some(active) = &self.current {
                    active.cancel.cancel();
                }
            }
            Op::SwitchProfile { path } => self.switch_profile(Path::new(&path)).await,
            Op::Shutdown => {}
        }
    }

    /// `asr`: for a voice turn, how long recognition took after the end of speech.
    fn start_turn(&mut self, user_text: String, proactive: bool, asr: Option<std::time::Duration>) {
        let id = self.character.next_turn_id();
        self.transition(SessionState::Thinking);
        let cancel = CancellationToken::new();
        let task = tokio::spawn(turn::run_turn(
            Arc::clone(&self.character),
            Arc::clone(&self.sink),
            TurnInput {
                turn_id: id,
                user_text,
                proactive,
            },
            cancel.clone(),
            self.turn_tx.clone(),
        ));
        let latency = match asr {
            Some(asr) => LatencyTracker::spoken(id, asr),
            None => LatencyTracker::typed(id),
        };
        self.current = Some(ActiveTurn {
            id,
            cancel,
            task,
            latency,
        });
    }

    fn handle_turn_msg(&mut self, turn_id: TurnId, msg: TurnMsg) {
        match msg {
            TurnMsg::Event(event) => self.emit(event),
            TurnMsg::Speaking => {
                if self.state.state() == SessionState::Thinking {
                    self.transition(SessionState::Speaking);
                }
            }
            TurnMsg::Done => {
                if self.current.as_ref().is_some_and(|a| a.id == turn_id)
                    && let Some(mut active) = self.current.take()
                    && let Some(report) = active.latency.finish()
                {
                    self.send(report);
                }
                if self.state.state() != SessionState::Idle {
                    self.transition(SessionState::Idle);
                }
            }
        }
    }

    /// Cancels the turn in flight (if any), waits for it to wrap up, and emits what it reported.
    async fn stop_current_turn(&mut self) {
        let Some(active) = self.current.take() else {
            return;
        };
        active.cancel.cancel();
        if let Err(error) = active.task.await {
            tracing::error!(%error, "turn task failed");
            self.emit(Event::Error {
                code: ErrorCode::Internal,
                message: format!("turn {} crashed: {error}", active.id),
                recoverable: true,
            });
            // The task died without saying Done; make the state consistent.
            self.turn_tx.send((active.id, TurnMsg::Done)).ok();
        }
        while let Ok((turn_id, msg)) = self.turn_rx.try_recv() {
            self.handle_turn_msg(turn_id, msg);
        }
    }

    async fn switch_profile(&mut self, path: &Path) {
        let loaded = match load_profile(path) {
            Ok(loaded) => loaded,
            Err(error) => {
                self.emit(Event::Error {
                    code: ErrorCode::Profile,
                    message: error.to_string(),
                    recoverable: true,
                });
                return;
            }
        };
        for warning in &loaded.warnings {
            tracing::warn!(%warning, "profile warning");
        }
        self.stop_current_turn().await;
        match Character::load(loaded.profile, &self.env).await {
            Ok((character, problems)) => {
                // Before the next turn can start: the character speaks with its own voice from its first
                // sentence on (a voice that cannot load leaves the old one and says so).
                if let Err(error) = self.sink.switch_voice(&character.profile).await {
                    self.emit(Event::Error {
                        code: ErrorCode::Output,
                        message: format!("{}: {error}; keeping the previous voice", path.display()),
                        recoverable: true,
                    });
                }
                self.character = Arc::new(character);
                self.announce(problems);
            }
            Err(error) => self.emit(Event::Error {
                code: ErrorCode::Profile,
                message: format!("cannot switch to {}: {error}", path.display()),
                recoverable: true,
            }),
        }
    }
}
