//! The embedded brain through the session's seams: `set_llm`'s embedded preset reaches the connector's
//! embedded side, and the session warms the next request's prefix (system prompt + history + tools) when a
//! character loads and after a turn. The "engine" here is a scripted OpenAI-compatible server behind a
//! model that records its warm-ups; the real engine's cache hits are proven in tomo-runtime's tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use tomo_core::session::Environment;
use tomo_llm::{
    ChatMessage, ChatModel, EmbeddedRequest, LlmClient, LlmConnector, LlmEndpoint, LlmError,
    LlmStream, ToolDefinition, WarmedUp,
};
use tomo_protocol::{ErrorCode, Event, LlmEngineKind, Op};
use tomo_testkit::{ScriptedServer, script};

use support::session::{collect_until, environment, is_idle, say, start, write_profile};
use support::voice;

/// Warm-ups seen by the "embedded" models: (model, messages as JSON, tool names).
type Seen = Arc<Mutex<Vec<(String, serde_json::Value, Vec<String>)>>>;

struct Recording {
    inner: LlmClient,
    model: String,
    seen: Seen,
}

impl ChatModel for Recording {
    fn endpoint(&self) -> &LlmEndpoint {
        self.inner.endpoint()
    }

    fn stream_chat<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<LlmStream, LlmError>> {
        Box::pin(self.inner.stream_chat(messages, tools))
    }

    fn warm_up<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<Option<WarmedUp>, LlmError>> {
        let names = tools.iter().map(|t| t.function.name.clone()).collect();
        self.seen.lock().unwrap().push((
            self.model.clone(),
            serde_json::to_value(messages).unwrap(),
            names,
        ));
        Box::pin(async {
            Ok(Some(WarmedUp {
                prompt_tokens: 1,
                cached_tokens: 0,
                elapsed: Duration::ZERO,
            }))
        })
    }
}

/// Endpoints through the OpenAI client; "embedded" models on the scripted server, recording warm-ups.
struct Connector {
    server_url: String,
    seen: Seen,
}

impl LlmConnector for Connector {
    fn connect(&self, endpoint: LlmEndpoint) -> Result<LlmClient, LlmError> {
        tomo_openai::connect(endpoint)
    }

    fn connect_embedded(
        &self,
        request: EmbeddedRequest,
    ) -> BoxFuture<'_, Result<LlmClient, LlmError>> {
        Box::pin(async move {
            if request.model != "tiny" {
                return Err(LlmError::Brain(format!(
                    "no embedded model `{}`",
                    request.model
                )));
            }
            let inner = tomo_openai::connect(LlmEndpoint {
                base_url: self.server_url.clone(),
                model: request.model.clone(),
                api_key: None,
                temperature: request.temperature,
                max_tokens: request.max_tokens,
                idle_timeout: request.idle_timeout,
            })?;
            Ok(LlmClient::new(Recording {
                inner,
                model: request.model,
                seen: Arc::clone(&self.seen),
            }))
        })
    }
}

fn env_with(dir: &std::path::Path, server: &ScriptedServer, seen: &Seen) -> Environment {
    Environment {
        llm_connector: Arc::new(Connector {
            server_url: server.base_url(),
            seen: Arc::clone(seen),
        }),
        ..environment(dir, vec![])
    }
}

/// `set_llm` to the embedded brain's `model`.
fn embedded(model: &str) -> Op {
    Op::SetLlm {
        engine: LlmEngineKind::Embedded,
        base_url: String::new(),
        model: model.into(),
        api_key_env: None,
    }
}

async fn wait_for_warm_ups(seen: &Seen, count: usize) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while seen.lock().unwrap().len() < count {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the warm-up came");
}

#[tokio::test]
async fn the_embedded_preset_warms_the_prefix_at_load_and_after_each_turn() {
    let server = ScriptedServer::start(vec![
        script::text_reply("From the endpoint."),
        script::text_reply("[joy] From the embedded brain."),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let seen: Seen = Arc::default();
    let (session, mut events) = start(
        &profile,
        env_with(dir.path(), &server, &seen),
        Arc::new(tomo_core::sink::TextSink),
    )
    .await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    say(&session, "hello").await;
    collect_until(&mut events, is_idle).await;
    assert!(
        seen.lock().unwrap().is_empty(),
        "an endpoint is never warmed up"
    );

    // An unknown embedded model: refused by the brain, the endpoint stays.
    session.send(embedded("huge")).await.unwrap();
    let refused = collect_until(&mut events, |e| matches!(e, Event::Error { .. })).await;
    assert!(matches!(
        &refused.last().unwrap().event,
        Event::Error { code: ErrorCode::LlmUnreachable, message, recoverable: true }
            if message.contains("the embedded brain `huge`") && message.contains("no embedded model")
    ));
    // An address for the embedded brain makes no sense: refused before anything is tried.
    session
        .send(Op::SetLlm {
            engine: LlmEngineKind::Embedded,
            base_url: "http://evil.example/v1".into(),
            model: "tiny".into(),
            api_key_env: None,
        })
        .await
        .unwrap();
    let refused = collect_until(&mut events, |e| matches!(e, Event::Error { .. })).await;
    assert!(matches!(
        &refused.last().unwrap().event,
        Event::Error { code: ErrorCode::Profile, message, .. } if message.contains("takes no `base_url`")
    ));

    session.send(embedded("tiny")).await.unwrap();
    let changed = collect_until(&mut events, |e| matches!(e, Event::LlmChanged { .. })).await;
    assert_eq!(
        changed.last().unwrap().event,
        Event::LlmChanged {
            engine: LlmEngineKind::Embedded,
            base_url: server.base_url(),
            model: "tiny".into()
        }
    );
    // At load: the system prompt and the conversation so far, without a user message of its own.
    wait_for_warm_ups(&seen, 1).await;
    {
        let seen = seen.lock().unwrap();
        let (model, messages, _) = &seen[0];
        assert_eq!(model, "tiny");
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(
            messages.as_array().unwrap().last().unwrap(),
            &json!({"role": "assistant", "content": "From the endpoint."})
        );
    }
    say(&session, "and now?").await;
    collect_until(&mut events, is_idle).await;
    // After the turn: the prefix of the next one, which now ends with this answer.
    wait_for_warm_ups(&seen, 2).await;
    let requests = server.requests();
    let sent = &requests.last().unwrap().body["messages"];
    {
        let seen = seen.lock().unwrap();
        let (_, after, _) = &seen[1];
        let after = after.as_array().unwrap();
        assert_eq!(
            after.last().unwrap()["content"],
            "[joy] From the embedded brain."
        );
        // The request that was sent starts with exactly what was warmed at load.
        let at_load = seen[0].1.as_array().unwrap();
        assert_eq!(&sent.as_array().unwrap()[..at_load.len()], &at_load[..]);
    }
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}

#[tokio::test]
async fn on_speakers_the_next_prefix_is_warmed_once_the_answer_was_heard() {
    let server = ScriptedServer::start(vec![script::text_reply("[joy] Heard to the end.")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let seen: Seen = Arc::default();
    let speakers = Arc::new(voice::Speakers::default());
    let (session, mut events) = start(
        &profile,
        env_with(dir.path(), &server, &seen),
        speakers.clone(),
    )
    .await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    session.send(embedded("tiny")).await.unwrap();
    collect_until(&mut events, |e| matches!(e, Event::LlmChanged { .. })).await;
    wait_for_warm_ups(&seen, 1).await;

    say(&session, "tell me").await;
    collect_until(&mut events, |e| matches!(e, Event::TurnFinished { .. })).await;
    // The answer is written but still playing: it is not in the history yet, and a prefix warmed
    // now would leave the next turn evaluating it again.
    speakers.play_to_the_end();
    collect_until(&mut events, is_idle).await;
    wait_for_warm_ups(&seen, 2).await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "one warm-up after the turn");
        let after = seen[1].1.as_array().unwrap();
        assert_eq!(
            after.last().unwrap(),
            &json!({"role": "assistant", "content": "[joy] Heard to the end."})
        );
    }
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}
