//! Game-companion mode end to end: a real window on a private X desktop, the `screen_watch` sensor
//! (xcap + PP-OCR) inside a real session, the `mood_chat` scheduler, and the scripted OpenAI-compatible
//! server recording what the character was asked. A high mood and new text on the watched window must make
//! the character speak up on its own, with the window's text in the user-role message of that request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::desktop::{close_window, ocr_desktop, open_window, render};
use tomo_config::profile::load_profile;
use tomo_core::session::{Environment, LlmOverrides, start_session};
use tomo_core::sink::TextSink;
use tomo_protocol::{Event, Op, SensorState};
use tomo_testkit::{ScriptedServer, script};
use tomo_vision::ScreenWatchFactory;

const TITLE: &str = "Tomo Companion Game";

fn profile(dir: &Path, base_url: &str) -> std::path::PathBuf {
    let path = dir.join("companion.toml");
    std::fs::write(
        &path,
        format!(
            r#"[character]
name = "Kuma"
agent_id = "kuma"
persona = "You watch the user's game."

[llm]
base_url = "{base_url}"
model = "scripted"

[plugins]
enabled = ["mood_chat", "screen_watch"]

[plugins.mood_chat]
initial = 90
baseline = 90
observation_factor = 0.5

[[plugins.mood_chat.cadence]]
min_score = 80
interval_s = 6

[plugins.screen_watch]
window_title = "{TITLE}"
fps = 2.0
force_every_s = 3
"#
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_character_speaks_up_about_new_text_in_the_watched_window() {
    let Some((models, desktop)) = ocr_desktop() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let image = render(
        dir.path(),
        "game.png",
        &["Boss defeated", "The Ice Dragon fell"],
    );
    let window = open_window(&desktop, TITLE, &image);

    let server = ScriptedServer::start(vec![script::text_reply("[joy] You beat the dragon!")])
        .await
        .unwrap();
    let path = profile(dir.path(), &server.base_url());
    let loaded = load_profile(&path).unwrap();
    let env = Environment {
        plugins_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins"),
        data_root: dir.path().join("data"),
        llm: LlmOverrides::default(),
        llm_connector: std::sync::Arc::new(tomo_openai::OpenAiConnector),
        hook_timeout: Duration::from_secs(5),
        extra_hooks: Vec::new(),
        plugin_factories: std::iter::once(Arc::new(ScreenWatchFactory {
            models_root: models.det.parent().unwrap().parent().unwrap().to_path_buf(),
        }) as Arc<dyn tomo_plugin_api::PluginFactory>)
        .chain(tomo_plugins::builtin_factories())
        .collect(),
    };
    let (session, mut events) = start_session(loaded.profile, env, Arc::new(TextSink))
        .await
        .unwrap();

    let mut seen = Vec::new();
    let finished = tokio::time::timeout(Duration::from_secs(90), async {
        while let Some(envelope) = events.recv().await {
            eprintln!("{:?}", envelope.event);
            let done = matches!(envelope.event, Event::TurnFinished { .. });
            seen.push(envelope.event);
            if done {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        finished,
        Ok(true),
        "no proactive turn finished; saw {seen:#?}"
    );

    assert!(
        seen.iter().any(
            |e| matches!(e, Event::SensorStatus { plugin, state: SensorState::Watching { target } }
            if plugin == "screen_watch" && target == TITLE)
        ),
        "the sensor never reported watching the window: {seen:#?}"
    );
    let observed = seen.iter().find_map(|e| match e {
        Event::Observation(o) => Some(o.text.clone()),
        _ => None,
    });
    let observed = observed.expect("no observation event");
    assert!(observed.contains("Ice Dragon"), "observed: {observed:?}");
    let proactive = seen
        .iter()
        .position(|e| matches!(e, Event::Proactive { .. }));
    let started = seen
        .iter()
        .position(|e| matches!(e, Event::TurnStarted { .. }));
    assert!(
        matches!((proactive, started), (Some(p), Some(s)) if p < s),
        "the turn was not a proactive one: {seen:#?}"
    );

    // What the character was asked: the window's text, in the user-role message, not the system prompt.
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        1,
        "exactly one LLM request (the proactive turn)"
    );
    let messages = requests[0].body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    let asked = last["content"].as_str().unwrap();
    assert!(asked.contains("[screen observations]"), "{asked}");
    assert!(asked.contains("Ice Dragon"), "{asked}");
    assert!(
        !messages[0]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("Ice Dragon")
    );

    // The UI's window picker: the watched window is among what the sensor offers.
    session
        .send(Op::ListSensorTargets {
            plugin: "screen_watch".into(),
        })
        .await
        .unwrap();
    let offered = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(envelope) = events.recv().await {
            if let Event::SensorTargets { plugin, targets } = envelope.event {
                return Some((plugin, targets));
            }
        }
        None
    })
    .await
    .unwrap()
    .expect("no sensor_targets event");
    assert_eq!(offered.0, "screen_watch");
    assert!(
        offered.1.iter().any(|t| t.title == TITLE && t.width > 0),
        "the window is not offered: {:?}",
        offered.1
    );

    // One click to stop: the sensor stops watching.
    session
        .send(Op::SetSensor {
            plugin: "screen_watch".into(),
            enabled: false,
            target: None,
        })
        .await
        .unwrap();
    let stopped = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(envelope) = events.recv().await {
            if matches!(
                envelope.event,
                Event::SensorStatus {
                    state: SensorState::Stopped,
                    ..
                }
            ) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        stopped,
        Ok(true),
        "no stopped status after set_sensor enabled=false"
    );

    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
    close_window(window);
    drop(desktop);
}
