//! Scheduler plugins: decide when the character speaks up on its own (e.g. MoodChat). A scheduler runs
//! as one task from the character's start until its profile is switched away or the session shuts down.
//!
//! A scheduler only *asks*: the session coordinator starts a proactive turn only when nobody is talking,
//! nothing is playing, and the user has not muted the microphone or turned on do-not-disturb; otherwise
//! it answers with a `proactive_skipped` event (which the scheduler also sees).
//!
//! Time: wait with `tokio::time` (tests pause and advance it); read wall-clock time, for anything
//! persisted, through a [`Clock`] the scheduler is built with (tests script it).

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use tomo_protocol::{Event, PluginState};

/// Wall-clock time, injectable so tests can script it.
pub trait Clock: Send + Sync {
    /// Unix time in milliseconds.
    fn now_ms(&self) -> i64;
}

/// The real wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}

/// A request for a proactive turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ProactiveRequest {
    /// Why, in words the model reads (e.g. "idle for 90 s, mood 82").
    pub reason: String,
    /// Put the recent sensor observations into the prompt even when the LLM endpoint is not on this
    /// machine. Without it, a proactive turn against a remote endpoint goes without observations.
    pub share_observations_with_cloud: bool,
}

/// What a scheduler sends to the session.
#[derive(Debug, Clone, PartialEq)]
pub enum SchedulerRequest {
    Proactive(ProactiveRequest),
    /// The plugin's state changed (e.g. the character's mood); the session reports it as a
    /// `plugin_state` event.
    State(PluginState),
}

/// Everything a running scheduler gets from the session.
#[derive(Debug)]
pub struct SchedulerContext {
    /// The session's events, in order: state changes, sentences (with their actions), turn starts/ends,
    /// observations, mode changes, proactive/skipped answers. Streaming deltas and audio envelopes are
    /// left out. Closed when the session stops.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// Requests to the session.
    pub requests: mpsc::UnboundedSender<SchedulerRequest>,
    /// The character's data directory (already includes the agent id), for persisted state.
    pub data_dir: PathBuf,
    pub agent_id: String,
    /// Fires on profile switch and shutdown: return promptly.
    pub cancel: CancellationToken,
}

/// A scheduler plugin.
pub trait Scheduler: Send + Sync {
    fn run(self: Arc<Self>, ctx: SchedulerContext) -> BoxFuture<'static, ()>;
}

/// The events a scheduler is shown (see [`SchedulerContext::events`]).
pub fn scheduler_sees(event: &Event) -> bool {
    !matches!(
        event,
        Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::AudioStarted { .. }
            | Event::AudioFinished { .. }
            | Event::LatencyReport { .. }
            | Event::ToolCall { .. }
    )
}

impl std::fmt::Debug for dyn Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scheduler")
    }
}
