//! What every conversational command (`chat`, `talk`, `run`, `bench`) sets up the same way: the profile,
//! the endpoint overrides, where plugins and data live, and the plugin factories of other crates.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tomo_core::profile::{Profile, load_profile};
use tomo_core::session::{Environment, LlmOverrides, default_data_root};
use tomo_memory::MemoryPluginFactory;
use tomo_speech::models::ModelStore;
use tomo_vision::ScreenWatchFactory;

use crate::LlmFlags;
use crate::paths::plugins_dir_for;

#[derive(Debug, Args, Clone, Default)]
pub struct SessionFlags {
    /// Plugin manifests folder (default: `plugins/` next to the profile's folder, else ./plugins).
    #[arg(long, env = "TOMO_PLUGINS_DIR")]
    pub plugins_dir: Option<PathBuf>,
    /// Where characters keep history, diaries and memories (default: the platform data dir).
    #[arg(long, env = "TOMO_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
}

/// The session environment, plus handles the command may need after the session ends.
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

pub fn environment(profile_path: &Path, llm: &LlmFlags, flags: &SessionFlags) -> Prepared {
    let memory = Arc::new(MemoryPluginFactory::new());
    let env = Environment {
        plugins_dir: plugins_dir_for(profile_path, flags.plugins_dir.as_deref()),
        data_root: flags.data_dir.clone().unwrap_or_else(default_data_root),
        llm: LlmOverrides {
            base_url: llm.llm_base_url.clone(),
            model: llm.llm_model.clone(),
            // Keys come from the environment only: a flag would end up in shell history and `ps`.
            api_key: std::env::var("TOMO_LLM_API_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
        },
        hook_timeout: Duration::from_secs(5),
        extra_hooks: Vec::new(),
        plugin_factories: vec![
            memory.clone(),
            // The game companion's screen watcher reads the PP-OCR models from the model store.
            Arc::new(ScreenWatchFactory {
                models_root: ModelStore::from_env()
                    .map(|store| store.root)
                    .unwrap_or_default(),
            }),
        ],
    };
    Prepared { env, memory }
}

/// Loads a profile, printing warnings; on errors prints them (file:line:column) and returns `None`.
pub fn load_profile_or_report(path: &Path) -> Option<Profile> {
    match load_profile(path) {
        Ok(loaded) => {
            for warning in &loaded.warnings {
                eprintln!("{warning}");
            }
            Some(loaded.profile)
        }
        Err(error) => {
            eprintln!("{error}");
            None
        }
    }
}
