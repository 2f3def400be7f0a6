//! `set_llm`: the user picks another endpoint in the settings (a preset or their own). The API key never
//! travels with the request: the client names an environment variable that holds it, and only variables
//! whose names say they hold an API key may be read, so a client cannot make the session send some other
//! secret of this process's environment to an endpoint of its choosing. A key is bound to the endpoint it
//! was configured for: without a named variable, a new host gets no key at all.

use tomo_config::keys;
use tomo_config::profile::{DEFAULT_EMBEDDED_MODEL, LlmConfig, LlmEngine};
use tomo_protocol::LlmEngineKind;

use super::LlmOverrides;

/// What answers for a character: the profile's choice with the front end's overrides applied.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Brain {
    Embedded { model: String },
    Endpoint { base_url: String, model: String },
}

/// An override's engine wins (the settings chose the embedded brain); else an overridden `base_url`
/// means that endpoint; else the profile decides. An overridden model names the embedded model for the
/// embedded brain, the server's model otherwise.
pub(crate) fn resolve(profile: &LlmConfig, overrides: &LlmOverrides) -> Brain {
    let model = overrides.model.clone().filter(|m| !m.trim().is_empty());
    let embedded = match (overrides.engine, &overrides.base_url) {
        (Some(engine), _) => engine == LlmEngine::Embedded,
        (None, Some(_)) => false,
        (None, None) => profile.engine == LlmEngine::Embedded,
    };
    if embedded {
        let model = model
            .or_else(|| profile.embedded_model().map(str::to_owned))
            .unwrap_or_else(|| DEFAULT_EMBEDDED_MODEL.to_owned());
        return Brain::Embedded { model };
    }
    Brain::Endpoint {
        base_url: overrides
            .base_url
            .clone()
            .unwrap_or_else(|| profile.base_url.clone()),
        model: model.unwrap_or_else(|| profile.model.clone()),
    }
}

/// What `Op::SetLlm` asked for, checked.
#[derive(Debug, PartialEq)]
pub(crate) struct LlmChoice {
    pub engine: LlmEngineKind,
    pub base_url: String,
    pub model: String,
}

/// Why a `set_llm` was refused. Messages are for the user; they never contain a key.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum SetLlmError {
    #[error("set_llm: `base_url` {0:?} must start with http:// or https://")]
    NotHttp(String),
    #[error("set_llm: `model` must not be empty")]
    NoModel,
    #[error(
        "set_llm: `api_key_env` {0:?} is not an API-key variable (use a name like OPENAI_API_KEY)"
    )]
    NotAKeyVariable(String),
    #[error(
        "set_llm: the environment variable {0} is not set for Tomo (set it before starting Tomo)"
    )]
    Unset(String),
    #[error("set_llm: `api_key_env`: {0}")]
    Misdirected(String),
    #[error(
        "set_llm: the embedded brain takes no `{0}` (it runs on this computer with an address and a token \
         of its own)"
    )]
    NotForEmbedded(&'static str),
}

/// Validates the request and builds the new overrides. The embedded brain takes only a model name (the
/// default when empty; the brain checks it is installed) and leaves the user's key where it was bound:
/// the engine gets its own token, never that key.
pub(crate) fn choose(
    engine: LlmEngineKind,
    base_url: &str,
    model: &str,
    api_key_env: Option<&str>,
    current: &LlmOverrides,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<(LlmChoice, LlmOverrides), SetLlmError> {
    match engine {
        LlmEngineKind::OpenAi => choose_endpoint(base_url, model, api_key_env, current, lookup),
        LlmEngineKind::Embedded => {
            if !base_url.trim().is_empty() {
                return Err(SetLlmError::NotForEmbedded("base_url"));
            }
            if api_key_env.is_some_and(|name| !name.trim().is_empty()) {
                return Err(SetLlmError::NotForEmbedded("api_key_env"));
            }
            let model = Some(model.trim())
                .filter(|m| !m.is_empty())
                .unwrap_or(DEFAULT_EMBEDDED_MODEL)
                .to_owned();
            let overrides = LlmOverrides {
                engine: Some(LlmEngine::Embedded),
                base_url: None,
                model: Some(model.clone()),
                api_key: current.api_key.clone(),
                api_key_origin: current.api_key_origin.clone(),
            };
            let choice = LlmChoice {
                engine,
                base_url: String::new(),
                model,
            };
            Ok((choice, overrides))
        }
    }
}

/// An OpenAI-compatible endpoint: `current` supplies the key when no variable is named, and only for the
/// host it was configured for.
fn choose_endpoint(
    base_url: &str,
    model: &str,
    api_key_env: Option<&str>,
    current: &LlmOverrides,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<(LlmChoice, LlmOverrides), SetLlmError> {
    let base_url = base_url.trim().trim_end_matches('/').to_owned();
    let Some(new_origin) = keys::origin(&base_url) else {
        return Err(SetLlmError::NotHttp(base_url));
    };
    let model = model.trim().to_owned();
    if model.is_empty() {
        return Err(SetLlmError::NoModel);
    }
    let (api_key, api_key_origin) = match api_key_env.map(str::trim).filter(|n| !n.is_empty()) {
        None if current.api_key_origin.as_deref() == Some(new_origin.as_str()) => {
            (current.api_key.clone(), current.api_key_origin.clone())
        }
        None => {
            if current.api_key.is_some() {
                tracing::info!(host = %new_origin, "the API key stays with its own endpoint; none is sent to the new one");
            }
            (None, None)
        }
        Some(name) => {
            let allowed = name.ends_with("API_KEY")
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if !allowed {
                return Err(SetLlmError::NotAKeyVariable(name.to_owned()));
            }
            if let Some(problem) = keys::misdirected_key(name, &base_url) {
                return Err(SetLlmError::Misdirected(problem));
            }
            match lookup(name).filter(|key| !key.is_empty()) {
                Some(key) => (Some(key), Some(new_origin)),
                None => return Err(SetLlmError::Unset(name.to_owned())),
            }
        }
    };
    let overrides = LlmOverrides {
        engine: Some(LlmEngine::OpenAi),
        base_url: Some(base_url.clone()),
        model: Some(model.clone()),
        api_key,
        api_key_origin,
    };
    let choice = LlmChoice {
        engine: LlmEngineKind::OpenAi,
        base_url,
        model,
    };
    Ok((choice, overrides))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "DEEPSEEK_API_KEY" => Some("sk-secret".to_owned()),
            "EMPTY_API_KEY" => Some(String::new()),
            "AWS_SECRET_ACCESS_KEY" => Some("aws".to_owned()),
            _ => None,
        }
    }

    /// A key configured for a local server.
    fn current() -> LlmOverrides {
        LlmOverrides {
            api_key: Some("old".to_owned()),
            api_key_origin: keys::origin("http://127.0.0.1:11434/v1"),
            ..LlmOverrides::default()
        }
    }

    #[test]
    fn a_preset_with_a_key_variable_sets_url_model_and_key() {
        let (choice, overrides) = choose(
            LlmEngineKind::OpenAi,
            "https://api.deepseek.com/v1/",
            " deepseek-chat ",
            Some("DEEPSEEK_API_KEY"),
            &current(),
            env,
        )
        .unwrap();
        assert_eq!(choice.base_url, "https://api.deepseek.com/v1");
        assert_eq!(choice.model, "deepseek-chat");
        assert_eq!(overrides.api_key.as_deref(), Some("sk-secret"));
    }

    #[test]
    fn without_a_variable_the_current_key_stays() {
        let (_, overrides) = choose(
            LlmEngineKind::OpenAi,
            "http://127.0.0.1:11434/v1",
            "qwen2.5:3b",
            None,
            &current(),
            env,
        )
        .unwrap();
        assert_eq!(overrides.api_key.as_deref(), Some("old"));
    }

    #[test]
    fn bad_requests_are_refused_without_leaking_keys() {
        let refuse = |url: &str, model: &str, var: Option<&str>| {
            choose(LlmEngineKind::OpenAi, url, model, var, &current(), env)
                .unwrap_err()
                .to_string()
        };
        assert!(refuse("ftp://x", "m", None).contains("base_url"));
        assert!(refuse("http://x/v1", " ", None).contains("model"));
        let other_secret = refuse("http://evil/v1", "m", Some("AWS_SECRET_ACCESS_KEY"));
        assert!(
            other_secret.contains("not an API-key variable"),
            "{other_secret}"
        );
        assert!(!other_secret.contains("aws"));
        assert!(refuse("http://x/v1", "m", Some("MISSING_API_KEY")).contains("is not set"));
        assert!(refuse("http://x/v1", "m", Some("EMPTY_API_KEY")).contains("is not set"));
        assert!(refuse("http://x/v1", "m", Some("lower_api_key")).contains("not an API-key"));
    }

    #[test]
    fn the_key_never_follows_a_new_host_unless_its_variable_is_named() {
        let (_, overrides) = choose(
            LlmEngineKind::OpenAi,
            "https://evil.example/v1",
            "m",
            None,
            &current(),
            env,
        )
        .unwrap();
        assert_eq!(
            overrides.api_key, None,
            "no key for a host it was not configured for"
        );
        // Same host, other path: same endpoint.
        let (_, overrides) = choose(
            LlmEngineKind::OpenAi,
            "http://127.0.0.1:11434",
            "m",
            None,
            &current(),
            env,
        )
        .unwrap();
        assert_eq!(overrides.api_key.as_deref(), Some("old"));
        // A provider's key does not go to another host even when named.
        let refused = choose(
            LlmEngineKind::OpenAi,
            "https://evil.example/v1",
            "m",
            Some("DEEPSEEK_API_KEY"),
            &current(),
            env,
        )
        .unwrap_err();
        assert!(matches!(refused, SetLlmError::Misdirected(_)), "{refused}");
        assert!(!refused.to_string().contains("sk-secret"));
    }

    #[test]
    fn the_embedded_preset_takes_a_model_only_and_the_key_stays_bound_to_its_endpoint() {
        let (choice, overrides) =
            choose(LlmEngineKind::Embedded, "", " ", None, &current(), env).unwrap();
        assert_eq!(choice.engine, LlmEngineKind::Embedded);
        assert_eq!(choice.model, DEFAULT_EMBEDDED_MODEL);
        assert_eq!(overrides.engine, Some(LlmEngine::Embedded));
        assert_eq!(overrides.base_url, None);
        // The key is not handed to anything new: it stays bound to the endpoint it was set for, so a
        // later switch back there (and only there) finds it.
        assert_eq!(overrides.api_key_origin, current().api_key_origin);
        let (_, back) = choose(
            LlmEngineKind::OpenAi,
            "http://127.0.0.1:11434/v1",
            "qwen2.5:3b",
            None,
            &overrides,
            env,
        )
        .unwrap();
        assert_eq!(back.api_key.as_deref(), Some("old"));
        let (_, elsewhere) = choose(
            LlmEngineKind::OpenAi,
            "https://evil.example/v1",
            "m",
            None,
            &overrides,
            env,
        )
        .unwrap();
        assert_eq!(elsewhere.api_key, None);
        for (url, var) in [
            ("http://127.0.0.1:9/v1", None),
            ("", Some("DEEPSEEK_API_KEY")),
        ] {
            let refused =
                choose(LlmEngineKind::Embedded, url, "m", var, &current(), env).unwrap_err();
            assert!(
                matches!(refused, SetLlmError::NotForEmbedded(_)),
                "{refused}"
            );
        }
    }

    #[test]
    fn overrides_resolve_to_the_embedded_brain_or_an_endpoint() {
        let embedded: LlmConfig = toml::from_str("engine = \"embedded\"").unwrap();
        let endpoint: LlmConfig = toml::from_str("model = \"qwen2.5:3b\"").unwrap();
        let none = LlmOverrides::default();
        let brain = |model: &str| Brain::Embedded {
            model: model.to_owned(),
        };
        assert_eq!(resolve(&embedded, &none), brain(DEFAULT_EMBEDDED_MODEL));
        let model = LlmOverrides {
            model: Some("smollm2-135m".into()),
            ..LlmOverrides::default()
        };
        assert_eq!(resolve(&embedded, &model), brain("smollm2-135m"));
        // --llm-base-url wins over an embedded profile.
        let url = LlmOverrides {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            ..LlmOverrides::default()
        };
        assert!(
            matches!(resolve(&embedded, &url), Brain::Endpoint { base_url, .. } if base_url.ends_with(":8080/v1"))
        );
        assert_eq!(
            resolve(&endpoint, &none),
            Brain::Endpoint {
                base_url: "http://127.0.0.1:11434/v1".into(),
                model: "qwen2.5:3b".into()
            }
        );
        // The embedded preset wins over an endpoint profile.
        let preset = LlmOverrides {
            engine: Some(LlmEngine::Embedded),
            ..LlmOverrides::default()
        };
        assert_eq!(resolve(&endpoint, &preset), brain(DEFAULT_EMBEDDED_MODEL));
    }
}
