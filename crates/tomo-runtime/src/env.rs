//! The session environment every front end sets up the same way: endpoint overrides, where plugins and
//! data live, and the plugin factories of other crates (memory, the screen watcher).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tomo_config::profile::{LlmEngine, Profile};
use tomo_core::session::{Environment, LlmOverrides, default_data_root};
use tomo_llm::LlmConnector;
use tomo_memory::MemoryPluginFactory;
use tomo_models::ModelStore;
use tomo_plugin_api::PluginFactory;
use tomo_vision::ScreenWatchFactory;

use crate::paths::plugins_dir_for;

/// What a front end may override; `None` keeps the profile's (or the platform's) default.
#[derive(Debug, Clone, Default)]
pub struct EnvOptions {
    /// Plugin manifests folder (default: `plugins/` next to the profile's folder, else a development
    /// checkout's own; never the working directory's).
    pub plugins_dir: Option<PathBuf>,
    /// Where characters keep history, diaries and memories (default: the platform data dir).
    pub data_dir: Option<PathBuf>,
    pub llm_base_url: Option<String>,
    pub llm_model: Option<String>,
}

/// The session environment, plus handles a front end needs after the session ends.
pub struct Prepared {
    pub env: Environment,
    pub memory: Arc<MemoryPluginFactory>,
}

impl Prepared {
    /// Facts of the last turn are learned in the background; give that a moment before exiting.
    pub async fn settle(&self) {
        let _ = tokio::time::timeout(Duration::from_secs(30), self.memory.wait_idle()).await;
    }
}

/// The environment for `profile` (loaded from `profile_path`, which locates its plugins), with endpoints
/// only (no embedded brain: [`environment_with`] adds one).
pub fn environment(profile_path: &Path, profile: &Profile, options: &EnvOptions) -> Prepared {
    let connector: Arc<dyn LlmConnector> = Arc::new(tomo_openai::OpenAiConnector);
    environment_with(profile_path, profile, options, connector)
}

/// [`environment`] with the program's LLM connector (the builder's also runs the embedded brain).
pub fn environment_with(
    profile_path: &Path,
    profile: &Profile,
    options: &EnvOptions,
    llm_connector: Arc<dyn LlmConnector>,
) -> Prepared {
    let memory = Arc::new(MemoryPluginFactory::new());
    let mut factories: Vec<Arc<dyn PluginFactory>> = vec![
        memory.clone(),
        // The game companion's screen watcher reads the PP-OCR models from the model store.
        Arc::new(ScreenWatchFactory {
            models_root: ModelStore::from_env()
                .map(|store| store.root)
                .unwrap_or_default(),
        }),
    ];
    // time, web_fetch, diary, mood_chat, and MCP servers.
    factories.extend(tomo_plugins::builtin_factories());
    let env = Environment {
        plugins_dir: plugins_dir_for(profile_path, options.plugins_dir.as_deref()),
        data_root: options.data_dir.clone().unwrap_or_else(default_data_root),
        llm: LlmOverrides {
            base_url: options.llm_base_url.clone(),
            model: options.llm_model.clone(),
            // Keys come from the environment only: a flag would end up in shell history and `ps`.
            api_key: std::env::var("TOMO_LLM_API_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
            // The key is for the endpoint Tomo starts with; `set_llm` to another host sends it nowhere.
            // Starting on the embedded brain, it is for no endpoint until a `set_llm` names its variable.
            api_key_origin: options
                .llm_base_url
                .as_deref()
                .or((profile.llm.engine == LlmEngine::OpenAi)
                    .then_some(profile.llm.base_url.as_str()))
                .and_then(tomo_config::keys::origin),
            engine: None,
        },
        llm_connector,
        hook_timeout: Duration::from_secs(5),
        extra_hooks: Vec::new(),
        plugin_factories: factories,
    };
    Prepared { env, memory }
}
