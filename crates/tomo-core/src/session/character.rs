//! A character at run time: its profile turned into an LLM client, tools, hooks, history and pipeline
//! settings. Switching profile builds a new `Character` and drops the old one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::history::{History, HistoryError, HistoryRecord};
use crate::pipeline::PipelineSettings;
use crate::plugin_host::{self, PluginProblem};
use crate::session::compress::Compressor;
use crate::session::llm_settings::{self, Brain};
use crate::session::prompt;
use tomo_config::profile::{LlmEngine, Profile};
use tomo_llm::agent::AgentConfig;
use tomo_llm::tools::ToolRegistry;
use tomo_llm::{ChatMessage, EmbeddedRequest, LlmClient, LlmConnector, LlmEndpoint};
use tomo_plugin_api::hooks::Hook;
use tomo_plugin_api::scheduler::Scheduler;
use tomo_plugin_api::sensor::Sensor;
use tomo_plugin_api::{FactoryContext, PluginFactory};

/// Endpoint settings that win over the profile's (from CLI flags or `TOMO_LLM_*` variables, or the
/// settings' `set_llm`).
#[derive(Clone, Default)]
pub struct LlmOverrides {
    /// `Some(Embedded)`: the embedded brain whatever the profile says (`set_llm`'s embedded preset).
    /// `None`: a `base_url` here means an endpoint; without one, the profile decides.
    pub engine: Option<LlmEngine>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    /// The endpoint (`tomo_config::keys::origin`) `api_key` was configured for: it is sent nowhere else.
    pub api_key_origin: Option<String>,
}

impl std::fmt::Debug for LlmOverrides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmOverrides")
            .field("engine", &self.engine)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_origin", &self.api_key_origin)
            .finish()
    }
}

/// Where the session finds plugins and keeps data, and how it reaches language models.
#[derive(Clone)]
pub struct Environment {
    pub plugins_dir: PathBuf,
    /// Root of per-character data; a character's files live in `<data_root>/characters/<agent_id>/`.
    pub data_root: PathBuf,
    pub llm: LlmOverrides,
    /// Turns an endpoint into a client (the runtime registers the OpenAI-compatible one).
    pub llm_connector: Arc<dyn LlmConnector>,
    pub hook_timeout: Duration,
    /// Hooks registered by the embedding program (e.g. the desktop shell or a test), run after the
    /// profile's hook plugins.
    pub extra_hooks: Vec<Arc<dyn Hook>>,
    /// Plugins provided by crates outside tomo-core, matched to manifests by id.
    pub plugin_factories: Vec<Arc<dyn PluginFactory>>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("plugins_dir", &self.plugins_dir)
            .field("data_root", &self.data_root)
            .field("llm", &self.llm)
            .field("hook_timeout", &self.hook_timeout)
            .field("extra_hooks", &self.extra_hooks.len())
            .field("plugin_factories", &self.plugin_factories)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CharacterError {
    #[error(transparent)]
    Llm(#[from] tomo_llm::LlmError),
    #[error(transparent)]
    History(#[from] HistoryError),
}

impl CharacterError {
    pub fn code(&self) -> tomo_protocol::ErrorCode {
        match self {
            Self::Llm(error) => error.code(),
            Self::History(_) => tomo_protocol::ErrorCode::History,
        }
    }
}

pub struct Character {
    pub profile: Profile,
    pub client: LlmClient,
    /// Whether `client` is the embedded brain (else an OpenAI-compatible endpoint).
    pub embedded: bool,
    pub tools: ToolRegistry,
    pub hooks: Vec<Arc<dyn Hook>>,
    pub data_dir: PathBuf,
    pub agent_config: AgentConfig,
    pub pipeline_settings: PipelineSettings,
    pub system_prompt: String,
    pub show_reasoning: bool,
    pub hook_timeout: Duration,
    /// (plugin id, sensor): started with the character by the coordinator.
    pub sensors: Vec<(String, Arc<dyn Sensor>)>,
    /// (plugin id, scheduler): started with the character by the coordinator.
    pub schedulers: Vec<(String, Arc<dyn Scheduler>)>,
    history: Mutex<History>,
    /// Unreadable lines the history load skipped (torn writes), announced once with the character.
    pub history_skipped_lines: usize,
    /// Commands of enabled plugins the user has not answered for: asked with the character.
    pub pending_commands: Vec<tomo_plugin_api::trust::McpCommand>,
    /// Recent turns verbatim, older ones in a running summary (see `compress.rs`).
    compressor: Compressor,
}

impl Character {
    /// Builds the character. Plugin problems do not fail the load: the character starts without the
    /// broken plugin and the problems are returned for the user to see.
    pub async fn load(
        profile: Profile,
        env: &Environment,
        approvals: Option<super::Approvals>,
    ) -> Result<(Self, Vec<PluginProblem>), CharacterError> {
        let llm = &profile.llm;
        // The profile check bounds the timeout; a profile built in code gets the same bound here instead
        // of a panicking conversion.
        let idle_timeout = Duration::try_from_secs_f64(
            llm.request_timeout_secs
                .clamp(1.0, tomo_config::profile::MAX_REQUEST_TIMEOUT_SECS),
        )
        .unwrap_or(Duration::from_secs(60));
        let brain = llm_settings::resolve(llm, &env.llm);
        let embedded = matches!(brain, Brain::Embedded { .. });
        let client = match brain {
            // Its own address and a per-run token: no key of the user's goes to it.
            Brain::Embedded { model } => {
                env.llm_connector
                    .connect_embedded(EmbeddedRequest {
                        model,
                        temperature: llm.temperature,
                        max_tokens: llm.max_tokens,
                        idle_timeout,
                        prompt_budget: u32::try_from(llm.context_budget_tokens).unwrap_or(u32::MAX),
                    })
                    .await?
            }
            Brain::Endpoint { base_url, model } => {
                let api_key = api_key_for(&base_url, &env.llm, llm);
                env.llm_connector.connect(LlmEndpoint {
                    base_url,
                    model,
                    api_key,
                    temperature: llm.temperature,
                    max_tokens: llm.max_tokens,
                    idle_timeout,
                })?
            }
        };
        let data_dir = character_dir(&env.data_root, &profile.character.agent_id);
        let history = History::open(&data_dir)?;
        let history_skipped_lines = history.skipped_lines;
        let factory_ctx = FactoryContext {
            agent_id: profile.character.agent_id.clone(),
            character_name: profile.character.name.clone(),
            data_dir: data_dir.clone(),
            llm: client.clone(),
        };
        let gate = plugin_host::PluginGate {
            trust: tomo_plugin_api::trust::TrustStore::in_data_root(&env.data_root),
            approvals,
        };
        let loaded = plugin_host::load_plugins(
            &profile,
            &env.plugins_dir,
            &env.plugin_factories,
            &factory_ctx,
            &gate,
        )
        .await;
        let emotions = profile.emotions();
        let character = Self {
            system_prompt: prompt::system_prompt(
                &profile.character.persona,
                &profile.character.name,
                &emotions,
            ),
            pipeline_settings: PipelineSettings {
                emotions,
                tags: loaded.tags.clone(),
                show_think: llm.show_think,
                first_clause_fast_path: true,
            },
            agent_config: AgentConfig {
                max_rounds: llm.max_tool_rounds.clamp(1, 6),
                max_retries: llm.max_retries,
                ..AgentConfig::default()
            },
            show_reasoning: llm.show_reasoning,
            compressor: Compressor::new(
                &data_dir,
                &profile.character.name,
                llm.context_budget_tokens,
                llm.context_turns,
            ),
            hook_timeout: env.hook_timeout,
            client,
            embedded,
            tools: loaded.tools,
            sensors: loaded.sensors,
            schedulers: loaded.schedulers,
            hooks: loaded
                .hooks
                .into_iter()
                .chain(env.extra_hooks.iter().cloned())
                .collect(),
            history_skipped_lines,
            pending_commands: loaded.pending,
            data_dir,
            history: Mutex::new(history),
            profile,
        };
        Ok((character, loaded.problems))
    }

    pub fn name(&self) -> &str {
        &self.profile.character.name
    }

    pub fn agent_id(&self) -> &str {
        &self.profile.character.agent_id
    }

    /// Whether the LLM runs on this machine (loopback host), so screen text sent to it stays local.
    pub fn llm_is_local(&self) -> bool {
        is_loopback_url(&self.client.endpoint().base_url)
    }

    pub fn next_turn_id(&self) -> u64 {
        self.history.lock().map_or(1, |h| h.next_turn_id())
    }

    pub(crate) fn append_history(&self, records: Vec<HistoryRecord>) -> Result<(), HistoryError> {
        match self.history.lock() {
            Ok(mut history) => history.append(records),
            // A panic while holding the lock cannot corrupt the file (appends are whole writes).
            Err(poisoned) => poisoned.into_inner().append(records),
        }
    }

    /// The system prompt (with the running summary of older turns) and the verbatim recent turns before
    /// `turn_id`, under the profile's `context_budget_tokens` and `context_turns` given the user
    /// message that will follow them.
    pub(crate) async fn prompt_context(
        &self,
        turn_id: u64,
        user_message: &str,
    ) -> (String, Vec<ChatMessage>) {
        self.compressor
            .context(
                &self.history,
                &self.client,
                &self.system_prompt,
                user_message,
                turn_id,
            )
            .await
    }

    /// After a finished turn: folds old turns into the running summary when they take too much room.
    pub(crate) async fn compact_history(&self, turn_id: u64) {
        self.compressor
            .maintain(&self.history, &self.client, &self.system_prompt, turn_id)
            .await;
    }
}

/// The key for `base_url`: the front end's key when it was configured for that endpoint, else the
/// profile's variable when `base_url` is the profile's own endpoint (a profile names its variable for
/// its `base_url`, nowhere else; the profile check already refused a provider's variable for another
/// host). Any other endpoint gets no key.
fn api_key_for(
    base_url: &str,
    overrides: &LlmOverrides,
    profile: &tomo_config::profile::LlmConfig,
) -> Option<String> {
    let origin = tomo_config::keys::origin(base_url)?;
    if overrides.api_key.is_some() && overrides.api_key_origin.as_deref() == Some(origin.as_str()) {
        return overrides.api_key.clone();
    }
    // An embedded profile's variable is ignored (the profile check says so): it names no endpoint.
    if profile.engine == LlmEngine::Embedded {
        return None;
    }
    let name = profile.api_key_env.as_deref()?;
    if tomo_config::keys::origin(&profile.base_url).as_deref() != Some(origin.as_str()) {
        tracing::info!(
            variable = name,
            "the profile's key stays with the profile's endpoint"
        );
        return None;
    }
    if let Some(problem) = tomo_config::keys::misdirected_key(name, base_url) {
        tracing::warn!("{problem}");
        return None;
    }
    std::env::var(name).ok().filter(|key| !key.is_empty())
}

/// `http://localhost:11434/v1`, `http://127.0.0.1/…`, `http://[::1]:8080` are loopback; anything else
/// (including LAN addresses) is not.
pub(crate) fn is_loopback_url(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

pub fn character_dir(data_root: &Path, agent_id: &str) -> PathBuf {
    data_root.join("characters").join(agent_id)
}

/// `$TOMO_DATA_DIR`, else the platform data directory (`~/.local/share/tomo` on Linux).
pub fn default_data_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("TOMO_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("tomo")
}

#[cfg(test)]
mod tests {
    use super::is_loopback_url;

    #[test]
    fn loopback_endpoints() {
        for url in [
            "http://127.0.0.1:11434/v1",
            "http://localhost/v1",
            "https://LOCALHOST:8080",
            "http://[::1]:8080/v1",
            "http://127.1.2.3",
            "http://user@127.0.0.1:9/v1",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://192.168.1.5:11434/v1",
            "http://localhost.example.com/v1",
            "http://[2001:db8::1]/v1",
            "not a url",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }
}
