//! Turns a profile's enabled plugins into tools, hooks, sensors and schedulers. A broken plugin is reported and skipped: the
//! character still starts, without it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::hooks::Hook;
use crate::llm::LlmClient;
use crate::plugins::builtin::{PluginError, PluginParts, instantiate_builtin};
use crate::plugins::mcp::connect_mcp;
use crate::plugins::scheduler::Scheduler;
use crate::plugins::sensor::Sensor;
use crate::tools::ToolRegistry;
use tomo_config::manifest::{PluginManifest, ToolLimits, discover_plugins, effective_config};
use tomo_config::profile::Profile;

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

/// Builds a plugin that lives outside tomo-core (memory, screen watcher, ...). The program registers its
/// factories in the session [`crate::session::Environment`]; a manifest whose id matches uses the factory.
pub trait PluginFactory: Send + Sync {
    fn id(&self) -> &str;
    fn instantiate<'a>(
        &'a self,
        config: &'a toml::Table,
        limits: &'a ToolLimits,
        ctx: &'a FactoryContext,
    ) -> BoxFuture<'a, Result<PluginParts, PluginError>>;
}

impl std::fmt::Debug for dyn PluginFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PluginFactory({})", self.id())
    }
}

/// A plugin that could not be loaded, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginProblem {
    pub plugin: String,
    pub message: String,
}

#[derive(Debug, Default)]
pub struct LoadedPlugins {
    pub tools: ToolRegistry,
    pub hooks: Vec<Arc<dyn Hook>>,
    /// (plugin id, sensor)
    pub sensors: Vec<(String, Arc<dyn Sensor>)>,
    /// (plugin id, scheduler)
    pub schedulers: Vec<(String, Arc<dyn Scheduler>)>,
    pub problems: Vec<PluginProblem>,
}

impl std::fmt::Debug for dyn Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hook({})", self.name())
    }
}

pub async fn load_plugins(
    profile: &Profile,
    plugins_dir: &Path,
    factories: &[Arc<dyn PluginFactory>],
    ctx: &FactoryContext,
) -> LoadedPlugins {
    let enabled = &profile.plugins.enabled;
    let (manifests, diagnostics) = discover_plugins(plugins_dir);
    let mut loaded = LoadedPlugins::default();
    // All problems of one broken manifest become one report, so the user sees them together.
    let mut broken: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for diagnostic in diagnostics {
        let folder = diagnostic
            .file
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if enabled.contains(&folder) {
            broken
                .entry(folder)
                .or_default()
                .push(diagnostic.to_string());
        }
    }
    for (plugin, messages) in broken {
        loaded.problems.push(PluginProblem {
            plugin,
            message: messages.join("\n"),
        });
    }
    for id in enabled {
        if loaded.problems.iter().any(|p| &p.plugin == id) {
            continue;
        }
        let Some(manifest) = manifests.iter().find(|m| &m.id == id) else {
            loaded.problems.push(PluginProblem {
                plugin: id.clone(),
                message: format!("no plugins/{id}/plugin.toml in {}", plugins_dir.display()),
            });
            continue;
        };
        if let Err(message) = load_one(manifest, profile, factories, ctx, &mut loaded).await {
            loaded.problems.push(PluginProblem {
                plugin: id.clone(),
                message,
            });
        }
    }
    loaded
}

async fn load_one(
    manifest: &PluginManifest,
    profile: &Profile,
    factories: &[Arc<dyn PluginFactory>],
    ctx: &FactoryContext,
    loaded: &mut LoadedPlugins,
) -> Result<(), String> {
    let id = &manifest.id;
    let (config, warnings) = effective_config(manifest, profile.plugins.overrides.get(id));
    for warning in warnings {
        tracing::warn!(%warning, "plugin configuration");
    }
    let parts = if let Some(server) = &manifest.mcp {
        let tools = connect_mcp(id, server, &manifest.tool_limits)
            .await
            .map_err(|e| e.to_string())?;
        PluginParts {
            tools,
            ..PluginParts::default()
        }
    } else if let Some(factory) = factories.iter().find(|f| f.id() == id) {
        factory
            .instantiate(&config, &manifest.tool_limits, ctx)
            .await
            .map_err(|e| e.to_string())?
    } else {
        match instantiate_builtin(id, &config, &manifest.tool_limits) {
            Some(Ok(parts)) => parts,
            Some(Err(error)) => return Err(error.to_string()),
            None => {
                return Err(format!(
                    "`{id}` ({:?}) is neither a built-in plugin nor declares an [mcp] server, and the \
                     program registered no factory for it",
                    manifest.kind
                ));
            }
        }
    };
    let PluginParts {
        tools,
        hooks,
        sensors,
        schedulers,
    } = parts;
    for tool in tools {
        loaded.tools.register(tool).map_err(|e| e.to_string())?;
    }
    loaded.hooks.extend(hooks);
    loaded
        .sensors
        .extend(sensors.into_iter().map(|s| (id.clone(), s)));
    loaded
        .schedulers
        .extend(schedulers.into_iter().map(|s| (id.clone(), s)));
    Ok(())
}
