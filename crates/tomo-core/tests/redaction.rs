//! No event carries the user's key: not an LLM error that echoes it, not a hook that repeats it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use futures::future::BoxFuture;
use tomo_core::sink::TextSink;
use tomo_plugin_api::hooks::{Hook, HookContext, HookError};
use tomo_protocol::Event;
use tomo_testkit::{ScriptedResponse, ScriptedServer, script};

use support::session::{collect_until, environment, is_idle, say, start, write_profile};

const KEY: &str = "sk-user-key-0123456789";

/// A memory service that quotes the token it was refused with.
struct Quoting;

impl Hook for Quoting {
    fn name(&self) -> &str {
        "quoting"
    }

    fn on_before_turn(
        &self,
        _user_text: String,
        _ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<Option<String>, HookError>> {
        Box::pin(async { Err(HookError(format!("token {KEY} was refused"))) })
    }
}

#[tokio::test]
async fn echoed_keys_are_redacted_from_every_event() {
    let server = ScriptedServer::start(vec![
        ScriptedResponse::Status {
            code: 401,
            message: format!("Incorrect API key provided: {KEY}"),
        },
        script::text_reply("Hello."),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let mut env = environment(dir.path(), vec![Arc::new(Quoting)]);
    env.llm.api_key = Some(KEY.to_owned());
    env.llm.api_key_origin = tomo_config::keys::origin(&server.base_url());
    let (session, mut events) = start(&profile, env, Arc::new(TextSink)).await;
    say(&session, "hi").await;
    let mut seen = collect_until(&mut events, is_idle).await;
    say(&session, "again").await;
    seen.extend(collect_until(&mut events, is_idle).await);
    // The key did go to its own server (it was configured for it) ...
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    // ... and came back in an error and a hook failure, neither of which shows it.
    let texts: Vec<String> = seen
        .iter()
        .filter_map(|e| match &e.event {
            Event::Error { message, .. } | Event::HookFailed { message, .. } => {
                Some(message.clone())
            }
            _ => None,
        })
        .collect();
    assert!(texts.iter().any(|t| t.contains("HTTP 401")), "{texts:#?}");
    assert!(
        texts
            .iter()
            .any(|t| t.contains("token [redacted] was refused")),
        "{texts:#?}"
    );
    let all = serde_json::to_string(&seen).unwrap();
    assert!(!all.contains(KEY), "{all}");
}
