//! A whole voice turn through a real device: session → pipeline → Piper → rodio on the PulseAudio null
//! sink. `on_after_playback` must fire only once the last sentence has really been played.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tomo_audio::RodioOutput;
use tomo_config::profile::parse_profile;
use tomo_core::session::{Environment, LlmOverrides, start_session};
use tomo_models::{ModelStatus, ModelStore};
use tomo_plugin_api::hooks::{Hook, HookContext, HookError, TurnRecord};
use tomo_protocol::{Event, Op, SessionState};
use tomo_speech::tts;
use tomo_speech::voice_sink::VoiceSink;
use tomo_testkit::{ScriptedServer, script};

#[derive(Default)]
struct Stamps {
    after_turn: Option<Instant>,
    after_playback: Option<Instant>,
}

struct StampHook(Arc<Mutex<Stamps>>);

impl Hook for StampHook {
    fn name(&self) -> &str {
        "stamps"
    }

    fn on_after_turn(
        &self,
        _: Arc<TurnRecord>,
        _: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<(), HookError>> {
        self.0.lock().unwrap().after_turn = Some(Instant::now());
        Box::pin(async { Ok(()) })
    }

    fn on_after_playback(
        &self,
        _: Arc<TurnRecord>,
        _: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<(), HookError>> {
        self.0.lock().unwrap().after_playback = Some(Instant::now());
        Box::pin(async { Ok(()) })
    }
}

fn ready_store() -> Option<ModelStore> {
    let store = ModelStore::from_env().unwrap();
    let ready = ["piper-en-joe", "onnxruntime"]
        .iter()
        .all(|m| matches!(store.status(m), Ok(ModelStatus::Installed)));
    if !ready {
        assert!(
            std::env::var_os("CI").is_none(),
            "the Piper voice is not installed"
        );
        println!("skipped: the Piper voice is not installed (tomo models install)");
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pulse-null.sh");
    let status = std::process::Command::new("bash")
        .arg(script)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    Some(store)
}

#[tokio::test(flavor = "multi_thread")]
async fn after_playback_fires_once_the_last_sentence_has_played() {
    let Some(store) = ready_store() else { return };
    let server = ScriptedServer::start(vec![script::text_reply(
        "[joy] Hello there! This is the second sentence. And here is the third one.",
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = parse_profile(
        "[character]\nname = \"Hana\"\nagent_id = \"hana\"\npersona = \"p\"\n[llm]\nmodel = \"m\"\n\
         [live2d.emotion_map]\njoy = \"f01\"\n[plugins]\nenabled = []\n",
        Path::new("voice.toml"),
    )
    .unwrap()
    .profile;
    let voice = tts::from_config("piper", "en_US-joe-medium", 1.0, &store.root).unwrap();
    assert_eq!(voice.name(), "piper", "the neural voice, not a fallback");
    let output = Arc::new(RodioOutput::open(None).unwrap());
    let sink = Arc::new(VoiceSink::new(Arc::from(voice), output, 2));
    let stamps = Arc::new(Mutex::new(Stamps::default()));
    let env = Environment {
        plugins_dir: dir.path().join("plugins"),
        data_root: dir.path().to_path_buf(),
        llm: LlmOverrides {
            base_url: Some(server.base_url()),
            ..LlmOverrides::default()
        },
        llm_connector: std::sync::Arc::new(tomo_openai::OpenAiConnector),
        hook_timeout: Duration::from_secs(5),
        extra_hooks: vec![Arc::new(StampHook(Arc::clone(&stamps)))],
        plugin_factories: tomo_plugins::builtin_factories(),
    };
    let (session, mut events) = start_session(profile, env, sink).await.unwrap();
    session
        .send(Op::UserText { text: "hi".into() })
        .await
        .unwrap();

    let mut first_audio: Option<Instant> = None;
    let mut spoken = Duration::ZERO;
    let mut order = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let envelope = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap()
            .unwrap();
        match &envelope.event {
            Event::AudioStarted {
                sentence_index,
                duration_ms,
                ..
            } => {
                first_audio.get_or_insert_with(Instant::now);
                spoken += Duration::from_millis(u64::from(*duration_ms));
                order.push(format!("start {sentence_index}"));
            }
            Event::AudioFinished { sentence_index, .. } => {
                order.push(format!("end {sentence_index}"))
            }
            Event::PlaybackDrained { .. } => order.push("drained".into()),
            Event::StateChanged {
                to: SessionState::Idle,
                ..
            } => break,
            _ => {}
        }
    }
    assert_eq!(
        order,
        [
            "start 0", "end 0", "start 1", "end 1", "start 2", "end 2", "drained"
        ]
    );
    let stamps = stamps.lock().unwrap();
    let (after_turn, after_playback) = (stamps.after_turn.unwrap(), stamps.after_playback.unwrap());
    assert!(after_turn < after_playback);
    // The sink drained only after the device had time to play every sample. The start is stamped when
    // this test receives `AudioStarted`, several thread hops after the device pulled the first sample:
    // slack for those hops on a loaded machine (the audio lasts seconds, so an early drain still shows).
    let played = after_playback.duration_since(first_audio.unwrap());
    assert!(
        played + Duration::from_millis(150) >= spoken,
        "drained after {played:?}, audio lasts {spoken:?}"
    );
}
