//! What every conversational command (`chat`, `talk`, `run`, `bench`) sets up the same way: the profile,
//! the endpoint overrides, where plugins and data live (the flags; `tomo-runtime` builds the environment).

use std::path::{Path, PathBuf};

use clap::Args;
use tomo_config::profile::{Profile, load_profile};
use tomo_runtime::EnvOptions;

use crate::LlmFlags;

#[derive(Debug, Args, Clone, Default)]
pub struct SessionFlags {
    /// Plugin manifests folder (default: `plugins/` next to the profile's folder, else ./plugins).
    #[arg(long, env = "TOMO_PLUGINS_DIR")]
    pub plugins_dir: Option<PathBuf>,
    /// Where characters keep history, diaries and memories (default: the platform data dir).
    #[arg(long, env = "TOMO_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
}

pub use tomo_runtime::Prepared;

pub fn environment(profile_path: &Path, llm: &LlmFlags, flags: &SessionFlags) -> Prepared {
    let options = EnvOptions {
        plugins_dir: flags.plugins_dir.clone(),
        data_dir: flags.data_dir.clone(),
        llm_base_url: llm.llm_base_url.clone(),
        llm_model: llm.llm_model.clone(),
    };
    tomo_runtime::environment(profile_path, &options)
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
