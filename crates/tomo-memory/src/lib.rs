//! Long-term memory for Tomo characters: the `memory` hook plugin and its store.
//!
//! - [`MemoryStore`]: the embedded SQLite database (FTS5 full-text search, optional vectors), one file
//!   per installation, every fact tagged with the character's `agent_id`.
//! - [`MemoryPluginFactory`]: registered in the session `Environment`, it builds the plugin for
//!   `plugins/memory/plugin.toml` (recall before a turn, learning after it, `sqlite` or `http` backend).
//!
//! Context compression (the running summary of old turns) is conversation state, not memory, and lives
//! in tomo-core (`session/compress.rs`).

mod config;
pub mod embed;
pub mod extract;
mod hook;
mod learned;
pub mod remote;
pub mod store;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tomo_config::manifest::PluginManifest;
use tomo_plugin_api::{FactoryContext, PluginFactory};
use tomo_plugin_api::{PluginError, PluginParts};

pub use config::{Backend, MemoryConfig};
pub use hook::{HEADING, Pending};
pub use store::{DATABASE_FILE, Fact, MemoryStore, NewFact, StoreError, database_path};

/// The plugin id (`plugins/memory/`).
pub const PLUGIN_ID: &str = "memory";

/// Builds the `memory` plugin. One factory serves every character of a program; databases are opened
/// once per path and shared.
#[derive(Debug, Default)]
pub struct MemoryPluginFactory {
    pending: Arc<Pending>,
    stores: Mutex<HashMap<PathBuf, MemoryStore>>,
}

impl MemoryPluginFactory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits until every background learning task started by this factory's plugins has finished.
    pub async fn wait_idle(&self) {
        self.pending.idle().await;
    }

    fn store(&self, path: &Path) -> Result<MemoryStore, StoreError> {
        let mut stores = self
            .stores
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(store) = stores.get(path) {
            return Ok(store.clone());
        }
        let store = MemoryStore::open(path)?;
        stores.insert(path.to_path_buf(), store.clone());
        Ok(store)
    }

    fn build(
        &self,
        config: &toml::Table,
        ctx: &FactoryContext,
    ) -> Result<PluginParts, PluginError> {
        let config = MemoryConfig::from_table(config)?;
        let start = |message: String| PluginError::Start {
            plugin: PLUGIN_ID.to_owned(),
            message,
        };
        let backend = match config.backend {
            Backend::Sqlite => {
                let path = if config.database.is_empty() {
                    database_path(&data_root_of(&ctx.data_dir))
                } else {
                    PathBuf::from(&config.database)
                };
                let store = self.store(&path).map_err(|e| start(e.to_string()))?;
                let embedder = if config.embeddings_model.is_empty() {
                    None
                } else {
                    let key = Some(config.embeddings_api_key_env.as_str())
                        .filter(|name| !name.is_empty())
                        .and_then(|name| std::env::var(name).ok())
                        .filter(|key| !key.is_empty());
                    Some(
                        embed::Embedder::new(
                            &config.embeddings_base_url,
                            &config.embeddings_model,
                            key,
                            config.timeout(),
                        )
                        .map_err(|e| start(e.to_string()))?,
                    )
                };
                hook::Backend::Local {
                    store,
                    embedder,
                    // Similarities are f32 like the vectors; the config is f64 because TOML floats are.
                    min_similarity: config.min_similarity as f32,
                    llm: ctx.llm.clone(),
                }
            }
            Backend::Http => {
                let agent_id = if config.agent_id.is_empty() {
                    ctx.agent_id.as_str()
                } else {
                    config.agent_id.as_str()
                };
                let client = remote::RemoteMemoryClient::new(
                    &config.base_url,
                    &config.user_id,
                    agent_id,
                    config.timeout(),
                )
                .map_err(|e| start(e.to_string()))?;
                hook::Backend::Remote {
                    client,
                    down: Arc::default(),
                }
            }
        };
        let hook = hook::MemoryHook {
            backend,
            limit: config.limit,
            extract: config.extract,
            skip_proactive: config.skip_proactive,
            pending: Arc::clone(&self.pending),
            learning: Arc::default(),
            recent: Arc::default(),
        };
        Ok(PluginParts {
            tools: Vec::new(),
            hooks: vec![Arc::new(hook)],
            ..PluginParts::default()
        })
    }
}

impl PluginFactory for MemoryPluginFactory {
    fn id(&self) -> &str {
        PLUGIN_ID
    }

    fn instantiate<'a>(
        &'a self,
        _manifest: &'a PluginManifest,
        config: &'a toml::Table,
        ctx: &'a FactoryContext,
    ) -> BoxFuture<'a, Result<PluginParts, PluginError>> {
        Box::pin(async move { self.build(config, ctx) })
    }
}

/// `<data_root>` from a character's data dir `<data_root>/characters/<agent_id>`.
pub fn data_root_of(character_dir: &Path) -> PathBuf {
    character_dir
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| character_dir.to_path_buf(), Path::to_path_buf)
}
