//! Session test helpers: profiles on disk, a paced output sink, a recording hook, event waiting.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tomo_config::profile::load_profile;
use tomo_core::session::{Environment, LlmOverrides, SessionHandle, start_session};
use tomo_core::sink::{OutputSink, SinkError};
use tomo_plugin_api::hooks::{Hook, HookContext, HookError, TurnRecord};
use tomo_protocol::{Event, EventEnvelope, Sentence, TurnId};

pub fn write_profile(
    dir: &Path,
    file: &str,
    name: &str,
    agent_id: &str,
    base_url: &str,
) -> PathBuf {
    let path = dir.join(file);
    let text = format!(
        r#"[character]
name = "{name}"
agent_id = "{agent_id}"
persona = "You are {name}, a test character."

[llm]
base_url = "{base_url}"
model = "scripted-model"

[live2d.emotion_map]
joy = "f01"
sad = "f03"

[plugins]
enabled = []
"#
    );
    std::fs::write(&path, text).unwrap();
    path
}

pub fn environment(data_root: &Path, hooks: Vec<Arc<dyn Hook>>) -> Environment {
    Environment {
        plugins_dir: data_root.join("no-plugins"),
        data_root: data_root.to_path_buf(),
        llm: LlmOverrides::default(),
        llm_connector: std::sync::Arc::new(tomo_openai::OpenAiConnector),
        hook_timeout: Duration::from_millis(300),
        extra_hooks: hooks,
        plugin_factories: tomo_plugins::builtin_factories(),
    }
}

pub async fn start(
    profile: &Path,
    env: Environment,
    sink: Arc<dyn OutputSink>,
) -> (SessionHandle, mpsc::UnboundedReceiver<EventEnvelope>) {
    let loaded = load_profile(profile).unwrap();
    start_session(loaded.profile, env, sink).await.unwrap()
}

/// Collects events until `done` matches one (inclusive). Panics after 15 s.
pub async fn collect_until(
    events: &mut mpsc::UnboundedReceiver<EventEnvelope>,
    done: impl Fn(&Event) -> bool,
) -> Vec<EventEnvelope> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let next = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out; events so far: {seen:#?}"))
            .expect("session ended");
        let stop = done(&next.event);
        seen.push(next);
        if stop {
            return seen;
        }
    }
}

pub fn is_idle(event: &Event) -> bool {
    matches!(
        event,
        Event::StateChanged {
            to: tomo_protocol::SessionState::Idle,
            ..
        }
    )
}

/// Simulates a speaker: each sentence takes `per_sentence` to play, strictly one after another.
#[derive(Default)]
pub struct PacedSink {
    pub per_sentence: Duration,
    state: Mutex<PacedState>,
}

#[derive(Default)]
struct PacedState {
    busy_until: Option<Instant>,
    /// (turn, sentence index, when its last sample played)
    pub played: Vec<(TurnId, u32, Instant)>,
    interrupted: bool,
}

impl PacedSink {
    pub fn new(per_sentence: Duration) -> Arc<Self> {
        Arc::new(Self {
            per_sentence,
            state: Mutex::default(),
        })
    }

    pub fn played(&self) -> Vec<(TurnId, u32, Instant)> {
        self.state.lock().unwrap().played.clone()
    }
}

impl OutputSink for PacedSink {
    fn enqueue(&self, turn: TurnId, sentence: Sentence) -> Result<(), SinkError> {
        let mut state = self.state.lock().unwrap();
        let start = state
            .busy_until
            .map_or(Instant::now(), |t| t.max(Instant::now()));
        let end = start + self.per_sentence;
        state.busy_until = Some(end);
        state.played.push((turn, sentence.index, end));
        state.interrupted = false;
        Ok(())
    }

    fn finish_turn(&self, _turn: TurnId) -> BoxFuture<'static, Result<(), SinkError>> {
        let until = self.state.lock().unwrap().busy_until;
        Box::pin(async move {
            if let Some(until) = until {
                tokio::time::sleep_until(until.into()).await;
            }
            Ok(())
        })
    }

    fn interrupt(&self) {
        let mut state = self.state.lock().unwrap();
        state.busy_until = None;
        state.interrupted = true;
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    BeforeTurn(String),
    AfterTurn(String),
    AfterPlayback(String),
}

/// A hook that records every call with its time, and can inject memory, fail, or stall.
pub struct RecordingHook {
    pub name: String,
    pub memory: Option<String>,
    pub fail: bool,
    pub stall: bool,
    pub log: Arc<Mutex<Vec<(Call, Instant)>>>,
}

impl RecordingHook {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            memory: None,
            fail: false,
            stall: false,
            log: Arc::default(),
        }
    }

    pub fn calls(&self) -> Vec<(Call, Instant)> {
        self.log.lock().unwrap().clone()
    }

    fn record(&self, call: Call) {
        self.log.lock().unwrap().push((call, Instant::now()));
    }

    fn outcome<T: Send + 'static>(&self, value: T) -> BoxFuture<'static, Result<T, HookError>> {
        let (fail, stall) = (self.fail, self.stall);
        Box::pin(async move {
            if stall {
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            if fail {
                return Err(HookError("deliberate failure".to_owned()));
            }
            Ok(value)
        })
    }
}

impl Hook for RecordingHook {
    fn name(&self) -> &str {
        &self.name
    }

    fn on_before_turn(
        &self,
        user_text: String,
        _ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<Option<String>, HookError>> {
        self.record(Call::BeforeTurn(user_text));
        self.outcome(self.memory.clone())
    }

    fn on_after_turn(
        &self,
        turn: Arc<TurnRecord>,
        _ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<(), HookError>> {
        self.record(Call::AfterTurn(turn.assistant_text.clone()));
        self.outcome(())
    }

    fn on_after_playback(
        &self,
        turn: Arc<TurnRecord>,
        _ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<(), HookError>> {
        self.record(Call::AfterPlayback(turn.assistant_text.clone()));
        self.outcome(())
    }
}

/// Sends one user message.
pub async fn say(session: &SessionHandle, text: &str) {
    session
        .send(tomo_protocol::Op::UserText {
            text: text.to_owned(),
        })
        .await
        .unwrap();
}

/// Hana in text mode against `server`, with her data in a fresh temp dir (returned: it must outlive the
/// session).
pub async fn text_session(
    server: &tomo_testkit::ScriptedServer,
) -> (
    tempfile::TempDir,
    SessionHandle,
    mpsc::UnboundedReceiver<EventEnvelope>,
) {
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let (session, events) = start(
        &profile,
        environment(dir.path(), vec![]),
        Arc::new(tomo_core::sink::TextSink),
    )
    .await;
    (dir, session, events)
}
