//! Which host an API key may go to. A key is bound to the endpoint it was configured for: a new base URL
//! gets no key unless the user names the variable that holds the key for that host. And the well-known
//! provider variables belong to their provider: a profile (perhaps downloaded) that sends
//! `OPENAI_API_KEY` to another host would hand the user's OpenAI key to a stranger.

/// A portable environment variable name: a letter or `_`, then letters, digits and `_`.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `scheme://host:port` of an http(s) URL, lowercased, with the default port filled in; `None` when
/// `url` is not http(s). Two URLs may share a key when their origins are equal.
pub fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // user:password@ never counts as part of the host.
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (format!("[{host}]"), after.strip_prefix(':'))
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (host_port.to_owned(), None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port: u16 = match port {
        Some(port) => port.parse().ok()?,
        None => default_port,
    };
    Some(format!("{scheme}://{}:{port}", host.to_ascii_lowercase()))
}

/// The provider host a well-known key variable belongs to.
pub fn provider_host(variable: &str) -> Option<&'static str> {
    Some(match variable {
        "OPENAI_API_KEY" => "api.openai.com",
        "DEEPSEEK_API_KEY" => "api.deepseek.com",
        "OPENROUTER_API_KEY" => "openrouter.ai",
        "GROQ_API_KEY" => "api.groq.com",
        "MISTRAL_API_KEY" => "api.mistral.ai",
        "ANTHROPIC_API_KEY" => "api.anthropic.com",
        "GEMINI_API_KEY" | "GOOGLE_API_KEY" => "generativelanguage.googleapis.com",
        "TOGETHER_API_KEY" => "api.together.xyz",
        "DASHSCOPE_API_KEY" => "dashscope.aliyuncs.com",
        "MOONSHOT_API_KEY" => "api.moonshot.cn",
        "XAI_API_KEY" => "api.x.ai",
        _ => return None,
    })
}

/// Why a variable's key must not go to `base_url`: it is a provider's key and `base_url` is not that
/// provider. `None`: fine (an own variable, or the provider itself).
pub fn misdirected_key(variable: &str, base_url: &str) -> Option<String> {
    let provider = provider_host(variable)?;
    let host = origin(base_url)?;
    let host = host
        .split_once("://")
        .map(|(_, rest)| rest.rsplit_once(':').map_or(rest, |(h, _)| h))
        .unwrap_or_default()
        .to_owned();
    (host != provider && !host.ends_with(&format!(".{provider}"))).then(|| {
        format!(
            "{variable} holds your key for {provider}, and this would send it to {host}; for another \
             endpoint put its key in a variable of your own (e.g. MYSERVER_API_KEY) and name that"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert_eq!(
            origin("https://API.openai.com/v1").as_deref(),
            Some("https://api.openai.com:443")
        );
        assert_eq!(
            origin("http://127.0.0.1:11434/v1"),
            origin("http://127.0.0.1:11434")
        );
        assert_ne!(
            origin("http://127.0.0.1:11434/v1"),
            origin("http://127.0.0.1:11435/v1")
        );
        assert_ne!(
            origin("http://api.openai.com/v1"),
            origin("https://api.openai.com/v1")
        );
        assert_eq!(
            origin("http://user:pw@evil.example/v1").as_deref(),
            Some("http://evil.example:80")
        );
        assert_eq!(
            origin("http://[::1]:8080/v1").as_deref(),
            Some("http://[::1]:8080")
        );
        assert_eq!(origin("ftp://x"), None);
        assert_eq!(origin("http://:80/"), None);
    }

    #[test]
    fn provider_keys_stay_with_their_provider() {
        assert!(misdirected_key("OPENAI_API_KEY", "https://api.openai.com/v1").is_none());
        let refused = misdirected_key("OPENAI_API_KEY", "https://evil.example/v1").unwrap();
        assert!(refused.contains("evil.example"), "{refused}");
        assert!(
            misdirected_key("OPENAI_API_KEY", "https://api.openai.com.evil.example/v1").is_some()
        );
        assert!(misdirected_key("MY_OWN_API_KEY", "https://anything.example").is_none());
    }
}
