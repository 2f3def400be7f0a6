//! Character profiles (`profiles/*.toml`): who the companion is (persona, voice, Live2D model), which
//! LLM it talks to, and which plugins it uses.
//!
//! ```toml
//! [character]
//! name = "Hana"
//! agent_id = "hana"          # also the name of its memory directory
//! persona = "You are Hana, ..."
//!
//! [llm]
//! engine = "embedded"        # the brain on this computer (llama.cpp); or "openai" + base_url + model
//! model = "qwen2.5-coder-1.5b"
//!
//! [plugins]
//! enabled = ["time", "diary"]
//!
//! [plugins.diary]            # overrides the plugin manifest's [config] defaults
//! inject_recent = 5
//! ```
//!
//! Loading reports every problem it can find as a [`Diagnostic`] with file, line, column and field path.
//! Unknown keys are warnings (a newer profile should still load in an older Tomo), but they carry a
//! "did you mean" hint and `tomo profile check` prints them, so a typo never silently does nothing.

mod check;
mod load;
mod schema;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::diagnostic::{Diagnostic, Severity};
pub use check::{CheckContext, EmbeddedModelInfo, check_profile, check_profile_with};
pub use load::is_valid_id;
pub use load::{load_profile, parse_profile};
pub use schema::profile_json_schema;

/// Pattern of `character.agent_id` and plugin ids: they name directories, so only characters that are
/// safe in a file name on every OS. The schemas use it; the loaders check it with [`is_valid_id`].
/// The longest `llm.request_timeout_secs` accepted: one day (a bigger number would overflow the
/// `Duration` it becomes).
pub const MAX_REQUEST_TIMEOUT_SECS: f64 = 86_400.0;

pub const ID_PATTERN: &str = "^[a-z0-9][a-z0-9_-]{0,63}$";

/// A loaded, validated character profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "Tomo character profile")]
pub struct Profile {
    /// The file this profile was loaded from (not part of the file itself).
    #[serde(skip)]
    pub source: PathBuf,
    pub character: CharacterConfig,
    pub llm: LlmConfig,
    #[serde(default)]
    pub asr: AsrConfig,
    #[serde(default)]
    pub tts: TtsConfig,
    #[serde(default)]
    pub live2d: Live2dConfig,
    #[serde(default)]
    pub plugins: PluginsConfig,
}

impl Profile {
    /// The emotion names the model may use as `[emotion]` tags: the keys of `live2d.emotion_map`.
    pub fn emotions(&self) -> Vec<String> {
        self.live2d.emotion_map.keys().cloned().collect()
    }
}

/// Who the companion is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CharacterConfig {
    /// Display name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Stable id: names the character's memory/diary directory, so it is restricted to lowercase
    /// letters, digits, `_` and `-` (at most 64 characters, starting with a letter or digit).
    #[schemars(regex(pattern = ID_PATTERN))]
    pub agent_id: String,
    /// The system prompt describing the character.
    #[schemars(length(min = 1))]
    pub persona: String,
    /// Said when a session starts, if set.
    #[serde(default)]
    pub greeting: Option<String>,
}

/// The embedded model a profile gets when it says `engine = "embedded"` and names none (the manifest's
/// default LLM; tomo-runtime's tests keep the two in step).
pub const DEFAULT_EMBEDDED_MODEL: &str = "qwen2.5-coder-1.5b";

/// What thinks for the character.
///
/// Without `engine` a profile means an OpenAI-compatible endpoint: every profile written before the
/// embedded brain existed names one (`base_url`, or Ollama's default URL, and a model such as
/// `qwen2.5:3b` that is no embedded model), and reading those as embedded would fail on the model name or
/// silently change what answers. The shipped profiles say `engine = "embedded"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LlmEngine {
    /// Any OpenAI-compatible chat endpoint (Ollama, LM Studio, llama.cpp's server, a cloud API) at
    /// `base_url`.
    #[default]
    #[serde(
        alias = "OpenAI",
        alias = "OpenAi",
        alias = "OPENAI",
        alias = "openai-compatible",
        alias = "endpoint"
    )]
    OpenAi,
    /// The brain that ships with Tomo: llama.cpp on this computer with a model from the model store
    /// (`model` names it, e.g. `qwen2.5-coder-1.5b`). No server, no key; nothing leaves the machine.
    #[serde(alias = "Embedded", alias = "EMBEDDED", alias = "llama.cpp")]
    Embedded,
}

impl LlmEngine {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Embedded => "embedded",
        }
    }
}

/// The language model: the embedded brain, or an OpenAI-compatible chat endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
// An endpoint needs its model's name; the embedded brain has a default.
#[schemars(extend(
    "if" = { "properties": { "engine": { "const": "embedded" } }, "required": ["engine"] },
    "else" = { "required": ["model"] }
))]
pub struct LlmConfig {
    /// `embedded` (the brain on this computer) or `openai` (an OpenAI-compatible endpoint at
    /// `base_url`). Default: `openai`, what profiles without this key always meant.
    #[serde(default)]
    pub engine: LlmEngine,
    /// Base URL of an OpenAI-compatible API (http or https). Default: a local Ollama. Not used by the
    /// embedded brain.
    #[serde(default = "default_base_url")]
    #[schemars(regex(pattern = "^https?://"))]
    pub base_url: String,
    /// Model name as the server knows it, e.g. `qwen2.5:3b`; for the embedded brain, the name of an
    /// embedded model in the model store (`tomo models list`), default `qwen2.5-coder-1.5b`.
    #[serde(default)]
    pub model: String,
    /// Name of the environment variable that holds the API key. Never the key itself.
    #[serde(default)]
    #[schemars(regex(pattern = "^[A-Za-z_][A-Za-z0-9_]*$"))]
    pub api_key_env: Option<String>,
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 2.0))]
    pub temperature: Option<f32>,
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u32>,
    /// Show the model's `reasoning_content` in the UI. It is never spoken.
    #[serde(default)]
    pub show_reasoning: bool,
    /// Show `<think>` blocks in the UI. They are never spoken.
    #[serde(default)]
    pub show_think: bool,
    /// How many recent turns are sent verbatim (at most); older turns are folded into a running summary.
    #[serde(default = "default_context_turns")]
    pub context_turns: usize,
    /// Upper bound of a request's prompt, in estimated tokens (characters / 4: a deliberately rough,
    /// tokenizer-free estimate, conservative for English). Old turns are summarised to stay under it.
    #[serde(default = "default_context_budget_tokens")]
    #[schemars(range(min = 256))]
    pub context_budget_tokens: usize,
    /// Seconds before a request without progress is abandoned.
    #[serde(default = "default_request_timeout_secs")]
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 86400))]
    pub request_timeout_secs: f64,
    /// Retries of a failed request, only before the first token arrives.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// Tool-calling rounds per turn (1 to 6).
    #[serde(default = "default_max_tool_rounds")]
    #[schemars(range(min = 1, max = 6))]
    pub max_tool_rounds: u32,
}

impl LlmConfig {
    /// The embedded model this profile asks for, or `None` when it talks to an endpoint.
    pub fn embedded_model(&self) -> Option<&str> {
        match self.engine {
            LlmEngine::OpenAi => None,
            LlmEngine::Embedded if self.model.trim().is_empty() => Some(DEFAULT_EMBEDDED_MODEL),
            LlmEngine::Embedded => Some(self.model.trim()),
        }
    }
}

fn default_base_url() -> String {
    "http://127.0.0.1:11434/v1".to_owned()
}
fn default_context_turns() -> usize {
    20
}
fn default_context_budget_tokens() -> usize {
    8000
}
fn default_request_timeout_secs() -> f64 {
    60.0
}
fn default_max_retries() -> u32 {
    2
}
fn default_max_tool_rounds() -> u32 {
    6
}

/// Which speech recogniser a profile uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AsrEngine {
    /// whisper.cpp on this machine.
    #[serde(alias = "Whisper", alias = "WHISPER")]
    Whisper,
    /// An OpenAI-compatible `/audio/transcriptions` endpoint: the audio leaves the machine.
    #[serde(alias = "OpenAI", alias = "OpenAi", alias = "OPENAI", alias = "cloud")]
    OpenAi,
}

impl AsrEngine {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Whisper => "whisper",
            Self::OpenAi => "openai",
        }
    }
}

/// Which voice engine a profile uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TtsEngine {
    /// Piper neural voices (ONNX) on this machine.
    #[serde(alias = "Piper", alias = "PIPER")]
    Piper,
    /// Kokoro-82M neural voices (ONNX) on this machine.
    #[serde(alias = "Kokoro", alias = "KOKORO")]
    Kokoro,
    /// Debian's flite.
    #[serde(alias = "Flite", alias = "FLITE")]
    Flite,
    /// Debian's espeak-ng.
    #[serde(
        alias = "Espeak",
        alias = "espeak-ng",
        alias = "eSpeak",
        alias = "ESPEAK"
    )]
    Espeak,
    /// An OpenAI-compatible `/audio/speech` endpoint: the text leaves the machine.
    #[serde(alias = "OpenAI", alias = "OpenAi", alias = "OPENAI", alias = "cloud")]
    OpenAi,
}

impl TtsEngine {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Piper => "piper",
            Self::Kokoro => "kokoro",
            Self::Flite => "flite",
            Self::Espeak => "espeak",
            Self::OpenAi => "openai",
        }
    }
}

/// Speech recognition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct AsrConfig {
    pub engine: AsrEngine,
    /// The whisper model, by its store name without `whisper-`: `base` (8-bit weights, every language),
    /// `base-4bit` (≈ 1/3 faster; as good on English, worse on Mandarin) or `tiny.en` (English only).
    pub model: String,
    /// Language code such as `en` or `ja`; unset means auto-detect.
    pub language: Option<String>,
    /// Input device name; unset means the system default.
    pub input_device: Option<String>,
    /// The user may talk over the character on speakers (echo cancellation keeps its own voice out of
    /// the microphone). `false`: the microphone is off while the character speaks. The command line's
    /// `--half-duplex` / `--barge-in` and the app's Interrupt switch override it.
    pub interrupt: bool,
    /// Speech over the answer stops its audio at once; the answer goes on where it stopped unless the
    /// user said at least this many words that are neither a listening sound or acknowledgement
    /// ("mm-hm", "yeah", "嗯") nor the character's own words, or a word asking it to stop ("wait",
    /// "stop", "no", "等等", …). Two by default: whisper makes single words of hums and noises ("What?",
    /// "You"), and a listener's one-word reaction ("Really?") is not a request for the floor.
    #[schemars(range(min = 1, max = 20))]
    pub interrupt_min_words: u32,
}

impl Default for AsrConfig {
    fn default() -> Self {
        Self {
            engine: AsrEngine::Whisper,
            model: "base".to_owned(),
            language: None,
            input_device: None,
            interrupt: true,
            interrupt_min_words: 2,
        }
    }
}

/// Speech synthesis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct TtsConfig {
    pub engine: TtsEngine,
    pub voice: String,
    /// Speaking rate; 1.0 is normal, must be greater than 0.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub speed: f32,
    /// Output device name; unset means the system default.
    pub output_device: Option<String>,
}

impl Default for TtsConfig {
    fn default() -> Self {
        Self {
            engine: TtsEngine::Piper,
            voice: "en_US-joe-medium".to_owned(),
            speed: 1.0,
            output_device: None,
        }
    }
}

/// The avatar.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Live2dConfig {
    /// The Live2D model's settings file: `assets/live2d/<folder>/<name>.model3.json` (Cubism 3/4) or
    /// `assets/live2d/<folder>/<name>.model.json` (Cubism 2). Each file is looked up in the user's
    /// `assets/live2d/` first, then among the models bundled with the UI.
    pub model: Option<String>,
    /// Emotion name (used as an `[emotion]` tag by the model) → expression or motion id.
    pub emotion_map: BTreeMap<String, String>,
}

/// `[plugins]`: `enabled = [...]` plus one `[plugins.<id>]` table per plugin whose config is overridden.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct PluginsConfig {
    /// Plugin ids (folder names under `plugins/`), in load order.
    #[serde(default)]
    pub enabled: Vec<String>,
    /// `[plugins.<id>]` tables: override the plugin manifest's `[config]` defaults key by key.
    #[serde(flatten)]
    #[schemars(with = "BTreeMap<String, serde_json::Map<String, serde_json::Value>>")]
    pub overrides: BTreeMap<String, toml::Table>,
}

/// Hand-written because `enabled` and the per-plugin tables share one TOML table: any key other than
/// `enabled` is a plugin id and must be a table. (serde's `flatten` would lose the source spans.)
impl<'de> Deserialize<'de> for PluginsConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PluginsVisitor)
    }
}

struct PluginsVisitor;

impl<'de> serde::de::Visitor<'de> for PluginsVisitor {
    type Value = PluginsConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<PluginsConfig, A::Error> {
        let mut out = PluginsConfig::default();
        while let Some(key) = map.next_key::<String>()? {
            if key == "enabled" {
                out.enabled = map.next_value()?;
                continue;
            }
            // Through a seed so the error is raised inside `next_value` and carries the key's path.
            let table = map.next_value_seed(OverrideTable { plugin: &key })?;
            out.overrides.insert(key, table);
        }
        Ok(out)
    }
}

/// One `[plugins.<id>]` value: must be a table.
struct OverrideTable<'a> {
    plugin: &'a str,
}

impl<'de> serde::de::DeserializeSeed<'de> for OverrideTable<'_> {
    type Value = toml::Table;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<toml::Table, D::Error> {
        let key = self.plugin;
        match toml::Value::deserialize(deserializer)? {
            toml::Value::Table(table) => Ok(table),
            other => {
                let hint = if crate::diagnostic::did_you_mean(key, ["enabled"]).is_some() {
                    " (did you mean `enabled`?)"
                } else {
                    ""
                };
                Err(serde::de::Error::custom(format!(
                    "expected a `[plugins.{key}]` table of config overrides, found {}{hint}",
                    toml_kind(&other)
                )))
            }
        }
    }
}

fn toml_kind(value: &toml::Value) -> &'static str {
    match value {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date-time",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

/// A profile that loaded, with the warnings found on the way (unknown keys, suspicious values).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedProfile {
    pub profile: Profile,
    pub warnings: Vec<Diagnostic>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profile {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Every problem found, errors and warnings, sorted by position.
    #[error("{}", crate::diagnostic::DisplayList(.0))]
    Invalid(Vec<Diagnostic>),
}
