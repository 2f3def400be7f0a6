//! The session coordinator: the one owner of the conversation state machine. It takes [`Op`]s, runs one
//! turn at a time (a new user message or an interrupt cancels the turn in flight: the user always wins),
//! and emits every [`Event`] with a per-session sequence number. It also runs the character's sensors
//! and schedulers (`plugin_tasks.rs`) and decides whether a proactive turn may start (`proactive.rs`).

mod advice;
mod answers;
mod anticipation;
mod approvals;
mod character;
pub mod compress;
mod echo_guard;
pub mod heard;
mod hooks;
mod latency;
mod llm_settings;
mod plugin_tasks;
mod proactive;
mod prompt;
mod redaction;
mod request;
mod switching;
mod talk_over;
mod turn;
pub mod verdict;
mod warm;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use approvals::Approvals;
pub use character::{
    Character, CharacterError, Environment, LlmOverrides, character_dir, default_data_root,
};
pub use hooks::HookFailure;

use crate::plugin_host::PluginProblem;
use crate::sink::{OutputSink, SinkEvents};
use crate::state::StateMachine;
use latency::LatencyTracker;
use plugin_tasks::{PluginMsg, PluginTasks};
use tomo_config::profile::Profile;
use tomo_plugin_api::scheduler::{ProactiveRequest, SchedulerRequest};
use tomo_plugin_api::sensor::{SensorCommand, SensorOutput};
use tomo_protocol::{ErrorCode, Event, EventEnvelope, Observation, Op, SessionState, TurnId};
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
    let (approvals, approval_rx) = Approvals::channel();
    let (character, problems) = Character::load(profile, &env, Some(approvals.clone())).await?;
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let (ops_tx, ops_rx) = mpsc::channel(64);
    let (turn_tx, turn_rx) = mpsc::unbounded_channel();
    let (sink_tx, sink_rx) = mpsc::unbounded_channel();
    let (plugin_tx, plugin_rx) = mpsc::unbounded_channel();
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
        plugin_tx,
        plugin_rx,
        plugins: PluginTasks::default(),
        mic_muted: false,
        do_not_disturb: false,
        push_to_talk: false,
        half_duplex: false,
        observations: VecDeque::new(),
        warm_up: None,
        secrets: Vec::new(),
        approvals,
        approval_rx,
        questions: approvals::OpenQuestions::default(),
        anticipation: None,
        talk_over: None,
        own_speech: talk_over::OwnSpeech::default(),
    };
    coordinator.refresh_secrets();
    coordinator.announce(problems);
    coordinator.start_plugins();
    coordinator.warm_up();
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
    plugin_tx: mpsc::UnboundedSender<PluginMsg>,
    plugin_rx: mpsc::UnboundedReceiver<PluginMsg>,
    /// The character's running sensors and schedulers.
    plugins: PluginTasks,
    mic_muted: bool,
    do_not_disturb: bool,
    push_to_talk: bool,
    half_duplex: bool,
    /// Recent sensor observations, for the next proactive turn.
    observations: VecDeque<Observation>,
    /// The character's prefix being evaluated ahead of its first turn (`warm.rs`).
    warm_up: Option<JoinHandle<()>>,
    /// Key values no event may carry (see `redaction.rs`).
    secrets: Vec<String>,
    /// Handed to every character's plugins, for tools that ask before they act.
    approvals: Approvals,
    approval_rx: mpsc::UnboundedReceiver<approvals::ToolQuestion>,
    /// Questions to the user not yet answered.
    questions: approvals::OpenQuestions,
    /// Building the request of a voice turn in its pause (anticipation.rs).
    anticipation: Option<JoinHandle<request::Anticipated>>,
    /// Speech over the character's answer whose words are not judged yet (talk_over.rs).
    talk_over: Option<talk_over::TalkOver>,
    /// What the character said lately: its echo, if the microphone hears it.
    own_speech: talk_over::OwnSpeech,
}

impl Coordinator {
    async fn run(mut self, mut ops: mpsc::Receiver<Op>) {
        loop {
            let hold_ends = self
                .talk_over
                .as_ref()
                .and_then(talk_over::TalkOver::deadline);
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
                Some(question) = self.approval_rx.recv() => self.ask_about_tool(question),
                // Last: a user op that arrives together with a scheduler's request wins.
                Some(msg) = self.plugin_rx.recv() => self.handle_plugin_msg(msg).await,
                () = talk_over::until(hold_ends) => self.hold_timed_out(),
            }
        }
        self.stop_current_turn().await;
        if let Some(warm_up) = self.warm_up.take() {
            warm_up.abort();
        }
        std::mem::take(&mut self.plugins).stop().await;
    }

    /// Evaluates the character's persona, tools and history in the engine while nobody speaks, so the
    /// first turn only evaluates the user's words. A turn that starts meanwhile simply queues behind it in
    /// the engine (it needs the same prefix); a new character replaces it.
    fn warm_up(&mut self) {
        if let Some(previous) = self.warm_up.take() {
            previous.abort();
        }
        let character = Arc::clone(&self.character);
        self.warm_up = Some(tokio::spawn(async move {
            warm::next_prefix(&character).await;
        }));
    }

    fn start_plugins(&mut self) {
        self.plugins = PluginTasks::start(&self.character, &self.plugin_tx);
    }

    async fn handle_plugin_msg(&mut self, msg: PluginMsg) {
        match msg {
            PluginMsg::Sensor {
                plugin,
                output: SensorOutput::Status(state),
            } => self.emit(Event::SensorStatus { plugin, state }),
            PluginMsg::Sensor {
                plugin,
                output: SensorOutput::Targets(targets),
            } => self.emit(Event::SensorTargets { plugin, targets }),
            PluginMsg::Sensor {
                output: SensorOutput::Observation(observation),
                ..
            } => {
                proactive::remember(&mut self.observations, observation.clone());
                self.emit(Event::Observation(observation));
            }
            PluginMsg::Scheduler {
                plugin,
                request: SchedulerRequest::Proactive(request),
            } => {
                tracing::debug!(%plugin, reason = %request.reason, "proactive turn requested");
                self.proactive_turn(request);
            }
            PluginMsg::Scheduler {
                plugin,
                request: SchedulerRequest::State(state),
            } => self.emit(Event::PluginState { plugin, state }),
        }
    }

    /// Starts a proactive turn if the session is idle and quiet, else reports why not.
    fn proactive_turn(&mut self, request: ProactiveRequest) {
        let reason = request.reason;
        if let Some(why) = proactive::blocker(
            self.state.state(),
            self.current.is_some(),
            self.mic_muted,
            self.do_not_disturb,
        ) {
            tracing::debug!(%reason, ?why, "proactive turn skipped");
            self.emit(Event::ProactiveSkipped { reason, why });
            return;
        }
        // Privacy: screen text leaves the machine only when the profile allows it.
        let observations: Vec<Observation> = self.observations.drain(..).collect();
        let shared = if request.share_observations_with_cloud || self.character.llm_is_local() {
            observations
        } else {
            if !observations.is_empty() {
                tracing::info!(
                    count = observations.len(),
                    "observations withheld from a remote LLM (set share_observations_with_cloud to allow)"
                );
            }
            Vec::new()
        };
        let text = proactive::user_message(&reason, &shared);
        self.start_turn(text, Some(reason), None, None);
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
        let event = redaction::redact_event(event, &self.secrets);
        self.seq += 1;
        self.plugins.forward(&event);
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
                // The plugin stays out until its manifest or the profile is fixed.
                recoverable: false,
            });
        }
        let skipped = self.character.history_skipped_lines;
        if skipped > 0 {
            let lines = if skipped == 1 { "line" } else { "lines" };
            self.emit(Event::Notice {
                level: tomo_protocol::NoticeLevel::Warning,
                message: format!(
                    "{skipped} unreadable {lines} in {}'s history (an interrupted write) skipped; the rest of the conversation is kept",
                    self.character.name()
                ),
            });
        }
        self.ask_about_commands();
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
                self.drop_anticipation().await;
                self.stop_current_turn().await;
                self.start_turn(text, None, None, None);
            }
            Op::SpeechStarted => {
                // The user wins: whatever the character was doing stops (and with it any hold).
                self.drop_anticipation().await;
                self.stop_current_turn().await;
                self.detach_talk_over();
                if self.state.state() == SessionState::Idle {
                    self.transition(SessionState::Listening);
                }
            }
            Op::SpeechEnded {
                transcript,
                asr_ms,
                end_of_turn_ms,
                over_answer_only,
            } => {
                let waited = (
                    std::time::Duration::from_millis(end_of_turn_ms),
                    std::time::Duration::from_millis(asr_ms),
                );
                self.speech_ended(transcript.trim(), waited, over_answer_only)
                    .await;
            }
            Op::SpeechOverAnswer => self.speech_over_answer(),
            Op::SpeechPaused { transcript } => {
                // Words over the answer that let it go on start nothing.
                if self.judge_talk_over(&transcript, false, false).await != Some(false) {
                    self.anticipate(transcript).await;
                }
            }
            // The pause's words were not the turn's: their request would only cost.
            Op::SpeechResumed => {
                self.drop_anticipation().await;
                self.talk_over_went_on();
            }
            Op::Interrupt => {
                if let Some(active) = &self.current {
                    active.cancel.cancel();
                }
            }
            Op::SwitchProfile { path } => self.switch_profile(Path::new(&path)).await,
            Op::Notice { level, message } => self.emit(Event::Notice { level, message }),
            Op::ListSensorTargets { plugin } => {
                if let Err(error) = self.plugins.command(&plugin, SensorCommand::ListTargets) {
                    self.emit(Event::Error {
                        code: ErrorCode::Plugin,
                        message: error.to_string(),
                        recoverable: error.is_recoverable(),
                    });
                }
            }
            Op::SetLlm {
                engine,
                base_url,
                model,
                api_key_env,
            } => {
                self.set_llm(engine, &base_url, &model, api_key_env.as_deref())
                    .await
            }
            Op::Shutdown => {}
            Op::SetMicMuted { muted } => {
                self.mic_muted = muted;
                self.mode_changed();
            }
            Op::SetDoNotDisturb { enabled } => {
                self.do_not_disturb = enabled;
                self.mode_changed();
            }
            Op::SetPushToTalk { enabled } => {
                self.push_to_talk = enabled;
                self.mode_changed();
            }
            Op::SetHalfDuplex { enabled } => {
                self.half_duplex = enabled;
                self.mode_changed();
            }
            // Relayed to the microphone front end, which turns a press into speech_started (the user
            // wins over a turn in flight) and a release into the utterance.
            Op::PushToTalk { pressed } if self.push_to_talk && !self.mic_muted => {
                self.emit(Event::PushToTalk { pressed });
            }
            Op::PushToTalk { .. } => {
                tracing::debug!("push-to-talk ignored: not in push-to-talk mode")
            }
            Op::ProactiveTurn { reason } => self.proactive_turn(ProactiveRequest {
                reason,
                share_observations_with_cloud: false,
            }),
            Op::Approve { id, allow } => self.answer(id, allow).await,
            Op::SetSensor {
                plugin,
                enabled,
                target,
            } => {
                let command = if enabled {
                    SensorCommand::Start { target }
                } else {
                    SensorCommand::Stop
                };
                if let Err(error) = self.plugins.command(&plugin, command) {
                    self.emit(Event::Error {
                        code: ErrorCode::Plugin,
                        message: error.to_string(),
                        recoverable: error.is_recoverable(),
                    });
                }
            }
        }
    }

    fn mode_changed(&mut self) {
        self.emit(Event::ModeChanged {
            mic_muted: self.mic_muted,
            do_not_disturb: self.do_not_disturb,
            push_to_talk: self.push_to_talk,
            half_duplex: self.half_duplex,
        });
    }

    /// `proactive`: the reason, for a turn the character starts on its own. `waited`: for a voice turn,
    /// how long the end of the turn took to decide after the last word, and ASR after that.
    /// `before_turn`: the hooks' blocks already gathered for these words (in the pause).
    fn start_turn(
        &mut self,
        user_text: String,
        proactive: Option<String>,
        waited: Option<(std::time::Duration, std::time::Duration)>,
        before_turn: Option<request::BeforeTurn>,
    ) {
        let id = self.character.next_turn_id();
        let shown_text = match &proactive {
            Some(reason) => {
                self.emit(Event::Proactive {
                    turn_id: id,
                    reason: reason.clone(),
                });
                format!("[proactive] {reason}")
            }
            None => user_text.clone(),
        };
        // Nothing held may silence the new answer.
        self.detach_talk_over();
        self.transition(SessionState::Thinking);
        let cancel = CancellationToken::new();
        let task = tokio::spawn(turn::run_turn(
            Arc::clone(&self.character),
            Arc::clone(&self.sink),
            TurnInput {
                turn_id: id,
                user_text,
                shown_text,
                proactive: proactive.is_some(),
                before_turn,
            },
            cancel.clone(),
            self.turn_tx.clone(),
        ));
        let latency = match waited {
            Some((end_of_turn, asr)) => LatencyTracker::spoken_after(id, end_of_turn, asr),
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
            TurnMsg::Event(event) => {
                self.own_speech.record(&event);
                self.emit(event);
            }
            TurnMsg::Speaking => {
                if self.state.state() == SessionState::Thinking {
                    self.transition(SessionState::Speaking);
                }
            }
            TurnMsg::Done => {
                self.talk_over_turn_done(turn_id);
                // A confirmation the turn no longer waits for: every client drops its prompt.
                for id in self.questions.abandoned() {
                    self.emit(Event::ApprovalResolved { id, allowed: false });
                }
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
}
