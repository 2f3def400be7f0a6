//! The `mood_chat` scheduler task. It counts quiet time with `tokio::time` (any state change, turn or
//! proactive answer restarts the count) and asks for a proactive turn when the quiet time reaches the
//! interval the current mood calls for.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::mood::Mood;
use super::{MOOD_TAG, MoodChatConfig, parse_mood_tag};
use tomo_plugin_api::scheduler::{
    Clock, ProactiveRequest, Scheduler, SchedulerContext, SchedulerRequest,
};
use tomo_protocol::{Action, Event, PluginState};

/// Longest piece of observed text quoted in a reason.
const REASON_SNIPPET_CHARS: usize = 80;

pub struct MoodChat {
    config: MoodChatConfig,
    clock: Arc<dyn Clock>,
}

impl MoodChat {
    pub fn new(config: MoodChatConfig, clock: Arc<dyn Clock>) -> Self {
        Self { config, clock }
    }
}

impl Scheduler for MoodChat {
    fn run(self: Arc<Self>, ctx: SchedulerContext) -> BoxFuture<'static, ()> {
        Box::pin(async move { self.run_loop(ctx).await })
    }
}

struct State {
    mood: Mood,
    /// When the session last did anything (state change, turn, proactive answer).
    quiet_since: Instant,
    /// Where new text appeared since the last proactive turn (the window). The text itself is not kept:
    /// the reason goes into the prompt as is, and screen text may reach a remote LLM only through the
    /// session's observation gate.
    screen_changed: Option<String>,
}

impl MoodChat {
    async fn run_loop(&self, mut ctx: SchedulerContext) {
        let path = ctx.data_dir.join("mood.json");
        let now = self.clock.now_ms();
        let mut mood = Mood::load(&path, self.config.initial, now).unwrap_or_else(|error| {
            tracing::warn!(%error, "starting from the initial mood");
            Mood {
                score: self.config.initial,
                updated_ms: now,
            }
        });
        mood.decay(now, self.config.baseline, self.config.half_life_s);
        let mut state = State {
            mood,
            quiet_since: Instant::now(),
            screen_changed: None,
        };
        self.save(&path, &state.mood);
        report(&ctx, &state.mood, "loaded");
        loop {
            let wait = self.config.interval(state.mood.score).map(|wait| {
                if state.screen_changed.is_some() {
                    wait.mul_f64(self.config.observation_factor)
                } else {
                    wait
                }
            });
            let deadline = wait.map(|wait| state.quiet_since + wait);
            tokio::select! {
                () = ctx.cancel.cancelled() => break,
                event = ctx.events.recv() => match event {
                    Some(event) => self.observe(&ctx, &path, &mut state, &event),
                    None => break,
                },
                () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    self.speak_up(&ctx, &mut state);
                }
            }
        }
        state.mood.decay(
            self.clock.now_ms(),
            self.config.baseline,
            self.config.half_life_s,
        );
        self.save(&path, &state.mood);
    }

    fn speak_up(&self, ctx: &SchedulerContext, state: &mut State) {
        state.mood.decay(
            self.clock.now_ms(),
            self.config.baseline,
            self.config.half_life_s,
        );
        let score = state.mood.score.round();
        let reason = match &state.screen_changed {
            Some(window) => format!("new text on {}, mood {score}", snippet(window)),
            None => format!(
                "idle for {} s, mood {score}",
                state.quiet_since.elapsed().as_secs()
            ),
        };
        // Whatever the answer (a turn, or skipped because the user is busy), count quiet time afresh:
        // asking again at once would only be skipped again.
        state.quiet_since = Instant::now();
        let request = SchedulerRequest::Proactive(ProactiveRequest {
            reason,
            share_observations_with_cloud: self.config.share_observations_with_cloud,
        });
        let _ = ctx.requests.send(request);
    }

    fn observe(&self, ctx: &SchedulerContext, path: &Path, state: &mut State, event: &Event) {
        match event {
            Event::Sentence { sentence, .. } => {
                let mut changed = Vec::new();
                for action in &sentence.actions {
                    match action {
                        Action::Tag { key, value } if key == MOOD_TAG.key => {
                            if let Some((value, relative)) = parse_mood_tag(value) {
                                changed.push((
                                    f64::from(value),
                                    relative,
                                    format!("tag {}", tag(value, relative)),
                                ));
                            }
                        }
                        Action::Tag { .. } => {}
                        Action::Emotion { name } => {
                            if let Some(delta) = self.config.emotion_deltas.get(name) {
                                changed.push((*delta, true, format!("emotion {name}")));
                            }
                        }
                    }
                }
                if changed.is_empty() {
                    return;
                }
                state.mood.decay(
                    self.clock.now_ms(),
                    self.config.baseline,
                    self.config.half_life_s,
                );
                let reasons: Vec<String> = changed
                    .into_iter()
                    .map(|(value, relative, why)| {
                        state.mood.apply(value, relative);
                        why
                    })
                    .collect();
                self.save(path, &state.mood);
                report(ctx, &state.mood, &reasons.join(", "));
            }
            Event::Observation(observation) => {
                state.screen_changed = Some(observation.window.clone());
            }
            Event::Proactive { .. } => {
                state.screen_changed = None;
                state.quiet_since = Instant::now();
            }
            Event::StateChanged { .. }
            | Event::TurnStarted { .. }
            | Event::PlaybackDrained { .. } => {
                state.quiet_since = Instant::now();
            }
            _ => {}
        }
    }

    fn save(&self, path: &Path, mood: &Mood) {
        if let Err(error) = mood.save(path) {
            tracing::warn!(%error, "mood not saved");
        }
    }
}

fn report(ctx: &SchedulerContext, mood: &Mood, reason: &str) {
    let _ = ctx.requests.send(SchedulerRequest::State(PluginState {
        label: "mood".to_owned(),
        value: Some(mood.score as f32),
        reason: reason.to_owned(),
    }));
}

fn tag(value: i32, relative: bool) -> String {
    if relative {
        format!("[mood:{value:+}]")
    } else {
        format!("[mood:{value}]")
    }
}

fn snippet(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= REASON_SNIPPET_CHARS {
        return format!("\"{text}\"");
    }
    let cut: String = text.chars().take(REASON_SNIPPET_CHARS).collect();
    format!("\"{cut}…\"")
}
