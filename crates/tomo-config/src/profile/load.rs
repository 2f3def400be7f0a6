//! Parsing and validating a profile file.

use std::collections::BTreeSet;
use std::path::Path;

use crate::diagnostic::{Diagnostic, Doc, Section, Severity, Target};

use super::{
    AsrConfig, CharacterConfig, Live2dConfig, LlmConfig, LoadedProfile, MAX_REQUEST_TIMEOUT_SECS,
    PluginsConfig, Profile, ProfileError, TtsConfig, profile_json_schema,
};

/// Reads and parses the profile at `path`.
pub fn load_profile(path: &Path) -> Result<LoadedProfile, ProfileError> {
    let text = crate::diagnostic::read_config_file(path).map_err(|source| ProfileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_profile(&text, path)
}

/// Parses profile text; `path` is only used for [`Profile::source`] and in diagnostics.
pub fn parse_profile(text: &str, path: &Path) -> Result<LoadedProfile, ProfileError> {
    let analysis = analyze(text, path).map_err(ProfileError::Invalid)?;
    let diagnostics = analysis.doc.into_diagnostics();
    match analysis.profile {
        Some(profile) => Ok(LoadedProfile {
            profile,
            warnings: diagnostics,
        }),
        None => Err(ProfileError::Invalid(diagnostics)),
    }
}

/// Everything learnt from one profile file: the parsed document (for positions), the profile if it
/// is valid, and the `[plugins]` table even when other sections are broken (for `check_profile`).
pub(super) struct Analysis<'i> {
    pub doc: Doc<'i>,
    pub profile: Option<Profile>,
    pub plugins: Option<PluginsConfig>,
}

/// Parses and validates; `Err` only for TOML syntax errors.
pub(super) fn analyze<'i>(text: &'i str, path: &Path) -> Result<Analysis<'i>, Vec<Diagnostic>> {
    let mut doc = Doc::parse(text, path, profile_json_schema())?;
    doc.check_top_level_keys();
    let character = doc.section::<CharacterConfig>("character");
    let llm = doc.section::<LlmConfig>("llm");
    let asr = doc.section::<AsrConfig>("asr");
    let tts = doc.section::<TtsConfig>("tts");
    let live2d = doc.section::<Live2dConfig>("live2d");
    let plugins = doc.section::<PluginsConfig>("plugins");

    validate_character(&mut doc, &character);
    validate_llm(&mut doc, &llm);
    validate_tts(&mut doc, &tts);
    validate_asr(&mut doc, &asr);
    validate_live2d(&mut doc, &live2d);
    validate_plugins(&mut doc, &plugins);

    let profile = match (
        character.value,
        llm.value,
        asr.value,
        tts.value,
        live2d.value,
        plugins.value.clone(),
    ) {
        (Some(character), Some(llm), Some(asr), Some(tts), Some(live2d), Some(plugins))
            if !doc.has_errors() =>
        {
            Some(Profile {
                source: path.to_path_buf(),
                character,
                llm,
                asr,
                tts,
                live2d,
                plugins,
            })
        }
        _ => None,
    };
    Ok(Analysis {
        doc,
        profile,
        plugins: plugins.value,
    })
}

fn error(doc: &mut Doc<'_>, path: &[&str], message: impl Into<String>) {
    doc.report(Severity::Error, path, Target::Value, message);
}

fn validate_character(doc: &mut Doc<'_>, section: &Section<CharacterConfig>) {
    let Some(c) = &section.value else { return };
    if section.ok("character.name") && c.name.trim().is_empty() {
        error(doc, &["character", "name"], "must not be empty");
    }
    if section.ok("character.agent_id") && !is_valid_id(&c.agent_id) {
        let mut message = format!(
            "`{}` is not a valid id: use 1 to 64 lowercase letters, digits, `_` or `-`, starting \
             with a letter or digit (it names the character's memory directory)",
            c.agent_id
        );
        if let Some(suggestion) = suggest_id(&c.agent_id) {
            message.push_str(&format!("; try `{suggestion}`"));
        }
        error(doc, &["character", "agent_id"], message);
    }
    if section.ok("character.persona") && c.persona.trim().is_empty() {
        error(doc, &["character", "persona"], "must not be empty");
    }
}

fn validate_llm(doc: &mut Doc<'_>, section: &Section<LlmConfig>) {
    let Some(l) = &section.value else { return };
    if section.ok("llm.base_url") && !is_http_url(&l.base_url) {
        error(
            doc,
            &["llm", "base_url"],
            format!(
                "expected an http:// or https:// URL, found `{}`",
                l.base_url
            ),
        );
    }
    let embedded = l.engine == super::LlmEngine::Embedded;
    if section.ok("llm.model") && !embedded && l.model.trim().is_empty() {
        let message = if doc.get(&["llm", "model"]).is_some() {
            "must not be empty"
        } else if doc.get(&["llm"]).is_none() {
            "missing required field (the file has no `[llm]` table): add one with `engine = \"embedded\"` \
             for the brain on this computer, or an endpoint's `model`"
        } else {
            "missing required field: name the model as the server knows it (e.g. `model = \"qwen2.5:3b\"`), \
             or use the brain on this computer with `engine = \"embedded\"`"
        };
        error(doc, &["llm", "model"], message);
    }
    if embedded {
        // The embedded brain has its own address and a fresh token per run: these would do nothing.
        for (key, what) in [
            (
                "base_url",
                "the embedded brain runs on this computer at an address of its own",
            ),
            (
                "api_key_env",
                "the embedded brain needs no key (it makes a fresh token for every run)",
            ),
        ] {
            if doc.get(&["llm", key]).is_some() {
                doc.report(
                    Severity::Warning,
                    &["llm", key],
                    Target::Key,
                    format!("ignored with `engine = \"embedded\"`: {what}"),
                );
            }
        }
    }
    if section.ok("llm.api_key_env")
        && let Some(var) = &l.api_key_env
        && !is_env_var_name(var)
    {
        // The field holds the *name* of a variable so keys never end up in profile files.
        let message = if var.starts_with("sk-") || var.len() > 40 {
            "this looks like an API key itself; put the key in an environment variable and \
             write that variable's name here (e.g. `TOMO_LLM_API_KEY`)"
                .to_owned()
        } else {
            format!(
                "expected the name of an environment variable (letters, digits and `_`), found `{var}`"
            )
        };
        error(doc, &["llm", "api_key_env"], message);
    }
    if section.ok("llm.api_key_env")
        && section.ok("llm.base_url")
        && !embedded
        && let Some(var) = &l.api_key_env
        && let Some(problem) = crate::keys::misdirected_key(var, &l.base_url)
    {
        error(doc, &["llm", "api_key_env"], problem);
    }
    if section.ok("llm.temperature")
        && let Some(t) = l.temperature
        && !(0.0..=2.0).contains(&t)
    {
        error(
            doc,
            &["llm", "temperature"],
            format!("must be between 0 and 2, found {t}"),
        );
    }
    if section.ok("llm.max_tokens") && l.max_tokens == Some(0) {
        error(doc, &["llm", "max_tokens"], "must be at least 1");
    }
    let timeout = l.request_timeout_secs;
    if section.ok("llm.request_timeout_secs")
        && !(timeout.is_finite() && timeout > 0.0 && timeout <= MAX_REQUEST_TIMEOUT_SECS)
    {
        error(
            doc,
            &["llm", "request_timeout_secs"],
            format!(
                "must be a positive number of seconds up to {MAX_REQUEST_TIMEOUT_SECS} (one day), found {timeout}"
            ),
        );
    }
    if section.ok("llm.max_tool_rounds") && !(1..=6).contains(&l.max_tool_rounds) {
        error(
            doc,
            &["llm", "max_tool_rounds"],
            format!("must be between 1 and 6, found {}", l.max_tool_rounds),
        );
    }
}

fn validate_asr(doc: &mut Doc<'_>, section: &Section<AsrConfig>) {
    let Some(a) = &section.value else { return };
    if section.ok("asr.interrupt_min_words") && !(1..=20).contains(&a.interrupt_min_words) {
        error(
            doc,
            &["asr", "interrupt_min_words"],
            format!("must be between 1 and 20, found {}", a.interrupt_min_words),
        );
    }
}

fn validate_tts(doc: &mut Doc<'_>, section: &Section<TtsConfig>) {
    let Some(t) = &section.value else { return };
    if section.ok("tts.speed") && !(t.speed.is_finite() && t.speed > 0.0) {
        error(
            doc,
            &["tts", "speed"],
            format!("must be greater than 0, found {}", t.speed),
        );
    }
}

fn validate_live2d(doc: &mut Doc<'_>, section: &Section<Live2dConfig>) {
    let Some(l) = &section.value else { return };
    if let Some(model) = &l.model
        && section.ok("live2d.model")
        && let Err(problem) = check_model_path(model)
    {
        error(doc, &["live2d", "model"], problem.to_string());
    }
    for (emotion, id) in &l.emotion_map {
        let path = ["live2d", "emotion_map", emotion.as_str()];
        if !section.ok(&format!("live2d.emotion_map.{emotion}")) {
            continue;
        }
        // The name is written by the model as `[name]`, so it must be a plain tag word.
        if emotion.is_empty()
            || !emotion
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        {
            doc.report(
                Severity::Error,
                &path,
                Target::Key,
                format!(
                    "emotion name `{emotion}` must be a single word (letters, digits, `_`, `-`)"
                ),
            );
        }
        if id.trim().is_empty() {
            error(doc, &path, "expression/motion id must not be empty");
        }
    }
}

/// Why a `[live2d] model` path cannot be shown.
#[derive(Debug, PartialEq, thiserror::Error)]
enum ModelPathError {
    #[error(
        "`{0}` must be a path under `assets/live2d/`, e.g. `assets/live2d/<folder>/<name>.model3.json`"
    )]
    NotUnderAssets(String),
    #[error("`{0}` must be a plain relative path (no `..`, `.`, `//` or `\\`)")]
    NotPlain(String),
    #[error("`{0}` must not contain `{1}` (rename the folder or file)")]
    UrlCharacter(String, char),
    #[error(
        "`{0}` must name a model settings file: `*.model3.json` (Cubism 3/4) or `*.model.json` (Cubism 2)"
    )]
    NotAModel(String),
}

/// The front ends show models from `assets/live2d/` (the user's folder, then the bundled ones) and nothing
/// else; a path they cannot show would silently leave the default character on screen.
fn check_model_path(model: &str) -> Result<(), ModelPathError> {
    let Some(rel) = model.strip_prefix("assets/live2d/") else {
        return Err(ModelPathError::NotUnderAssets(model.to_owned()));
    };
    if rel
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
        || rel.contains('\\')
    {
        return Err(ModelPathError::NotPlain(model.to_owned()));
    }
    // The UI loads it as a URL path: these would end or escape the path.
    if let Some(c) = rel.chars().find(|c| matches!(c, '#' | '?' | '%')) {
        return Err(ModelPathError::UrlCharacter(model.to_owned(), c));
    }
    if !(model.ends_with(".model.json") || model.ends_with(".model3.json")) {
        return Err(ModelPathError::NotAModel(model.to_owned()));
    }
    Ok(())
}

fn validate_plugins(doc: &mut Doc<'_>, section: &Section<PluginsConfig>) {
    let Some(p) = &section.value else { return };
    let mut seen = BTreeSet::new();
    for (i, id) in p.enabled.iter().enumerate() {
        let index = i.to_string();
        let path = ["plugins", "enabled", index.as_str()];
        if !is_valid_id(id) {
            error(doc, &path, format!("`{id}` is not a valid plugin id"));
        } else if !seen.insert(id.as_str()) {
            doc.report(
                Severity::Warning,
                &path,
                Target::Value,
                format!("plugin `{id}` is listed twice"),
            );
        }
    }
    for id in p.overrides.keys() {
        if !p.enabled.contains(id) {
            doc.report(
                Severity::Warning,
                &["plugins", id.as_str()],
                Target::Key,
                format!(
                    "config for plugin `{id}`, which is not enabled (add it to `plugins.enabled` \
                     to use it)"
                ),
            );
        }
    }
}

/// True if `id` matches [`ID_PATTERN`](super::ID_PATTERN) (`^[a-z0-9][a-z0-9_-]{0,63}$`): usable as
/// an `agent_id` or plugin id. Ids name directories, so they must be safe file names on every OS.
pub fn is_valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    id.len() <= 64
        && (first.is_ascii_lowercase() || first.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// A valid id close to `id` (lowercased, other characters replaced by `_`), if one can be made.
fn suggest_id(id: &str) -> Option<String> {
    let s: String = id
        .trim()
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_start_matches(['_', '-']);
    let s: String = s.chars().take(64).collect();
    is_valid_id(&s).then_some(s)
}

fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    // A host must follow the scheme; no whitespace anywhere (a pasted URL with a trailing space fails
    // late and confusingly in the HTTP client otherwise).
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
        && !url.chars().any(char::is_whitespace)
}

fn is_env_var_name(name: &str) -> bool {
    crate::keys::is_env_name(name)
}
