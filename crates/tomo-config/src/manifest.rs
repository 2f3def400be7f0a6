//! Plugin manifests: `plugins/<id>/plugin.toml`.
//!
//! ```toml
//! [plugin]
//! id = "web_fetch"
//! type = "tool"            # hook | tool | sensor | scheduler
//! description = "..."
//!
//! [tool]                   # optional, tool plugins only
//! timeout_secs = 15
//! retries = 1
//!
//! [mcp]                    # optional: the tools come from an MCP server over stdio
//! command = "my-mcp-server"
//! args = ["--stdio"]
//! env = { LOG = "warn" }   # set for the server (its environment starts cleared)
//! pass_env = ["GITHUB_TOKEN"]  # the user's variables it may see
//!
//! [config]                 # defaults; a profile's [plugins.<id>] table overrides them key by key
//! max_bytes = 200000
//! ```
//!
//! Loading reports problems as [`Diagnostic`](crate::diagnostic::Diagnostic)s with line and column.
//! Unknown keys in `[plugin]` and at the top level are warnings; `[tool]` and `[mcp]` reject unknown
//! keys (their types deny them), since a misspelt limit or command would change behaviour.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod load;
mod merge;
#[cfg(test)]
mod tests;

pub use load::{
    ManifestError, discover_plugins, load_manifest, parse_manifest, plugin_manifest_json_schema,
};
pub use merge::effective_config;
pub(crate) use merge::merge_config;

/// The four kinds of plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PluginKind {
    /// Lifecycle hooks (before/after turn, after playback).
    Hook,
    /// LLM-callable functions.
    Tool,
    /// Produces observations (e.g. the screen watcher).
    Sensor,
    /// Decides proactive turns (e.g. MoodChat).
    Scheduler,
}

/// Execution limits for every tool a plugin provides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolLimits {
    #[serde(default = "default_tool_timeout_secs")]
    pub timeout_secs: f64,
    #[serde(default)]
    pub retries: u32,
    /// The tools have side effects (they send, buy, delete, write): each call waits for the user's yes
    /// (in the UI, or on the terminal); no answer in time counts as no.
    #[serde(default)]
    pub confirm: bool,
    /// The longest result handed back to the model; the rest is cut off with a marker.
    #[serde(default = "default_max_output_bytes")]
    #[schemars(range(min = 1))]
    pub max_output_bytes: usize,
}

fn default_max_output_bytes() -> usize {
    32 * 1024
}

fn default_tool_timeout_secs() -> f64 {
    10.0
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            timeout_secs: default_tool_timeout_secs(),
            retries: 0,
            confirm: false,
            max_output_bytes: default_max_output_bytes(),
        }
    }
}

/// An external MCP server spoken to over its stdin/stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for the server. It starts from a cleared environment: only `PATH`, `HOME`,
    /// `TMPDIR`, the locale, these and `pass_env` reach it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of the user's own variables the server is given (e.g. `GITHUB_TOKEN`); nothing else of
    /// the user's environment (no API keys) reaches it.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Seconds to wait for the server to start and list its tools.
    #[serde(default = "default_mcp_startup_secs")]
    pub startup_timeout_secs: f64,
}

fn default_mcp_startup_secs() -> f64 {
    15.0
}

/// A parsed, validated plugin manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginManifest {
    pub id: String,
    pub kind: PluginKind,
    pub description: String,
    pub tool_limits: ToolLimits,
    pub mcp: Option<McpServerConfig>,
    /// Default configuration from the `[config]` table.
    pub config: toml::Table,
    /// The `plugin.toml` this came from.
    pub source: PathBuf,
}
