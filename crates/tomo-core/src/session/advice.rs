//! What the user reads when the language model cannot be reached: what happened, then what to do about
//! it in plain words (start the server, pick another preset, or go back to the brain that needs none).

use tomo_llm::LlmError;

use super::character::is_loopback_url;

/// The text of the error event for a turn whose LLM request failed. `embedded`: the character talks to
/// the embedded brain (its own errors already say what to do).
pub(crate) fn llm_error_message(error: &LlmError, base_url: &str, embedded: bool) -> String {
    let reachability = matches!(error, LlmError::Unreachable { .. } | LlmError::Timeout(_));
    if !reachability {
        return error.to_string();
    }
    if embedded {
        return format!(
            "{error}. The embedded brain is not answering: if this keeps happening, restart Tomo, or pick \
             another language model in Settings → Language model."
        );
    }
    let first = if is_loopback_url(base_url) {
        "if it runs on this computer (Ollama, LM Studio, a llama.cpp server), start it"
    } else {
        "check the address and your internet connection"
    };
    format!(
        "{error}. What to do: {first}; or pick another preset in Settings → Language model; or switch back \
         to \"Embedded (on this computer)\" there, the brain that comes with Tomo and needs no server \
         (for `tomo`: a profile with `engine = \"embedded\"`)."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> LlmError {
        LlmError::Unreachable {
            url: url.to_owned(),
            message: "tcp connect error: Connection refused (os error 111)".to_owned(),
        }
    }

    #[test]
    fn an_unreachable_local_server_says_start_it_pick_another_or_go_back_to_the_embedded_brain() {
        let url = "http://127.0.0.1:11434/v1";
        let text = llm_error_message(&refused(url), url, false);
        assert!(text.starts_with("cannot reach the LLM server at http://127.0.0.1:11434/v1"));
        assert!(text.contains("start it"), "{text}");
        assert!(text.contains("pick another preset"), "{text}");
        assert!(text.contains("Embedded (on this computer)"), "{text}");
        let remote = "https://api.example.com/v1";
        let text = llm_error_message(&refused(remote), remote, false);
        assert!(
            text.contains("internet connection") && !text.contains("start it"),
            "{text}"
        );
    }

    #[test]
    fn other_errors_and_the_embedded_brain_keep_their_own_words() {
        let http = LlmError::Http {
            status: 401,
            message: "bad key".into(),
        };
        assert_eq!(
            llm_error_message(&http, "http://x", false),
            http.to_string()
        );
        let brain = LlmError::Brain("the embedded LLM `x` is not installed".into());
        assert_eq!(llm_error_message(&brain, "", true), brain.to_string());
        let text = llm_error_message(
            &refused("http://127.0.0.1:5/v1"),
            "http://127.0.0.1:5/v1",
            true,
        );
        assert!(
            text.contains("restart Tomo") && !text.contains("switch back"),
            "{text}"
        );
    }
}
