//! The session coordinator end to end (minus audio): hooks, memory context, events, history, interrupts,
//! profile switching — against the scripted OpenAI-compatible server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tomo_core::sink::TextSink;
use tomo_protocol::{Action, ErrorCode, Event, HookStage, Op, SessionState, TurnEnd};
use tomo_testkit::{ScriptedResponse, ScriptedServer, script};

use support::session::{
    Call, PacedSink, RecordingHook, collect_until, environment, is_idle, say, start, text_session,
    write_profile,
};

fn content(message: &Value) -> &str {
    message["content"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn memory_context_is_in_the_user_message_and_hooks_fire_in_order() {
    let server = ScriptedServer::start(vec![script::text_reply(
        "[joy] Nice to see you again, Ada! Your tea is ready.",
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let mut hook = RecordingHook::new("memory");
    hook.memory = Some("The user's name is Ada. She likes green tea.".to_owned());
    let hook = Arc::new(hook);
    let sink = PacedSink::new(Duration::from_millis(150));
    let (session, mut events) = start(
        &profile,
        environment(dir.path(), vec![hook.clone()]),
        sink.clone(),
    )
    .await;
    say(&session, "Hello!").await;
    let seen = collect_until(&mut events, is_idle).await;

    let request = &server.requests()[0];
    let messages = request.messages();
    assert_eq!(messages[0]["role"], "system");
    assert!(!content(&messages[0]).contains("memory context"));
    assert!(!content(&messages[0]).contains("Ada"));
    let user = messages.last().unwrap();
    assert_eq!(user["role"], "user");
    assert!(
        content(user).starts_with("[memory context]\nThe user's name is Ada."),
        "{}",
        content(user)
    );
    assert!(content(user).ends_with("Hello!"));

    let calls = hook.calls();
    let stages: Vec<&Call> = calls.iter().map(|(c, _)| c).collect();
    let said = "Nice to see you again, Ada! Your tea is ready.".to_owned();
    assert_eq!(
        stages,
        vec![
            &Call::BeforeTurn("Hello!".into()),
            &Call::AfterTurn(format!("[joy] {said}")),
            &Call::AfterPlayback(format!("[joy] {said}"))
        ]
    );
    // after_playback fires only once the last sentence has played to its end.
    let last_played = sink.played().last().unwrap().2;
    assert!(
        calls[2].1 >= last_played,
        "after_playback fired before the sink drained"
    );
    assert!(
        calls[1].1 < last_played,
        "after_turn does not wait for audio"
    );

    let kinds: Vec<&Event> = seen.iter().map(|e| &e.event).collect();
    let finished = kinds
        .iter()
        .position(|e| matches!(e, Event::TurnFinished { .. }))
        .unwrap();
    let drained = kinds
        .iter()
        .position(|e| matches!(e, Event::PlaybackDrained { .. }))
        .unwrap();
    assert!(finished < drained);
    let sentences: Vec<_> = seen
        .iter()
        .filter_map(|e| match &e.event {
            Event::Sentence { sentence, .. } => Some(sentence.clone()),
            _ => None,
        })
        .collect();
    assert!(sentences.len() >= 2, "{sentences:?}");
    assert_eq!(
        sentences[0].actions,
        vec![Action::Emotion { name: "joy".into() }]
    );
    assert!(!sentences[0].display_text.contains("[joy]"));
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}

#[tokio::test]
async fn failing_and_stalled_hooks_are_reported_and_skipped() {
    let server = ScriptedServer::start(vec![script::text_reply("Still here.")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let mut failing = RecordingHook::new("failing");
    failing.fail = true;
    let mut stalled = RecordingHook::new("stalled");
    stalled.stall = true;
    let mut good = RecordingHook::new("good");
    good.memory = Some("Remember: likes cats.".into());
    let hooks: Vec<Arc<dyn tomo_plugin_api::hooks::Hook>> =
        vec![Arc::new(failing), Arc::new(stalled), Arc::new(good)];
    let (session, mut events) =
        start(&profile, environment(dir.path(), hooks), Arc::new(TextSink)).await;
    say(&session, "hi").await;
    let seen = collect_until(&mut events, is_idle).await;
    let failures: Vec<(String, HookStage, String)> = seen
        .iter()
        .filter_map(|e| match &e.event {
            Event::HookFailed {
                hook,
                stage,
                message,
                ..
            } => Some((hook.clone(), *stage, message.clone())),
            _ => None,
        })
        .collect();
    assert!(failures.contains(&(
        "failing".into(),
        HookStage::BeforeTurn,
        "deliberate failure".into()
    )));
    assert!(
        failures.iter().any(|(h, s, m)| h == "stalled"
            && *s == HookStage::BeforeTurn
            && m.contains("timed out"))
    );
    assert!(
        seen.iter()
            .any(|e| matches!(&e.event, Event::TurnFinished { text, .. } if text == "Still here."))
    );
    let user = server.requests()[0].messages().last().unwrap().clone();
    assert!(content(&user).contains("Remember: likes cats."));
}

#[tokio::test]
async fn events_are_sequenced_and_state_walks_idle_thinking_speaking_idle() {
    let server = ScriptedServer::start(vec![script::text_reply("One. Two. Three.")])
        .await
        .unwrap();
    let (_dir, session, mut events) = text_session(&server).await;
    say(&session, "count").await;
    let seen = collect_until(&mut events, is_idle).await;
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "seq starts at 1 and has no gaps"
    );
    assert!(matches!(seen[0].event, Event::SessionReady { .. }));
    let states: Vec<(SessionState, SessionState)> = seen
        .iter()
        .filter_map(|e| match e.event {
            Event::StateChanged { from, to } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(
        states,
        vec![
            (SessionState::Idle, SessionState::Thinking),
            (SessionState::Thinking, SessionState::Speaking),
            (SessionState::Speaking, SessionState::Idle)
        ]
    );
    let texts: Vec<String> = seen
        .iter()
        .filter_map(|e| match &e.event {
            Event::Sentence { sentence, .. } => Some(sentence.display_text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, vec!["One.", "Two.", "Three."]);
    // The JSON form that clients see.
    let json = serde_json::to_value(&seen[1]).unwrap();
    assert!(json["seq"].is_u64() && json["type"].is_string(), "{json}");
}

#[tokio::test]
async fn interrupt_aborts_the_turn_and_history_keeps_the_partial_answer() {
    let long = "Let me tell you a very long story about a cat who lived on a windowsill and watched birds all day.";
    let server = ScriptedServer::start(vec![
        script::text_reply_with_delay(long, Duration::ZERO, Duration::from_millis(60)),
        script::text_reply("Sure."),
    ])
    .await
    .unwrap();
    let (dir, session, mut events) = text_session(&server).await;
    say(&session, "story please").await;
    collect_until(&mut events, |e| matches!(e, Event::TextDelta { .. })).await;
    session.send(Op::Interrupt).await.unwrap();
    let seen = collect_until(&mut events, is_idle).await;
    let partial = seen
        .iter()
        .find_map(|e| match &e.event {
            Event::TurnAborted { partial_text, .. } => Some(partial_text.clone()),
            _ => None,
        })
        .expect("turn_aborted");
    assert!(!partial.is_empty() && long.starts_with(&partial) && partial.len() < long.len());
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, Event::TurnFinished { .. }))
    );

    let history =
        std::fs::read_to_string(dir.path().join("characters/hana/history.jsonl")).unwrap();
    let last: Value = serde_json::from_str(history.lines().last().unwrap()).unwrap();
    assert_eq!(last["interrupted"], true);
    assert_eq!(last["content"], partial.as_str());

    // The next turn sends the interrupted exchange as context.
    say(&session, "ok, stop").await;
    collect_until(&mut events, is_idle).await;
    let messages = server.requests()[1].messages().to_vec();
    assert_eq!(content(&messages[1]), "story please");
    assert_eq!(content(&messages[2]), partial);
    assert_eq!(content(&messages[3]), "ok, stop");
}

#[tokio::test]
async fn a_new_user_message_wins_over_the_turn_in_flight() {
    let server = ScriptedServer::start(vec![
        script::text_reply_with_delay(
            "This answer is slow and will be cut off.",
            Duration::from_millis(500),
            Duration::from_millis(100),
        ),
        script::text_reply("Answering the second."),
    ])
    .await
    .unwrap();
    let (_dir, session, mut events) = text_session(&server).await;
    say(&session, "first").await;
    // Wait until the slow answer is really in flight (responses are served in arrival order).
    server
        .wait_for_requests(1, Duration::from_secs(10))
        .await
        .unwrap();
    say(&session, "second").await;
    let seen = collect_until(&mut events, |e| matches!(e, Event::TurnFinished { .. })).await;
    assert!(
        seen.iter()
            .any(|e| matches!(e.event, Event::TurnAborted { .. }))
    );
    assert!(seen.iter().any(|e| matches!(&e.event, Event::TurnFinished { text, .. } if text == "Answering the second.")), "{seen:#?}");
}

#[tokio::test]
async fn an_llm_error_is_recoverable_and_the_next_turn_works() {
    let server = ScriptedServer::start(vec![
        ScriptedResponse::Status {
            code: 401,
            message: "bad key".into(),
        },
        script::text_reply("Working again."),
    ])
    .await
    .unwrap();
    let (_dir, session, mut events) = text_session(&server).await;
    say(&session, "one").await;
    let seen = collect_until(&mut events, is_idle).await;
    assert!(seen.iter().any(|e| matches!(&e.event,
        Event::Error { code: ErrorCode::LlmHttp, message, recoverable: true } if message.contains("bad key"))));
    say(&session, "two").await;
    let seen = collect_until(&mut events, is_idle).await;
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        Event::TurnFinished {
            end: TurnEnd::Completed,
            ..
        }
    )));
}

#[tokio::test]
async fn history_persists_across_sessions_and_is_isolated_per_character() {
    let server = ScriptedServer::start(vec![
        script::text_reply("Nice to meet you, Ada."),
        script::text_reply("You are Ada."),
        script::text_reply("I don't know yet."),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hana = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let kuro = write_profile(dir.path(), "kuro.toml", "Kuro", "kuro", &server.base_url());
    {
        let (session, mut events) =
            start(&hana, environment(dir.path(), vec![]), Arc::new(TextSink)).await;
        say(&session, "I am Ada.").await;
        collect_until(&mut events, is_idle).await;
        session.send(Op::Shutdown).await.unwrap();
        session.join().await;
    }
    let (session, mut events) =
        start(&hana, environment(dir.path(), vec![]), Arc::new(TextSink)).await;
    say(&session, "Who am I?").await;
    collect_until(&mut events, is_idle).await;
    let messages = server.requests()[1].messages().to_vec();
    assert_eq!(content(&messages[1]), "I am Ada.");
    assert_eq!(content(&messages[2]), "Nice to meet you, Ada.");
    assert_eq!(content(&messages[3]), "Who am I?");

    // Switching character swaps persona and memory space.
    session
        .send(Op::SwitchProfile {
            path: kuro.to_string_lossy().into_owned(),
        })
        .await
        .unwrap();
    let seen = collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    assert!(
        matches!(&seen.last().unwrap().event, Event::SessionReady { character, agent_id, .. } if character == "Kuro" && agent_id == "kuro")
    );
    say(&session, "Who am I?").await;
    collect_until(&mut events, is_idle).await;
    let messages = server.requests()[2].messages().to_vec();
    assert_eq!(
        messages.len(),
        2,
        "Kuro sees none of Hana's history: {messages:?}"
    );
    assert!(content(&messages[0]).contains("You are Kuro"));
}

#[tokio::test]
async fn a_broken_profile_switch_keeps_the_current_character() {
    let server = ScriptedServer::start(vec![script::text_reply("Still Hana.")])
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hana = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[character]\nname = 3\n").unwrap();
    let (session, mut events) =
        start(&hana, environment(dir.path(), vec![]), Arc::new(TextSink)).await;
    session
        .send(Op::SwitchProfile {
            path: broken.to_string_lossy().into_owned(),
        })
        .await
        .unwrap();
    let seen = collect_until(&mut events, |e| matches!(e, Event::Error { .. })).await;
    let Event::Error { code, message, .. } = &seen.last().unwrap().event else {
        unreachable!()
    };
    assert_eq!(*code, ErrorCode::Profile);
    assert!(message.contains("broken.toml:2:"), "{message}");
    say(&session, "who are you").await;
    collect_until(&mut events, is_idle).await;
    assert!(content(&server.requests()[0].messages()[0]).contains("You are Hana"));
}

#[tokio::test]
async fn voice_ops_drive_listening_and_latency_reports() {
    let server = ScriptedServer::start(vec![
        script::text_reply_with_delay(
            "A long answer that the user will talk over.",
            Duration::from_millis(300),
            Duration::from_millis(100),
        ),
        script::text_reply("You said hello."),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let sink = PacedSink::new(Duration::from_millis(50));
    let (session, mut events) = start(&profile, environment(dir.path(), vec![]), sink).await;
    say(&session, "tell me something").await;
    server
        .wait_for_requests(1, Duration::from_secs(10))
        .await
        .unwrap();

    // The user starts talking: the turn in flight is cut, the session listens.
    session.send(Op::SpeechStarted).await.unwrap();
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
        seen.iter()
            .any(|e| matches!(e.event, Event::TurnAborted { .. }))
    );

    // Noise: no turn, back to idle.
    session
        .send(Op::SpeechEnded {
            transcript: "  ".into(),
            asr_ms: 80,
            end_of_turn_ms: 0,
            over_answer_only: false,
        })
        .await
        .unwrap();
    collect_until(&mut events, is_idle).await;

    session.send(Op::SpeechStarted).await.unwrap();
    session
        .send(Op::SpeechEnded {
            transcript: "hello".into(),
            asr_ms: 120,
            end_of_turn_ms: 0,
            over_answer_only: false,
        })
        .await
        .unwrap();
    let seen = collect_until(&mut events, is_idle).await;
    let kinds: Vec<&Event> = seen.iter().map(|e| &e.event).collect();
    let transcript = kinds
        .iter()
        .position(|e| matches!(e, Event::UserTranscript { text } if text == "hello"))
        .expect("user_transcript");
    let started = kinds
        .iter()
        .position(|e| matches!(e, Event::TurnStarted { .. }))
        .unwrap();
    assert!(transcript < started);
    let report = kinds
        .iter()
        .find_map(|e| match e {
            Event::LatencyReport {
                origin,
                asr_done_ms,
                first_token_ms,
                first_sentence_ms,
                ..
            } => Some((*origin, *asr_done_ms, *first_token_ms, *first_sentence_ms)),
            _ => None,
        })
        .expect("latency_report");
    assert_eq!(report.0, tomo_protocol::LatencyOrigin::SpeechEnd);
    assert!(report.1.unwrap() >= 120);
    assert!(report.2.unwrap() >= report.1.unwrap());
    assert!(report.3.unwrap() >= report.2.unwrap());
    assert_eq!(
        content(server.requests()[1].messages().last().unwrap()),
        "hello"
    );
}

/// Push-to-talk is the session's mode like mute: the op switches it (and says so), presses are relayed to
/// the microphone front end only in that mode and while not muted.
#[tokio::test]
async fn push_to_talk_presses_are_relayed_only_in_push_to_talk_mode() {
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let (_dir, session, mut events) = text_session(&server).await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    let press = |pressed| Op::PushToTalk { pressed };

    session.send(press(true)).await.unwrap();
    session
        .send(Op::SetPushToTalk { enabled: true })
        .await
        .unwrap();
    let seen = collect_until(&mut events, |e| matches!(e, Event::ModeChanged { .. })).await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, Event::PushToTalk { .. })),
        "a press outside push-to-talk mode was relayed: {seen:?}"
    );
    assert_eq!(
        seen.last().unwrap().event,
        Event::ModeChanged {
            mic_muted: false,
            do_not_disturb: false,
            push_to_talk: true,
            half_duplex: false,
        }
    );
    session.send(press(true)).await.unwrap();
    session.send(press(false)).await.unwrap();
    let held = collect_until(&mut events, |e| {
        matches!(e, Event::PushToTalk { pressed: false })
    })
    .await;
    let presses: Vec<&Event> = held
        .iter()
        .map(|e| &e.event)
        .filter(|e| matches!(e, Event::PushToTalk { .. }))
        .collect();
    assert_eq!(
        presses,
        [
            &Event::PushToTalk { pressed: true },
            &Event::PushToTalk { pressed: false }
        ]
    );

    // Muted: presses go nowhere.
    session.send(Op::SetMicMuted { muted: true }).await.unwrap();
    session.send(press(true)).await.unwrap();
    session
        .send(Op::SetMicMuted { muted: false })
        .await
        .unwrap();
    let seen = collect_until(&mut events, |e| {
        matches!(
            e,
            Event::ModeChanged {
                mic_muted: false,
                ..
            }
        )
    })
    .await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e.event, Event::PushToTalk { .. })),
        "{seen:?}"
    );
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}

/// What the microphone or speakers front end reports reaches every client as an event.
#[tokio::test]
async fn front_end_notices_are_relayed_to_clients() {
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let (_dir, session, mut events) = text_session(&server).await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    session
        .send(Op::Notice {
            level: tomo_protocol::NoticeLevel::Warning,
            message: "microphone lost (device unplugged); retrying".into(),
        })
        .await
        .unwrap();
    let seen = collect_until(&mut events, |e| matches!(e, Event::Notice { .. })).await;
    assert_eq!(
        seen.last().unwrap().event,
        Event::Notice {
            level: tomo_protocol::NoticeLevel::Warning,
            message: "microphone lost (device unplugged); retrying".into()
        }
    );
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}
