//! Turns a profile's enabled plugins into tools, hooks, sensors, schedulers and tags, through the
//! factories the program registered (the core knows no plugin by name). A broken plugin is reported and
//! skipped: the character still starts, without it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tomo_config::manifest::{PluginKind, PluginManifest, discover_plugins, effective_config};
use tomo_config::profile::Profile;
use tomo_llm::tools::{RegistryError, ToolRegistry};
use tomo_plugin_api::hooks::Hook;
use tomo_plugin_api::scheduler::Scheduler;
use tomo_plugin_api::sensor::Sensor;
use tomo_plugin_api::trust::{McpCommand, TrustDecision, TrustError, TrustStore};
use tomo_plugin_api::{FactoryContext, PluginError, PluginFactory, PluginParts, TagSpec};

use crate::confirmed_tool::ConfirmedTool;
use crate::session::Approvals;

/// What stands between a manifest and a running plugin: the user's answers about commands, and who to
/// ask before a `confirm = true` tool runs (`None`: such calls are refused).
#[derive(Debug, Clone)]
pub struct PluginGate {
    pub trust: TrustStore,
    pub approvals: Option<Approvals>,
}

/// Why one enabled plugin did not load; it becomes a [`PluginProblem`] and the character starts without it.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error(
        "`{id}` is a built-in plugin; the [mcp] server in {} cannot replace it (rename the plugin)",
        manifest_file.display()
    )]
    ShadowsBuiltin { id: String, manifest_file: PathBuf },
    #[error("`{0}` declares an [mcp] server, and this program runs none")]
    NoMcpFactory(String),
    #[error(
        "`{id}` ({kind:?}) is neither a plugin this program provides nor declares an [mcp] server"
    )]
    Unknown { id: String, kind: PluginKind },
    #[error("you declined to run `{command}`; allow it with `tomo plugins trust {id}`")]
    Declined { id: String, command: String },
    #[error(transparent)]
    Trust(#[from] TrustError),
    #[error(transparent)]
    Plugin(#[from] PluginError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
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
    /// Tags the plugins read from the model's text.
    pub tags: Vec<TagSpec>,
    pub problems: Vec<PluginProblem>,
    /// Commands the user was never asked about: their plugins wait for an answer.
    pub pending: Vec<McpCommand>,
}

pub async fn load_plugins(
    profile: &Profile,
    plugins_dir: &Path,
    factories: &[Arc<dyn PluginFactory>],
    ctx: &FactoryContext,
    gate: &PluginGate,
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
        if let Err(error) = load_one(manifest, profile, factories, ctx, gate, &mut loaded).await {
            loaded.problems.push(PluginProblem {
                plugin: id.clone(),
                message: error.to_string(),
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
    gate: &PluginGate,
    loaded: &mut LoadedPlugins,
) -> Result<(), LoadError> {
    let id = &manifest.id;
    let (config, warnings) = effective_config(manifest, profile.plugins.overrides.get(id));
    for warning in warnings {
        tracing::warn!(%warning, "plugin configuration");
    }
    let factory = factory_for(manifest, factories)?;
    // A command runs only once the user allowed exactly it (see `tomo_plugin_api::trust`).
    if let Some(command) = McpCommand::of(manifest) {
        match gate.trust.decision(&command)? {
            Some(TrustDecision::Allowed) => {}
            Some(TrustDecision::Denied) => {
                return Err(LoadError::Declined {
                    id: id.clone(),
                    command: command.command_line(),
                });
            }
            None => {
                tracing::info!(plugin = %id, command = %command.command_line(), "waiting for the user to allow the command");
                loaded.pending.push(command);
                return Ok(());
            }
        }
    }
    let parts = factory.instantiate(manifest, &config, ctx).await?;
    let PluginParts {
        tools,
        hooks,
        sensors,
        schedulers,
        tags,
    } = parts;
    for tool in tools {
        let tool: Arc<dyn tomo_llm::tools::Tool> = if manifest.tool_limits.confirm {
            Arc::new(ConfirmedTool::wrap(tool, id, gate.approvals.clone()))
        } else {
            tool
        };
        loaded.tools.register(tool)?;
    }
    loaded.hooks.extend(hooks);
    loaded
        .sensors
        .extend(sensors.into_iter().map(|s| (id.clone(), s)));
    loaded
        .schedulers
        .extend(schedulers.into_iter().map(|s| (id.clone(), s)));
    loaded.tags.extend(tags);
    Ok(())
}

/// The factory that builds `manifest`'s plugin: the first one serving its id, or the MCP factory for an
/// `[mcp]` manifest — which may not take an id a factory serves (a `plugins/` folder next to a downloaded
/// profile must not turn a built-in into a command).
fn factory_for<'f>(
    manifest: &PluginManifest,
    factories: &'f [Arc<dyn PluginFactory>],
) -> Result<&'f Arc<dyn PluginFactory>, LoadError> {
    let id = &manifest.id;
    let by_id = factories
        .iter()
        .find(|f| !f.serves_mcp() && f.id() == id.as_str());
    if manifest.mcp.is_some() {
        if by_id.is_some() {
            return Err(LoadError::ShadowsBuiltin {
                id: id.clone(),
                manifest_file: manifest.source.clone(),
            });
        }
        return factories
            .iter()
            .find(|f| f.serves_mcp())
            .ok_or_else(|| LoadError::NoMcpFactory(id.clone()));
    }
    by_id.ok_or_else(|| LoadError::Unknown {
        id: id.clone(),
        kind: manifest.kind,
    })
}
