//! What an instantiated plugin contributes, why it could not start, and the helpers every plugin uses
//! to read its config: each turns its effective config table (manifest `[config]` merged with the
//! profile's overrides) into a typed struct with `deny_unknown_fields`, so a typo in a profile is an
//! error naming the field rather than a silently ignored setting.

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use tomo_config::manifest::ToolLimits;
use tomo_llm::tools::{Tool, ToolSpec};

use crate::hooks::Hook;
use crate::scheduler::Scheduler;
use crate::sensor::Sensor;
use crate::tags::TagSpec;

/// What an instantiated plugin contributes to a session.
#[derive(Default, Clone)]
pub struct PluginParts {
    pub tools: Vec<Arc<dyn Tool>>,
    pub hooks: Vec<Arc<dyn Hook>>,
    /// Run from the character's start to its end; addressed by the plugin's id (`set_sensor`).
    pub sensors: Vec<Arc<dyn Sensor>>,
    pub schedulers: Vec<Arc<dyn Scheduler>>,
    /// `[key:value]` tags this plugin reads from the model's text (never shown or spoken).
    pub tags: Vec<TagSpec>,
}

impl std::fmt::Debug for PluginParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.spec().name.as_str()).collect();
        let hooks: Vec<&str> = self.hooks.iter().map(|h| h.name()).collect();
        f.debug_struct("PluginParts")
            .field("tools", &tools)
            .field("hooks", &hooks)
            .field("sensors", &self.sensors.len())
            .field("schedulers", &self.schedulers.len())
            .field("tags", &self.tags)
            .finish()
    }
}

/// Why a plugin could not be set up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PluginError {
    /// A config value is missing, unknown, of the wrong type or out of range.
    /// `field` is the key path inside the plugin's config (e.g. `inject_recent`).
    #[error("plugin `{plugin}`: config `{plugin}.{field}`: {message}")]
    Config {
        plugin: String,
        field: String,
        message: String,
    },
    /// The plugin could not start (e.g. its MCP server did not run or did not answer).
    #[error("plugin `{plugin}` failed to start: {message}")]
    Start { plugin: String, message: String },
}

impl PluginError {
    pub fn config(plugin: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Config {
            plugin: plugin.to_owned(),
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn start(plugin: &str, message: impl Into<String>) -> Self {
        Self::Start {
            plugin: plugin.to_owned(),
            message: message.into(),
        }
    }
}

/// Deserializes a plugin's config table into its typed config, naming the offending field on error.
pub fn parse_config<T: DeserializeOwned>(
    plugin: &str,
    config: &toml::Table,
) -> Result<T, PluginError> {
    let value = toml::Value::Table(config.clone());
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string().trim().to_owned();
        // Unknown keys are reported by serde at the level of the enclosing table, so the path is empty
        // there; the key itself is quoted in serde's standard message.
        let field = if path.is_empty() || path == "." {
            quoted_field(&message).unwrap_or_else(|| "(config)".to_owned())
        } else {
            path
        };
        PluginError::config(plugin, field, message)
    })
}

/// Extracts `name` from serde's "unknown field `name`, expected ..." / "missing field `name`" messages.
fn quoted_field(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_owned())
}

/// Applies the manifest's `[tool]` limits to a spec.
pub fn limited_spec(
    plugin: &str,
    spec: ToolSpec,
    limits: &ToolLimits,
) -> Result<ToolSpec, PluginError> {
    let timeout = positive_secs(plugin, "tool.timeout_secs", limits.timeout_secs)?;
    Ok(spec
        .with_timeout(timeout)
        .with_retries(limits.retries)
        .with_max_output_bytes(limits.max_output_bytes.max(1)))
}

/// A strictly positive, finite number of seconds as a `Duration`.
pub fn positive_secs(plugin: &str, field: &str, secs: f64) -> Result<Duration, PluginError> {
    if !(secs.is_finite() && secs > 0.0) {
        return Err(PluginError::config(
            plugin,
            field,
            format!("must be a positive number of seconds, got {secs}"),
        ));
    }
    Duration::try_from_secs_f64(secs)
        .map_err(|err| PluginError::config(plugin, field, err.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        #[serde(default)]
        count: u32,
    }

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn config_parses_and_defaults() {
        assert_eq!(
            parse_config::<Sample>("p", &table("count = 4"))
                .unwrap()
                .count,
            4
        );
        assert_eq!(
            parse_config::<Sample>("p", &toml::Table::new())
                .unwrap()
                .count,
            0
        );
    }

    #[test]
    fn config_wrong_type_names_field() {
        let err = parse_config::<Sample>("p", &table("count = \"many\"")).unwrap_err();
        match &err {
            PluginError::Config { plugin, field, .. } => {
                assert_eq!(plugin, "p");
                assert_eq!(field, "count");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(err.to_string().contains("p.count"), "{err}");
    }

    #[test]
    fn config_unknown_key_names_field() {
        let err = parse_config::<Sample>("p", &table("cuont = 3")).unwrap_err();
        assert!(
            matches!(&err, PluginError::Config { field, .. } if field == "cuont"),
            "{err:?}"
        );
    }

    #[test]
    fn limits_become_spec_timeout_and_retries() {
        let limits = ToolLimits {
            timeout_secs: 2.5,
            retries: 3,
            ..ToolLimits::default()
        };
        let spec =
            limited_spec("p", ToolSpec::new("t", "d", serde_json::json!({})), &limits).unwrap();
        assert_eq!(spec.timeout, Duration::from_millis(2500));
        assert_eq!(spec.retries, 3);

        let bad = ToolLimits {
            timeout_secs: -1.0,
            retries: 0,
            ..ToolLimits::default()
        };
        let err =
            limited_spec("p", ToolSpec::new("t", "d", serde_json::json!({})), &bad).unwrap_err();
        assert!(matches!(err, PluginError::Config { field, .. } if field == "tool.timeout_secs"));
    }
}
