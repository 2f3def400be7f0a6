//! The plugins that ship with Tomo, each registered as a [`PluginFactory`] by the program (the core
//! knows none of them by name): `time`, `web_fetch`, `diary`, `mood_chat`, and MCP tool servers declared
//! in a manifest's `[mcp]` section.

mod diary;
mod mcp;
pub mod mood_chat;
mod time;
mod web_fetch;

use std::sync::Arc;

use futures::future::BoxFuture;
use tomo_config::manifest::{PluginManifest, ToolLimits};
use tomo_plugin_api::scheduler::SystemClock;
use tomo_plugin_api::{FactoryContext, PluginError, PluginFactory, PluginParts};

pub use diary::{DiaryConfig, DiaryEntry};
pub use mcp::{McpFactory, connect_mcp};
pub use mood_chat::MoodChatFactory;
pub use time::TimeConfig;
pub use web_fetch::WebFetchConfig;

/// Ids of the plugins in this crate (besides MCP servers, which have the id of their manifest).
pub const BUILTIN_IDS: &[&str] = &["time", "web_fetch", "diary", "mood_chat"];

/// Every plugin in this crate, the MCP factory last.
pub fn builtin_factories() -> Vec<Arc<dyn PluginFactory>> {
    vec![
        Arc::new(Builtin {
            id: "time",
            build: time::instantiate,
        }),
        Arc::new(Builtin {
            id: "web_fetch",
            build: web_fetch::instantiate,
        }),
        Arc::new(Builtin {
            id: "diary",
            build: diary::instantiate,
        }),
        Arc::new(MoodChatFactory {
            clock: Arc::new(SystemClock),
        }),
        Arc::new(McpFactory),
    ]
}

/// A built-in that needs no character context (time, web_fetch, diary, mood_chat), built from its config
/// alone — for tools outside a session (benchmarks, engine tests). `None`: not such a built-in.
pub fn instantiate_builtin(
    id: &str,
    config: &toml::Table,
    limits: &ToolLimits,
) -> Option<Result<PluginParts, PluginError>> {
    Some(match id {
        "time" => time::instantiate(config, limits),
        "web_fetch" => web_fetch::instantiate(config, limits),
        "diary" => diary::instantiate(config, limits),
        "mood_chat" => mood_chat::instantiate(config, Arc::new(SystemClock)),
        _ => return None,
    })
}

/// A plugin built from its config and tool limits alone.
struct Builtin {
    id: &'static str,
    build: fn(&toml::Table, &ToolLimits) -> Result<PluginParts, PluginError>,
}

impl PluginFactory for Builtin {
    fn id(&self) -> &str {
        self.id
    }

    fn instantiate<'a>(
        &'a self,
        manifest: &'a PluginManifest,
        config: &'a toml::Table,
        _ctx: &'a FactoryContext,
    ) -> BoxFuture<'a, Result<PluginParts, PluginError>> {
        let parts = (self.build)(config, &manifest.tool_limits);
        Box::pin(async move { parts })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::path::Path;
    use tomo_config::manifest::discover_plugins;

    fn context() -> FactoryContext {
        FactoryContext {
            agent_id: "t".into(),
            character_name: "T".into(),
            data_dir: std::env::temp_dir().join("tomo-plugins-test"),
            llm: tomo_openai::connect(tomo_llm::LlmEndpoint {
                base_url: "http://127.0.0.1:9/v1".into(),
                model: "m".into(),
                api_key: None,
                temperature: None,
                max_tokens: None,
                idle_timeout: std::time::Duration::from_secs(1),
            })
            .unwrap(),
        }
    }

    /// The shipped manifests' defaults are the typed configs' defaults (one source of truth for both),
    /// and every built-in provides something.
    #[tokio::test]
    async fn every_builtin_instantiates_from_its_shipped_manifest() {
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins");
        let (manifests, diagnostics) = discover_plugins(&shipped);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let factories = builtin_factories();
        for id in BUILTIN_IDS {
            let manifest = manifests.iter().find(|m| m.id == *id).expect("shipped");
            let factory = factories
                .iter()
                .find(|f| f.id() == *id)
                .expect("registered");
            let parts = factory
                .instantiate(manifest, &manifest.config, &context())
                .await
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(
                !parts.tools.is_empty() || !parts.schedulers.is_empty(),
                "{id} provides something"
            );
        }
    }
}
