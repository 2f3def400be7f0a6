//! Changing what the session talks to while it runs: another LLM endpoint (`set_llm`, the settings'
//! presets) and another character's voice (`switch_profile` asks the output sink to switch voices).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tomo_config::profile::Profile;
use tomo_core::sink::{OutputSink, SinkError};
use tomo_protocol::{ErrorCode, Event, LlmEngineKind, Op, Sentence, TurnId};
use tomo_testkit::{ScriptedServer, script};

use support::session::{
    collect_until, environment, is_idle, say, start, text_session, write_profile,
};

#[tokio::test]
async fn set_llm_moves_the_next_turns_to_the_new_endpoint_and_refuses_bad_requests() {
    let first = ScriptedServer::start(vec![script::text_reply("From the first model.")])
        .await
        .unwrap();
    let second = ScriptedServer::start(vec![script::text_reply("From the second model.")])
        .await
        .unwrap();
    let (_dir, session, mut events) = text_session(&first).await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    say(&session, "hello").await;
    collect_until(&mut events, is_idle).await;

    // A request that names some other secret of the environment is refused; the endpoint stays.
    session
        .send(Op::SetLlm {
            engine: LlmEngineKind::OpenAi,
            base_url: second.base_url(),
            model: "second-model".into(),
            api_key_env: Some("HOME".into()),
        })
        .await
        .unwrap();
    let refused = collect_until(&mut events, |e| matches!(e, Event::Error { .. })).await;
    assert!(matches!(
        &refused.last().unwrap().event,
        Event::Error { code: ErrorCode::Profile, message, .. } if message.contains("api_key_env")
    ));

    session
        .send(Op::SetLlm {
            engine: LlmEngineKind::OpenAi,
            base_url: second.base_url(),
            model: "second-model".into(),
            api_key_env: None,
        })
        .await
        .unwrap();
    let changed = collect_until(&mut events, |e| matches!(e, Event::LlmChanged { .. })).await;
    assert_eq!(
        changed.last().unwrap().event,
        Event::LlmChanged {
            engine: LlmEngineKind::OpenAi,
            base_url: second.base_url(),
            model: "second-model".into()
        }
    );
    say(&session, "and now?").await;
    let turn = collect_until(&mut events, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert!(turn.iter().any(|e| matches!(&e.event,
        Event::TurnFinished { text, .. } if text == "From the second model.")));
    assert_eq!(
        first.requests().len(),
        1,
        "the old endpoint got no further request"
    );
    let asked = &second.requests()[0];
    assert_eq!(asked.body["model"], "second-model");
    // The conversation goes on: the first turn is in the context the new model sees.
    assert!(asked.body.to_string().contains("From the first model."));
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}

/// Records the voices it is asked to speak with.
#[derive(Default)]
struct VoiceProbe {
    voices: Mutex<Vec<String>>,
}

impl OutputSink for VoiceProbe {
    fn enqueue(&self, _turn: TurnId, _sentence: Sentence) -> Result<(), SinkError> {
        Ok(())
    }

    fn finish_turn(&self, _turn: TurnId) -> BoxFuture<'static, Result<(), SinkError>> {
        Box::pin(async { Ok(()) })
    }

    fn interrupt(&self) {}

    fn switch_voice(&self, profile: &Profile) -> BoxFuture<'static, Result<(), SinkError>> {
        self.voices
            .lock()
            .unwrap()
            .push(format!("{}:{}", profile.character.name, profile.tts.voice));
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_character_switch_asks_the_sink_for_the_new_characters_voice() {
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hana = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let kuro = write_profile(dir.path(), "kuro.toml", "Kuro", "kuro", &server.base_url());
    let text = std::fs::read_to_string(&kuro).unwrap();
    std::fs::write(
        &kuro,
        format!("{text}\n[tts]\nengine = \"flite\"\nvoice = \"kal\"\n"),
    )
    .unwrap();
    let probe = Arc::new(VoiceProbe::default());
    let (session, mut events) = start(&hana, environment(dir.path(), vec![]), probe.clone()).await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    session
        .send(Op::SwitchProfile {
            path: kuro.display().to_string(),
        })
        .await
        .unwrap();
    collect_until(
        &mut events,
        |e| matches!(e, Event::SessionReady { character, .. } if character == "Kuro"),
    )
    .await;
    assert_eq!(*probe.voices.lock().unwrap(), ["Kuro:kal"]);
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}
