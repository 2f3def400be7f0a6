//! Settings of the `memory` plugin (`plugins/memory/plugin.toml` `[config]`, overridable per profile
//! in `[plugins.memory]`). TOML has no null, so "not set" is an empty string.

use serde::Deserialize;
use tomo_plugin_api::PluginError;

use crate::PLUGIN_ID;

/// Where memories live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The embedded SQLite database (`<data_root>/memory.sqlite`).
    Sqlite,
    /// An external memory service speaking the REST contract in `plugins/memory/README.md`.
    Http,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    pub backend: Backend,
    /// How many facts `on_before_turn` injects (0 disables recall).
    pub limit: usize,
    /// Extract and store facts after each turn.
    pub extract: bool,
    /// Do not learn from turns the character started on its own.
    pub skip_proactive: bool,
    /// SQLite file; empty means `<data_root>/memory.sqlite`.
    pub database: String,
    /// Embeddings model for vector search; empty disables vector search (full-text search only).
    pub embeddings_model: String,
    /// OpenAI-compatible base URL serving `/embeddings` (e.g. `http://127.0.0.1:11434/v1`).
    pub embeddings_base_url: String,
    /// Environment variable holding the embeddings API key, if the server needs one.
    pub embeddings_api_key_env: String,
    /// Vector matches below this cosine similarity are ignored (model-dependent: unrelated texts score
    /// around 0.1-0.3 with most open models, higher with some hosted ones).
    pub min_similarity: f64,
    /// `http` backend: the service's base URL.
    pub base_url: String,
    /// `http` backend: whose memories these are.
    pub user_id: String,
    /// `http` backend: the memory space; empty means the profile's `character.agent_id`.
    pub agent_id: String,
    /// Timeout of each request to the memory service or the embeddings endpoint.
    pub timeout_secs: f64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            backend: Backend::Sqlite,
            limit: 5,
            extract: true,
            skip_proactive: true,
            database: String::new(),
            embeddings_model: String::new(),
            embeddings_base_url: String::new(),
            embeddings_api_key_env: String::new(),
            min_similarity: 0.5,
            base_url: String::new(),
            user_id: "default".to_owned(),
            agent_id: String::new(),
            timeout_secs: 5.0,
        }
    }
}

/// A memory request that takes longer than an hour is not coming back.
const MAX_TIMEOUT_SECS: f64 = 3600.0;

fn config_error(field: &str, message: impl Into<String>) -> PluginError {
    PluginError::Config {
        plugin: PLUGIN_ID.to_owned(),
        field: field.to_owned(),
        message: message.into(),
    }
}

impl MemoryConfig {
    /// Parses and checks the effective config table, naming the offending field on error.
    pub fn from_table(table: &toml::Table) -> Result<Self, PluginError> {
        let config: Self =
            toml::Value::Table(table.clone())
                .try_into()
                .map_err(|e: toml::de::Error| {
                    let message = e.message().trim().to_owned();
                    let field = message.split('`').nth(1).unwrap_or("(config)").to_owned();
                    config_error(&field, message)
                })?;
        if !(config.timeout_secs.is_finite()
            && config.timeout_secs > 0.0
            && config.timeout_secs <= MAX_TIMEOUT_SECS)
        {
            return Err(config_error(
                "timeout_secs",
                format!("must be greater than 0 and at most {MAX_TIMEOUT_SECS} seconds"),
            ));
        }
        if config.backend == Backend::Http {
            if !config.base_url.starts_with("http://") && !config.base_url.starts_with("https://") {
                return Err(config_error(
                    "base_url",
                    "the http backend needs the service's base URL (http:// or https://)",
                ));
            }
            if config.user_id.trim().is_empty() {
                return Err(config_error("user_id", "must not be empty"));
            }
        }
        if config.embeddings_model.is_empty() != config.embeddings_base_url.is_empty() {
            return Err(config_error(
                "embeddings_base_url",
                "set both `embeddings_model` and `embeddings_base_url`, or neither",
            ));
        }
        Ok(config)
    }

    pub fn timeout(&self) -> std::time::Duration {
        // `from_table` bounds it; never a panicking conversion for a config built in code.
        std::time::Duration::try_from_secs_f64(self.timeout_secs.clamp(0.0, MAX_TIMEOUT_SECS))
            .unwrap_or(std::time::Duration::from_secs(5))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn defaults_and_errors_name_the_field() {
        assert_eq!(
            MemoryConfig::from_table(&toml::Table::new()).unwrap(),
            MemoryConfig::default()
        );
        let table: toml::Table = toml::from_str("limt = 3").unwrap();
        let Err(PluginError::Config { field, .. }) = MemoryConfig::from_table(&table) else {
            panic!("unknown key accepted");
        };
        assert_eq!(field, "limt");
        let table: toml::Table = toml::from_str("backend = \"http\"").unwrap();
        let Err(PluginError::Config { field, .. }) = MemoryConfig::from_table(&table) else {
            panic!("http without base_url accepted");
        };
        assert_eq!(field, "base_url");
        // Would overflow a `Duration` (a panic at the first memory request) if let through.
        let table: toml::Table = toml::from_str("timeout_secs = 1e20").unwrap();
        let Err(PluginError::Config { field, .. }) = MemoryConfig::from_table(&table) else {
            panic!("1e20 s accepted");
        };
        assert_eq!(field, "timeout_secs");
    }
}
