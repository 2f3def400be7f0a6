//! The last line of defence for keys: every text an event carries to clients (and from there to the
//! replay buffer and the logs of front ends) has the session's known secrets replaced. The OpenAI client
//! already redacts its own key from its errors; this also covers a tool, hook or plugin that repeats a
//! key it found, and keys of other variables.

use tomo_llm::redact::{redact, secrets_from_env};
use tomo_protocol::Event;

/// The values to hide: the front end's key, the profile's key variable and every variable whose name
/// says it holds a secret.
pub(crate) fn session_secrets(api_key: Option<&str>, profile_key_env: Option<&str>) -> Vec<String> {
    let mut secrets = secrets_from_env();
    secrets.extend(api_key.map(str::to_owned));
    secrets.extend(
        profile_key_env
            .and_then(|name| std::env::var(name).ok())
            .filter(|value| !value.trim().is_empty()),
    );
    secrets.sort();
    secrets.dedup();
    secrets
}

/// `event` with the secrets replaced in its error and notice texts and in tool results.
pub(crate) fn redact_event(event: Event, secrets: &[String]) -> Event {
    if secrets.is_empty() {
        return event;
    }
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let r = |text: String| redact(&text, &secrets);
    match event {
        Event::Error {
            code,
            message,
            recoverable,
        } => Event::Error {
            code,
            message: r(message),
            recoverable,
        },
        Event::Notice { level, message } => Event::Notice {
            level,
            message: r(message),
        },
        Event::HookFailed {
            turn_id,
            hook,
            stage,
            message,
        } => Event::HookFailed {
            turn_id,
            hook,
            stage,
            message: r(message),
        },
        Event::ToolCall { turn_id, mut call } => {
            call.result = call.result.map(r);
            Event::ToolCall { turn_id, call }
        }
        Event::SensorStatus { plugin, state } => Event::SensorStatus {
            plugin,
            state: match state {
                tomo_protocol::SensorState::Error { message } => {
                    tomo_protocol::SensorState::Error {
                        message: r(message),
                    }
                }
                other => other,
            },
        },
        other => other,
    }
}
