//! Plugin factories: how a plugin that lives outside the core (built-ins, memory, the screen watcher,
//! MCP servers) is built for a character. The program registers its factories in the session's
//! environment; the host matches each enabled manifest to one.

use std::path::PathBuf;

use futures::future::BoxFuture;
use tomo_config::manifest::PluginManifest;
use tomo_llm::LlmClient;

use crate::parts::{PluginError, PluginParts};

/// What a plugin factory knows about the character it builds a plugin for.
#[derive(Debug, Clone)]
pub struct FactoryContext {
    pub agent_id: String,
    pub character_name: String,
    /// Per-character data directory (already includes the agent id).
    pub data_dir: PathBuf,
    /// The character's LLM, for plugins that need one (e.g. memory's fact extraction).
    pub llm: LlmClient,
}

/// Builds a plugin for a character. Each factory serves the manifests with its [`PluginFactory::id`]
/// (the built-ins, memory, the screen watcher), or — the MCP factory — every manifest that declares an
/// `[mcp]` server. When two factories serve the same id, the first registered wins (a test or a program
/// can replace a built-in that way). A manifest with `[mcp]` never replaces a plugin a factory serves by
/// id: a downloaded `plugins/time/plugin.toml` must not turn the built-in `time` into a command.
pub trait PluginFactory: Send + Sync {
    fn id(&self) -> &str;

    /// Serves manifests that declare an `[mcp]` server, whatever their id.
    fn serves_mcp(&self) -> bool {
        false
    }

    /// `config` is the effective config (manifest `[config]` merged with the profile's overrides).
    fn instantiate<'a>(
        &'a self,
        manifest: &'a PluginManifest,
        config: &'a toml::Table,
        ctx: &'a FactoryContext,
    ) -> BoxFuture<'a, Result<PluginParts, PluginError>>;
}

impl std::fmt::Debug for dyn PluginFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PluginFactory({})", self.id())
    }
}
