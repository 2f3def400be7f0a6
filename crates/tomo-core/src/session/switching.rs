//! Changing who the character is, or which LLM it talks to, in a running session: a profile switch and
//! the settings' LLM presets both reload the character whole (`reload`), and a failure keeps the old one.

use std::path::Path;
use std::sync::Arc;

use tomo_config::profile::{Profile, load_profile};
use tomo_protocol::{ErrorCode, Event};

use super::character::{Character, CharacterError};
use super::{Coordinator, llm_settings};

impl Coordinator {
    pub(super) async fn switch_profile(&mut self, path: &Path) {
        let loaded = match load_profile(path) {
            Ok(loaded) => loaded,
            Err(error) => {
                self.emit(Event::Error {
                    code: ErrorCode::Profile,
                    message: error.to_string(),
                    // The current character stays; another switch starts afresh.
                    recoverable: true,
                });
                return;
            }
        };
        for warning in &loaded.warnings {
            tracing::warn!(%warning, "profile warning");
        }
        self.stop_current_turn().await;
        let label = path.display().to_string();
        if let Err(error) = self.reload(loaded.profile, &label).await {
            self.emit(Event::Error {
                code: error.code(),
                message: format!("cannot switch to {label}: {error}"),
                recoverable: true,
            });
        }
    }

    /// The same character on another endpoint: the settings' presets. On any problem the old endpoint
    /// stays and the user is told why.
    pub(super) async fn set_llm(
        &mut self,
        engine: tomo_protocol::LlmEngineKind,
        base_url: &str,
        model: &str,
        api_key_env: Option<&str>,
    ) {
        let chosen = llm_settings::choose(
            engine,
            base_url,
            model,
            api_key_env,
            &self.env.llm,
            |name| std::env::var(name).ok(),
        );
        let (choice, overrides) = match chosen {
            Ok(chosen) => chosen,
            Err(error) => {
                self.emit(Event::Error {
                    code: ErrorCode::Profile,
                    message: error.to_string(),
                    recoverable: true,
                });
                return;
            }
        };
        self.stop_current_turn().await;
        let previous = std::mem::replace(&mut self.env.llm, overrides);
        let profile = self.character.profile.clone();
        let label = match choice.engine {
            tomo_protocol::LlmEngineKind::Embedded => {
                format!("the embedded brain `{}`", choice.model)
            }
            tomo_protocol::LlmEngineKind::OpenAi => choice.base_url.clone(),
        };
        match self.reload(profile, &label).await {
            Ok(()) => self.emit(Event::LlmChanged {
                engine: choice.engine,
                // The embedded brain's address is its engine's, known once it runs.
                base_url: self.character.client.endpoint().base_url.clone(),
                model: choice.model,
            }),
            Err(error) => {
                self.env.llm = previous;
                self.emit(Event::Error {
                    code: error.code(),
                    message: format!("cannot use {label}: {error}"),
                    // The previous endpoint stays in use.
                    recoverable: true,
                });
            }
        }
    }

    /// Loads `profile` as the session's character (new plugins, voice, memory space) and announces it.
    pub(super) async fn reload(
        &mut self,
        profile: Profile,
        label: &str,
    ) -> Result<(), CharacterError> {
        // A request started in a pause belongs to the old character (and maybe its old endpoint).
        self.drop_anticipation().await;
        let (character, problems) =
            Character::load(profile, &self.env, Some(self.approvals.clone())).await?;
        // Before the next turn can start: the character speaks with its own voice from its first
        // sentence on (a voice that cannot load leaves the old one and says so).
        if let Err(error) = self.sink.switch_voice(&character.profile).await {
            self.emit(Event::Error {
                code: ErrorCode::Output,
                message: format!("{label}: {error}; keeping the previous voice"),
                recoverable: error.is_recoverable(),
            });
        }
        // The old character's sensors stop watching before the new one's start.
        std::mem::take(&mut self.plugins).stop().await;
        self.observations.clear();
        // Questions about commands the new character does not run are moot.
        let still_pending: Vec<String> = character
            .pending_commands
            .iter()
            .map(tomo_plugin_api::trust::McpCommand::fingerprint)
            .collect();
        for id in self.questions.drop_commands_except(&still_pending) {
            self.emit(Event::ApprovalResolved { id, allowed: false });
        }
        self.character = Arc::new(character);
        self.refresh_secrets();
        self.announce(problems);
        self.start_plugins();
        self.warm_up();
        Ok(())
    }
}
