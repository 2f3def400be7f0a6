//! Proactive turns end to end against the scripted LLM: sensors, schedulers, the coordinator's decision,
//! the prompt a proactive turn sends, the `mood_chat` scheduler's cadence and its persisted mood.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tomo_core::session::SessionHandle;
use tomo_core::sink::TextSink;
use tomo_plugin_api::PluginFactory;
use tomo_plugin_api::PluginParts;
use tomo_plugin_api::scheduler::Clock;
use tomo_plugin_api::sensor::SensorCommand;
use tomo_plugins::mood_chat::MoodChatFactory;
use tomo_protocol::{
    ErrorCode, Event, EventEnvelope, Op, PluginState, ProactiveSkip, SensorState, SessionState,
};
use tomo_testkit::{ScriptedServer, script};

use support::plugins::{
    CancelProbe, FakeSensor, Parts, ScriptedClock, SpyScheduler, T0, env_with, observation,
    write_profile,
};
use support::session::{PacedSink, collect_until, is_idle, start};

fn content(message: &Value) -> &str {
    message["content"].as_str().unwrap_or_default()
}

fn events_of(seen: &[EventEnvelope]) -> Vec<&Event> {
    seen.iter().map(|e| &e.event).collect()
}

async fn send(session: &SessionHandle, op: Op) {
    session.send(op).await.unwrap();
}

/// A text session whose character has a fake sensor that observes `seen_text` at once and a spy scheduler
/// that asks for a proactive turn on each observation (recording the commands and events they get).
async fn sensor_session(
    dir: &std::path::Path,
    server: &ScriptedServer,
    seen_text: &str,
    commands: Arc<Mutex<Vec<SensorCommand>>>,
    seen: Arc<Mutex<Vec<Event>>>,
) -> (
    SessionHandle,
    tokio::sync::mpsc::UnboundedReceiver<EventEnvelope>,
) {
    let sensor = PluginParts {
        sensors: vec![Arc::new(FakeSensor {
            observations: vec![observation(seen_text)],
            commands,
        })],
        ..PluginParts::default()
    };
    let spy = PluginParts {
        schedulers: vec![Arc::new(SpyScheduler { seen })],
        ..PluginParts::default()
    };
    let profile = write_profile(dir, &server.base_url(), &["fake_sensor", "spy"], "");
    let env = env_with(
        dir,
        vec![
            Arc::new(Parts("fake_sensor", sensor)),
            Arc::new(Parts("spy", spy)),
        ],
    );
    start(&profile, env, Arc::new(TextSink)).await
}

#[tokio::test]
async fn observations_reach_scheduler_events_and_the_user_message_and_set_sensor_reaches_the_sensor()
 {
    let server = ScriptedServer::start(vec![script::text_reply("[joy] Nice, the boss is down!")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let commands = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (session, mut events) = sensor_session(
        dir.path(),
        &server,
        "Boss defeated: Ganon",
        Arc::clone(&commands),
        Arc::clone(&seen),
    )
    .await;
    let got = collect_until(&mut events, |e| matches!(e, Event::TurnFinished { .. })).await;
    let got = events_of(&got);
    assert!(got.contains(&&Event::SensorStatus {
        plugin: "fake_sensor".into(),
        state: SensorState::Watching {
            target: "Game".into()
        }
    }));
    let obs = got
        .iter()
        .position(|e| matches!(e, Event::Observation(o) if o.text == "Boss defeated: Ganon"))
        .expect("observation event");
    let proactive = got
        .iter()
        .position(
            |e| matches!(e, Event::Proactive { reason, .. } if reason == "screen changed in Game"),
        )
        .expect("proactive event");
    let started = got
        .iter()
        .position(|e| matches!(e, Event::TurnStarted { .. }))
        .unwrap();
    assert!(obs < proactive && proactive < started, "{got:#?}");

    let request = &server.requests()[0];
    let messages = request.messages();
    assert_eq!(messages[0]["role"], "system");
    assert!(!content(&messages[0]).contains("Ganon"));
    assert!(!content(&messages[0]).contains("[proactive]"));
    let user = messages.last().unwrap();
    assert_eq!(user["role"], "user");
    let text = content(user);
    assert!(text.starts_with("[proactive]\n"), "{text}");
    assert!(
        text.contains("[screen observations]\n- ")
            && text.contains("Game: Boss defeated: Ganon\n[/screen observations]"),
        "{text}"
    );
    collect_until(&mut events, is_idle).await;
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, Event::Observation(o) if o.source == "fake_sensor")),
        "the scheduler saw the observation"
    );

    // The UI picks another window, then stops watching.
    send(
        &session,
        Op::SetSensor {
            plugin: "fake_sensor".into(),
            enabled: true,
            target: Some("Other window".into()),
        },
    )
    .await;
    let got = collect_until(&mut events, |e| matches!(e, Event::SensorStatus { .. })).await;
    assert_eq!(
        got.last().unwrap().event,
        Event::SensorStatus {
            plugin: "fake_sensor".into(),
            state: SensorState::Watching {
                target: "Other window".into()
            }
        }
    );
    send(
        &session,
        Op::SetSensor {
            plugin: "fake_sensor".into(),
            enabled: false,
            target: None,
        },
    )
    .await;
    let got = collect_until(&mut events, |e| matches!(e, Event::SensorStatus { .. })).await;
    assert!(matches!(
        &got.last().unwrap().event,
        Event::SensorStatus {
            state: SensorState::Stopped,
            ..
        }
    ));
    assert_eq!(
        *commands.lock().unwrap(),
        [
            SensorCommand::Start {
                target: Some("Other window".into())
            },
            SensorCommand::Stop
        ]
    );
    // An unknown sensor is a reported problem, not a crash.
    send(
        &session,
        Op::SetSensor {
            plugin: "nope".into(),
            enabled: true,
            target: None,
        },
    )
    .await;
    let got = collect_until(&mut events, |e| matches!(e, Event::Error { .. })).await;
    assert!(
        matches!(&got.last().unwrap().event, Event::Error { code: ErrorCode::Plugin, message, .. } if message.contains("nope"))
    );
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}

fn skipped(seen: &[EventEnvelope]) -> Option<ProactiveSkip> {
    seen.iter().find_map(|e| match &e.event {
        Event::ProactiveSkipped { why, .. } => Some(*why),
        _ => None,
    })
}

#[tokio::test]
async fn no_proactive_turn_while_busy_listening_muted_or_dnd_and_user_speech_wins() {
    let server = ScriptedServer::start(vec![
        script::text_reply("First sentence here. Second sentence here."),
        script::text_reply_with_delay(
            "I was going to say something long.",
            Duration::from_secs(5),
            Duration::ZERO,
        ),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), &server.base_url(), &[], "");
    // Each sentence "plays" 400 ms, so the user turn is still in flight when the request comes.
    let sink = PacedSink::new(Duration::from_millis(400));
    let (session, mut events) = start(&profile, env_with(dir.path(), vec![]), sink).await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    let proactive = || Op::ProactiveTurn {
        reason: "test".into(),
    };

    // A user turn in flight.
    send(&session, Op::UserText { text: "Hi!".into() }).await;
    collect_until(&mut events, |e| matches!(e, Event::Sentence { .. })).await;
    send(&session, proactive()).await;
    let seen = collect_until(&mut events, |e| matches!(e, Event::ProactiveSkipped { .. })).await;
    assert_eq!(skipped(&seen), Some(ProactiveSkip::Busy));
    collect_until(&mut events, is_idle).await;

    // The user is speaking.
    send(&session, Op::SpeechStarted).await;
    send(&session, proactive()).await;
    let seen = collect_until(&mut events, |e| matches!(e, Event::ProactiveSkipped { .. })).await;
    assert_eq!(skipped(&seen), Some(ProactiveSkip::Listening));
    send(
        &session,
        Op::SpeechEnded {
            transcript: String::new(),
            asr_ms: 0,
            end_of_turn_ms: 0,
            over_answer_only: false,
        },
    )
    .await;
    collect_until(&mut events, is_idle).await;

    // Muted, then do-not-disturb.
    send(&session, Op::SetMicMuted { muted: true }).await;
    send(&session, proactive()).await;
    let seen = collect_until(&mut events, |e| matches!(e, Event::ProactiveSkipped { .. })).await;
    assert!(events_of(&seen).contains(&&Event::ModeChanged {
        mic_muted: true,
        do_not_disturb: false,
        push_to_talk: false,
        half_duplex: false,
    }));
    assert_eq!(skipped(&seen), Some(ProactiveSkip::MicMuted));
    send(&session, Op::SetMicMuted { muted: false }).await;
    send(&session, Op::SetDoNotDisturb { enabled: true }).await;
    send(&session, proactive()).await;
    let seen = collect_until(&mut events, |e| matches!(e, Event::ProactiveSkipped { .. })).await;
    assert_eq!(skipped(&seen), Some(ProactiveSkip::DoNotDisturb));
    assert_eq!(
        server.requests().len(),
        1,
        "no LLM request for a skipped proactive turn"
    );

    // Allowed now; the user starts speaking during it and wins.
    send(&session, Op::SetDoNotDisturb { enabled: false }).await;
    send(&session, proactive()).await;
    let seen = collect_until(&mut events, |e| matches!(e, Event::TurnStarted { .. })).await;
    assert!(
        events_of(&seen)
            .iter()
            .any(|e| matches!(e, Event::Proactive { reason, .. } if reason == "test"))
    );
    assert!(
        matches!(&seen.last().unwrap().event, Event::TurnStarted { user_text, .. } if user_text == "[proactive] test")
    );
    server
        .wait_for_requests(2, Duration::from_secs(5))
        .await
        .unwrap();
    send(&session, Op::SpeechStarted).await;
    let seen = collect_until(&mut events, |e| {
        matches!(
            e,
            Event::StateChanged {
                to: SessionState::Listening,
                ..
            }
        )
    })
    .await;
    assert!(
        events_of(&seen)
            .iter()
            .any(|e| matches!(e, Event::TurnAborted { .. })),
        "{seen:#?}"
    );
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}

#[tokio::test]
async fn mood_tags_change_the_score_are_not_shown_and_persist_across_restarts() {
    let server = ScriptedServer::start(vec![script::text_reply(
        "[joy] You did it! [mood:+10] Amazing.",
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let clock: Arc<dyn Clock> = Arc::new(ScriptedClock(AtomicI64::new(T0)));
    let profile = write_profile(
        dir.path(),
        &server.base_url(),
        &["mood_chat"],
        "[plugins.mood_chat]\ninitial = 50\nhalf_life_s = 0\n",
    );
    let factories = || -> Vec<Arc<dyn PluginFactory>> {
        vec![Arc::new(MoodChatFactory {
            clock: Arc::clone(&clock),
        })]
    };
    let (session, mut events) = start(
        &profile,
        env_with(dir.path(), factories()),
        Arc::new(TextSink),
    )
    .await;
    let seen = collect_until(&mut events, |e| mood(e).is_some()).await;
    assert!(mood(&seen.last().unwrap().event).is_some_and(|(score, _)| score == 50.0));
    send(
        &session,
        Op::UserText {
            text: "I beat the level!".into(),
        },
    )
    .await;
    // `[joy]` is worth +2 (the manifest's emotion_deltas), then the tag adds 10.
    let tagged = |e: &Event| mood(e).is_some_and(|(_, reason)| reason.contains("mood:"));
    // The scheduler reports the mood on its own task: before or after the session goes idle.
    let mut seen = collect_until(&mut events, is_idle).await;
    if !seen.iter().any(|e| tagged(&e.event)) {
        seen.extend(collect_until(&mut events, tagged).await);
    }
    let moods: Vec<(f32, &str)> = seen.iter().filter_map(|e| mood(&e.event)).collect();
    assert_eq!(moods, [(52.0, "emotion joy"), (62.0, "tag [mood:+10]")]);
    for e in &seen {
        if let Event::Sentence { sentence, .. } = &e.event {
            assert!(!sentence.display_text.contains("mood"), "{sentence:?}");
            assert!(
                !sentence
                    .tts_text
                    .clone()
                    .unwrap_or_default()
                    .contains("mood")
            );
        }
    }
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;

    let (session, mut events) = start(
        &profile,
        env_with(dir.path(), factories()),
        Arc::new(TextSink),
    )
    .await;
    let seen = collect_until(&mut events, |e| mood(e).is_some()).await;
    assert!(
        mood(&seen.last().unwrap().event) == Some((62.0, "loaded")),
        "{seen:#?}"
    );
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}

#[tokio::test]
async fn a_sensor_without_a_factory_is_a_reported_problem() {
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), &server.base_url(), &["screen_watch"], "");
    let (session, mut events) =
        start(&profile, env_with(dir.path(), vec![]), Arc::new(TextSink)).await;
    let seen = collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    assert!(
        events_of(&seen).iter().any(|e| matches!(e, Event::Error { code: ErrorCode::Plugin, message, .. } if message.contains("screen_watch"))),
        "{seen:#?}"
    );
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}

/// Counts proactive turns over `secs` simulated seconds with `mood_chat` at `score`.
async fn proactive_turns_over(score: u32, secs: u64) -> usize {
    let replies = (0..20).map(|_| script::text_reply("Still here!")).collect();
    let server = ScriptedServer::start(replies).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(
        dir.path(),
        &server.base_url(),
        &["mood_chat"],
        &format!(
            "[plugins.mood_chat]\ninitial = {score}\nhalf_life_s = 0\nemotion_deltas = {{}}\n\
             cadence = [{{ min_score = 70, interval_s = 60 }}, {{ min_score = 40, interval_s = 300 }}]\n"
        ),
    );
    let clock: Arc<dyn Clock> = Arc::new(ScriptedClock(AtomicI64::new(T0)));
    let env = env_with(dir.path(), vec![Arc::new(MoodChatFactory { clock })]);
    let (session, mut events) = start(&profile, env, Arc::new(TextSink)).await;
    let mut turns = 0;
    for _ in 0..secs {
        tokio::time::advance(Duration::from_secs(1)).await;
        // Let the woken tasks pass the request along before looking.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        while let Ok(envelope) = events.try_recv() {
            if matches!(envelope.event, Event::Proactive { .. }) {
                turns += 1;
                // Let the turn run to its end before time moves on.
                collect_until(&mut events, is_idle).await;
            }
        }
    }
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
    turns
}

#[tokio::test(start_paused = true)]
async fn mood_thresholds_set_the_cadence_in_simulated_time() {
    // High mood: after every 60 s of quiet (10 in 630 s).
    assert_eq!(proactive_turns_over(85, 630).await, 10);
    // Middle: every 300 s.
    assert_eq!(proactive_turns_over(55, 630).await, 2);
    // Low: never.
    assert_eq!(proactive_turns_over(20, 630).await, 0);
}

#[tokio::test]
async fn plugin_tasks_start_with_the_character_and_stop_on_switch_and_shutdown() {
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let probe = Arc::new(CancelProbe(Arc::clone(&log)));
    let parts = PluginParts {
        sensors: vec![probe.clone()],
        schedulers: vec![probe],
        ..PluginParts::default()
    };
    let factories: Vec<Arc<dyn PluginFactory>> = vec![
        Arc::new(Parts("fake_sensor", parts.clone())),
        Arc::new(Parts("spy", PluginParts::default())),
    ];
    let profile = write_profile(dir.path(), &server.base_url(), &["fake_sensor"], "");
    let (session, mut events) = start(
        &profile,
        env_with(dir.path(), factories),
        Arc::new(TextSink),
    )
    .await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    while log.lock().unwrap().len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Switch to a character without plugins: the old character's sensor and scheduler stop.
    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let other = write_profile(&plain, &server.base_url(), &[], "");
    send(
        &session,
        Op::SwitchProfile {
            path: other.to_string_lossy().into_owned(),
        },
    )
    .await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    let mut seen = log.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(
        seen,
        [
            "scheduler cancelled",
            "scheduler started",
            "sensor cancelled",
            "sensor started"
        ]
    );
    // And on shutdown (back to the plugin character first).
    send(
        &session,
        Op::SwitchProfile {
            path: profile.to_string_lossy().into_owned(),
        },
    )
    .await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    while log.lock().unwrap().len() < 6 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
    assert_eq!(log.lock().unwrap().len(), 8, "{:?}", log.lock().unwrap());
}

/// This machine's LAN address (not loopback), if it has one: a UDP "connect" picks the outgoing interface
/// without sending anything.
fn lan_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("10.254.254.254:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test]
async fn screen_text_does_not_reach_an_llm_that_is_not_on_this_machine() {
    let Some(ip) = lan_address() else {
        eprintln!("skipped: this machine has no non-loopback address");
        return;
    };
    let server = ScriptedServer::start_on(ip, vec![script::text_reply("Hm, anything new?")])
        .await
        .unwrap();
    assert!(!server.base_url().contains("127.0.0.1"));
    let dir = tempfile::tempdir().unwrap();
    let (session, mut events) = sensor_session(
        dir.path(),
        &server,
        "Private message: the code is 4711",
        Arc::default(),
        Arc::default(),
    )
    .await;
    let got = collect_until(&mut events, |e| matches!(e, Event::TurnFinished { .. })).await;
    // The UI on this machine still sees the observation...
    assert!(
        events_of(&got)
            .iter()
            .any(|e| matches!(e, Event::Observation(o) if o.text.contains("4711")))
    );
    // ...but the proactive turn went to the remote endpoint without it.
    let request = &server.requests()[0];
    let body = request.body.to_string();
    assert!(
        !body.contains("4711"),
        "screen text sent to a remote LLM: {body}"
    );
    assert!(!body.contains("[screen observations]"), "{body}");
    let user = request.messages().last().unwrap().clone();
    assert!(content(&user).starts_with("[proactive]"), "{user}");
    send(&session, Op::Shutdown).await;
    session.join().await;
}

/// The mood mood_chat reported, as (score, reason).
fn mood(event: &Event) -> Option<(f32, &str)> {
    match event {
        Event::PluginState {
            plugin,
            state:
                PluginState {
                    label,
                    value: Some(score),
                    reason,
                },
        } if plugin == "mood_chat" && label == "mood" => Some((*score, reason.as_str())),
        _ => None,
    }
}
