//! Keys never reach the user's screen, the logs or the history: a server that echoes the key it was
//! sent (in an error body, a "your key sk-... is invalid" message) has it replaced before the text goes
//! anywhere.

/// What stands where a key was.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not treated as secrets: replacing a three-letter "key" would mangle ordinary words.
const MIN_SECRET_CHARS: usize = 8;

/// `text` with every occurrence of each secret replaced by [`REDACTED`].
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        let secret = secret.trim();
        if secret.chars().count() >= MIN_SECRET_CHARS && out.contains(secret) {
            out = out.replace(secret, REDACTED);
        }
    }
    out
}

/// The values of the process's variables that hold keys by their name (`*_API_KEY`, `*_TOKEN`,
/// `*_SECRET`, `TOMO_LLM_API_KEY`, ...): what may be echoed back by a server it was sent to.
pub fn secrets_from_env() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| names_a_secret(name))
        .map(|(_, value)| value)
        .filter(|value| value.trim().chars().count() >= MIN_SECRET_CHARS)
        .collect()
}

/// Whether a variable of this name holds a secret.
pub fn names_a_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_KEY"]
        .iter()
        .any(|suffix| upper.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_everywhere_short_values_are_not() {
        let text = "invalid key sk-live-1234567890, got sk-live-1234567890 twice; id abc";
        assert_eq!(
            redact(text, &["sk-live-1234567890", "abc"]),
            "invalid key [redacted], got [redacted] twice; id abc"
        );
        assert!(names_a_secret("OPENAI_API_KEY"));
        assert!(names_a_secret("github_token"));
        assert!(!names_a_secret("PATH"));
    }
}
