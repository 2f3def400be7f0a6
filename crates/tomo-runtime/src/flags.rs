//! The command-line flags every front end that runs a session shares (`tomo chat|run|serve|talk` and the
//! desktop app), declared once. A flag wins over its environment variable, which wins over the profile.

use std::path::PathBuf;

use clap::Args;

use crate::env::EnvOptions;

/// Where the session's LLM, plugins and data are.
#[derive(Debug, Args, Clone, Default)]
pub struct SessionFlags {
    /// OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1 (Ollama).
    #[arg(long, env = "TOMO_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Model name on that server.
    #[arg(long, env = "TOMO_LLM_MODEL")]
    pub llm_model: Option<String>,
    /// Plugin manifests folder (default: `plugins/` next to the profile's folder).
    #[arg(long, env = "TOMO_PLUGINS_DIR")]
    pub plugins_dir: Option<PathBuf>,
    /// Where characters keep history, diaries and memories (default: the platform data dir).
    #[arg(long, env = "TOMO_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
}

impl SessionFlags {
    pub fn env_options(&self) -> EnvOptions {
        EnvOptions {
            plugins_dir: self.plugins_dir.clone(),
            data_dir: self.data_dir.clone(),
            llm_base_url: self.llm_base_url.clone(),
            llm_model: self.llm_model.clone(),
        }
    }
}

/// How the voice runs, for front ends with a microphone and speakers.
#[derive(Debug, Args, Clone)]
pub struct VoiceFlags {
    /// Text only: no microphone, no speech.
    #[arg(long, env = "TOMO_TEXT_ONLY", action = clap::ArgAction::SetTrue,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub text: bool,
    /// Listen while the character speaks, whatever the profile says (`[asr] interrupt`, on by
    /// default): the user's words interrupt it (echo cancellation keeps its own voice out of the
    /// microphone).
    #[arg(long, conflicts_with = "half_duplex")]
    pub barge_in: bool,
    /// Never listen while the character speaks (the user cannot interrupt it by talking; for a machine
    /// whose speakers are too loud or too close for the echo canceller).
    #[arg(long)]
    pub half_duplex: bool,
    /// Sentences synthesized at the same time, ahead of playback.
    #[arg(long, default_value_t = 2)]
    pub tts_workers: usize,
}

impl Default for VoiceFlags {
    fn default() -> Self {
        Self {
            text: false,
            barge_in: false,
            half_duplex: false,
            tts_workers: 2,
        }
    }
}

impl VoiceFlags {
    pub fn duplex(&self) -> crate::builder::Duplex {
        use crate::builder::Duplex;
        match (self.half_duplex, self.barge_in) {
            (true, _) => Duplex::Half,
            (false, true) => Duplex::Full,
            (false, false) => Duplex::Auto,
        }
    }
}
