//! `mood_chat` (type scheduler): the character speaks up on its own, more often the better its mood.
//!
//! - A mood score 0-100 per character, persisted in `<data_dir>/mood.json` (`mood.rs`), drifts back to
//!   `baseline` with a half-life, and moves with the conversation: `[mood:+10]` / `[mood:70]` tags the model
//!   writes (the pipeline removes them from the text) and `emotion_deltas` for emotion tags.
//! - `cadence` maps the score to how long the session must be quiet before the character speaks up;
//!   below the lowest `min_score` it never does. A sensor observation since the last proactive turn
//!   shortens the wait by `observation_factor` (`scheduler.rs`).
//! - Whether the turn really starts is the session's decision (idle, quiet, unmuted, no do-not-disturb).
//!
//! Memory writes for proactive turns are the memory plugin's call (`skip_proactive`, on by default): hooks
//! see `TurnRecord { proactive: true }`.

mod mood;
mod scheduler;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;

use tomo_config::manifest::PluginManifest;
use tomo_plugin_api::scheduler::Clock;
use tomo_plugin_api::{FactoryContext, PluginFactory};
use tomo_plugin_api::{PluginError, PluginParts, TagSpec, parse_config, positive_secs};

pub use mood::{Mood, MoodError};
pub use scheduler::MoodChat;

const ID: &str = "mood_chat";

/// One step of the cadence table: at `min_score` or above, speak up after `interval_s` of quiet.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cadence {
    pub min_score: f64,
    pub interval_s: f64,
}

/// `[plugins.mood_chat]` (defaults documented in `plugins/mood_chat/plugin.toml`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoodChatConfig {
    /// Score of a character with no history, 0-100.
    #[serde(default = "default_baseline")]
    pub initial: f64,
    /// The score drifts back towards this, 0-100.
    #[serde(default = "default_baseline")]
    pub baseline: f64,
    /// Seconds for the distance to the baseline to halve (0 = no decay).
    #[serde(default = "default_half_life")]
    pub half_life_s: f64,
    #[serde(default = "default_cadence")]
    pub cadence: Vec<Cadence>,
    /// The wait is multiplied by this when a sensor observed something since the last proactive turn.
    #[serde(default = "default_observation_factor")]
    pub observation_factor: f64,
    /// Emotion tag name -> mood change when the character shows it.
    #[serde(default)]
    pub emotion_deltas: BTreeMap<String, f64>,
    /// Put screen observations into prompts even when the LLM is not on this machine.
    #[serde(default)]
    pub share_observations_with_cloud: bool,
}

fn default_baseline() -> f64 {
    60.0
}
fn default_half_life() -> f64 {
    3600.0
}
fn default_observation_factor() -> f64 {
    0.5
}
fn default_cadence() -> Vec<Cadence> {
    vec![
        Cadence {
            min_score: 80.0,
            interval_s: 120.0,
        },
        Cadence {
            min_score: 60.0,
            interval_s: 300.0,
        },
        Cadence {
            min_score: 40.0,
            interval_s: 900.0,
        },
    ]
}

impl Default for MoodChatConfig {
    fn default() -> Self {
        Self {
            initial: default_baseline(),
            baseline: default_baseline(),
            half_life_s: default_half_life(),
            cadence: default_cadence(),
            observation_factor: default_observation_factor(),
            emotion_deltas: BTreeMap::new(),
            share_observations_with_cloud: false,
        }
    }
}

impl MoodChatConfig {
    fn validate(mut self) -> Result<Self, PluginError> {
        for (field, value) in [("initial", self.initial), ("baseline", self.baseline)] {
            if !(0.0..=100.0).contains(&value) {
                return Err(PluginError::config(
                    ID,
                    field,
                    format!("must be 0-100, got {value}"),
                ));
            }
        }
        if !(self.half_life_s.is_finite() && self.half_life_s >= 0.0) {
            return Err(PluginError::config(
                ID,
                "half_life_s",
                format!("must be 0 or more seconds, got {}", self.half_life_s),
            ));
        }
        if !(self.observation_factor > 0.0 && self.observation_factor <= 1.0) {
            return Err(PluginError::config(
                ID,
                "observation_factor",
                format!("must be in (0, 1], got {}", self.observation_factor),
            ));
        }
        for (i, step) in self.cadence.iter().enumerate() {
            if !(0.0..=100.0).contains(&step.min_score) {
                return Err(PluginError::config(
                    ID,
                    format!("cadence[{i}].min_score"),
                    format!("must be 0-100, got {}", step.min_score),
                ));
            }
            positive_secs(ID, &format!("cadence[{i}].interval_s"), step.interval_s)?;
        }
        // Highest threshold first, so the first match is the right step.
        self.cadence
            .sort_by(|a, b| b.min_score.total_cmp(&a.min_score));
        Ok(self)
    }

    /// How long to stay quiet at `score` before speaking up; `None`: never.
    pub fn interval(&self, score: f64) -> Option<Duration> {
        self.cadence
            .iter()
            .find(|step| score >= step.min_score)
            .and_then(|step| Duration::try_from_secs_f64(step.interval_s).ok())
    }
}

pub(crate) fn instantiate(
    config: &toml::Table,
    clock: Arc<dyn Clock>,
) -> Result<PluginParts, PluginError> {
    let config = parse_config::<MoodChatConfig>(ID, config)?.validate()?;
    Ok(PluginParts {
        schedulers: vec![Arc::new(MoodChat::new(config, clock))],
        tags: vec![MOOD_TAG],
        ..PluginParts::default()
    })
}

/// `[mood:+10]`, `[mood: -5]` (relative) or `[mood:70]` (absolute, 0-100): the model reports how the
/// character's mood changed. The pipeline takes these out of the text (never shown or spoken).
pub const MOOD_TAG: TagSpec = TagSpec {
    key: "mood",
    accepts: |value| parse_mood_tag(value).is_some(),
};

/// A mood tag's value: (number, relative); `None` when it is not one (`170`, `up`).
pub fn parse_mood_tag(value: &str) -> Option<(i32, bool)> {
    let value = value.trim();
    let relative = value.starts_with(['+', '-']);
    let number: i32 = value.strip_prefix('+').unwrap_or(value).parse().ok()?;
    if !relative && !(0..=100).contains(&number) {
        return None;
    }
    Some((number.clamp(-100, 100), relative))
}

/// Builds `mood_chat` with a given wall clock (tests script it; the built-in uses the system clock).
/// Register it ahead of [`crate::builtin_factories`] to replace the built-in.
pub struct MoodChatFactory {
    pub clock: Arc<dyn Clock>,
}

impl PluginFactory for MoodChatFactory {
    fn id(&self) -> &str {
        ID
    }

    fn instantiate<'a>(
        &'a self,
        _manifest: &'a PluginManifest,
        config: &'a toml::Table,
        _ctx: &'a FactoryContext,
    ) -> BoxFuture<'a, Result<PluginParts, PluginError>> {
        let parts = instantiate(config, Arc::clone(&self.clock));
        Box::pin(async move { parts })
    }
}
