//! The embedded brain as every front end runs it (SessionBuilder → RunningSession), on the real engine and
//! the real SmolLM2 fixture: the prefix warmed at start is what the first turn finds in the cache, a
//! switch between characters on the same model keeps the engine, a switch away stops it, the engine
//! killed mid-answer ends that turn with an error and the next turn works, and shutdown stops it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use tomo_protocol::{ErrorCode, Event, NoticeLevel, Op};

use support::{alive, eventually, is_idle, start, until, write_profile};

#[tokio::test]
async fn the_first_turn_finds_the_warmed_persona_and_tools_in_the_cache() {
    if !support::prerequisites() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "");
    let (session, mut events) = start(&profile, dir.path()).await.unwrap();
    let brain = session.brain().expect("a brain").clone();
    until(&mut events, 30, |e| matches!(e, Event::SessionReady { .. })).await;
    assert!(
        eventually(60, || !brain.stats().warm_ups.is_empty()).await,
        "the session warmed the prefix at start"
    );
    let warm = brain.stats().warm_ups[0];
    // Persona + the emotion rule + get_time's definition, in the engine's template.
    assert!(warm.prompt_tokens > 100, "{warm:?}");
    assert_eq!(warm.cached_tokens, 0, "nothing was cached before");

    session
        .ops()
        .send(Op::UserText {
            text: "Hello Hana!".into(),
        })
        .await
        .unwrap();
    let turn = until(&mut events, 120, is_idle).await;
    assert!(
        turn.iter()
            .any(|e| matches!(e, Event::TurnFinished { text, .. } if !text.trim().is_empty())),
        "{turn:#?}"
    );
    let first = brain.stats().requests[0];
    eprintln!("warm-up at start: {warm:?}; first turn: {first:?}");
    // Everything but the template's assistant header at the end of the warm-up came from the cache;
    // only the new user message was evaluated (the words and the time plugin's clock line: ~50 tokens).
    assert!(
        first.cached_tokens + 4 >= warm.prompt_tokens,
        "cached {} of the {}-token warm prefix",
        first.cached_tokens,
        warm.prompt_tokens
    );
    assert!(
        first.prompt_tokens - first.cached_tokens < 80,
        "evaluated only the new turn: {first:?}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn characters_on_the_same_model_share_the_engine_and_it_stops_when_none_uses_it() {
    if !support::prerequisites() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hana = write_profile(dir.path(), "hana.toml", "Hana", "");
    let kuro = write_profile(dir.path(), "kuro.toml", "Kuro", "");
    let ollama = dir.path().join("ollama.toml");
    std::fs::write(
        &ollama,
        "[character]\nname = \"Olla\"\nagent_id = \"olla\"\npersona = \"You are Olla.\"\n\n[llm]\n\
         base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"qwen2.5:3b\"\n",
    )
    .unwrap();
    let (session, mut events) = start(&hana, dir.path()).await.unwrap();
    let brain = session.brain().unwrap().clone();
    until(&mut events, 30, |e| matches!(e, Event::SessionReady { .. })).await;
    let pid = brain.engine_pid().expect("the engine runs");
    let switch = |path: &std::path::Path| Op::SwitchProfile {
        path: path.display().to_string(),
    };
    session.ops().send(switch(&kuro)).await.unwrap();
    until(
        &mut events,
        60,
        |e| matches!(e, Event::SessionReady { character, .. } if character == "Kuro"),
    )
    .await;
    assert_eq!(brain.engine_pid(), Some(pid), "the same engine serves Kuro");
    // An endpoint character: nobody uses the engine any more, so it stops (the warm-up of Kuro's
    // prefix may still be holding it for a moment).
    session.ops().send(switch(&ollama)).await.unwrap();
    until(
        &mut events,
        60,
        |e| matches!(e, Event::SessionReady { character, .. } if character == "Olla"),
    )
    .await;
    assert!(
        eventually(30, || !alive(pid)).await,
        "the engine stopped once no character used it"
    );
    // And back: a fresh engine.
    session.ops().send(switch(&hana)).await.unwrap();
    until(
        &mut events,
        60,
        |e| matches!(e, Event::SessionReady { character, .. } if character == "Hana"),
    )
    .await;
    let again = brain.engine_pid().expect("started again");
    assert_ne!(again, pid);
    session.shutdown().await;
    assert!(
        eventually(10, || !alive(again)).await,
        "shutdown stops the engine"
    );
}

#[tokio::test]
async fn the_engine_killed_mid_answer_fails_that_turn_and_the_next_one_works() {
    if !support::prerequisites() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "max_tokens = 300");
    let text = std::fs::read_to_string(&profile)
        .unwrap()
        .replace("max_tokens = 48\n", "");
    std::fs::write(&profile, text).unwrap();
    let (session, mut events) = start(&profile, dir.path()).await.unwrap();
    let brain = session.brain().unwrap().clone();
    until(&mut events, 30, |e| matches!(e, Event::SessionReady { .. })).await;
    let pid = brain.engine_pid().unwrap();
    session
        .ops()
        .send(Op::UserText {
            text: "Count from 1 to 300, one number per line.".into(),
        })
        .await
        .unwrap();
    until(&mut events, 120, |e| matches!(e, Event::TextDelta { .. })).await;
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let turn = until(&mut events, 60, is_idle).await;
    let error = turn
        .iter()
        .find_map(|e| match e {
            Event::Error {
                code,
                message,
                recoverable,
            } => Some((*code, message.clone(), *recoverable)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the turn ended with an error: {turn:#?}"));
    assert_eq!(error.0, ErrorCode::LlmStream);
    assert!(
        error
            .1
            .contains("the embedded brain stopped in the middle of the answer"),
        "{}",
        error.1
    );
    assert!(error.2, "recoverable: the next turn works");
    assert!(
        turn.iter()
            .all(|e| !matches!(e, Event::TurnFinished { .. })),
        "the cut answer is not passed off as a whole one"
    );
    // The supervisor starts it again and says so; the next turn is answered.
    let back = until(&mut events, 120, |e| {
        matches!(e, Event::Notice { level: NoticeLevel::Info, message } if message.contains("is back"))
    })
    .await;
    // The warning can come before the failed turn's end or after it.
    assert!(turn.iter().chain(&back).any(|e| matches!(e,
        Event::Notice { level: NoticeLevel::Warning, message } if message.contains("starting it again"))));
    assert_ne!(brain.engine_pid(), Some(pid));
    session
        .ops()
        .send(Op::UserText {
            text: "Say hello.".into(),
        })
        .await
        .unwrap();
    let next = until(&mut events, 120, is_idle).await;
    assert!(
        next.iter()
            .any(|e| matches!(e, Event::TurnFinished { text, .. } if !text.is_empty())),
        "{next:#?}"
    );
    tokio::time::timeout(Duration::from_secs(30), session.shutdown())
        .await
        .unwrap();
}
