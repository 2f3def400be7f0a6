//! `set_llm`: the user picks another endpoint in the settings (a preset or their own). The API key never
//! travels with the request: the client names an environment variable that holds it, and only variables
//! whose names say they hold an API key may be read, so a client cannot make the session send some other
//! secret of this process's environment to an endpoint of its choosing.

use super::LlmOverrides;

/// What `Op::SetLlm` asked for, checked.
#[derive(Debug, PartialEq)]
pub(crate) struct LlmChoice {
    pub base_url: String,
    pub model: String,
}

/// Validates the request and builds the new overrides; `current` supplies the key when no variable is
/// named. Errors are messages for the user (they never contain a key).
pub(crate) fn choose(
    base_url: &str,
    model: &str,
    api_key_env: Option<&str>,
    current: &LlmOverrides,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<(LlmChoice, LlmOverrides), String> {
    let base_url = base_url.trim().trim_end_matches('/').to_owned();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(format!(
            "set_llm: `base_url` {base_url:?} must start with http:// or https://"
        ));
    }
    let model = model.trim().to_owned();
    if model.is_empty() {
        return Err("set_llm: `model` must not be empty".to_owned());
    }
    let api_key = match api_key_env.map(str::trim).filter(|n| !n.is_empty()) {
        None => current.api_key.clone(),
        Some(name) => {
            let allowed = name.ends_with("API_KEY")
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if !allowed {
                return Err(format!(
                    "set_llm: `api_key_env` {name:?} is not an API-key variable (use a name like OPENAI_API_KEY)"
                ));
            }
            match lookup(name).filter(|key| !key.is_empty()) {
                Some(key) => Some(key),
                None => {
                    return Err(format!(
                        "set_llm: the environment variable {name} is not set for Tomo (set it before starting Tomo)"
                    ));
                }
            }
        }
    };
    let overrides = LlmOverrides {
        base_url: Some(base_url.clone()),
        model: Some(model.clone()),
        api_key,
    };
    Ok((LlmChoice { base_url, model }, overrides))
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

    fn current() -> LlmOverrides {
        LlmOverrides {
            api_key: Some("old".to_owned()),
            ..LlmOverrides::default()
        }
    }

    #[test]
    fn a_preset_with_a_key_variable_sets_url_model_and_key() {
        let (choice, overrides) = choose(
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
            choose(url, model, var, &current(), env).unwrap_err()
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
}
