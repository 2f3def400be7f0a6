//! A damaged history never stops the character: torn lines are skipped with one notice, the next turn is
//! stored intact, and a second process on the same character is refused instead of interleaving turn ids.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Write;
use std::sync::Arc;

use tomo_core::history::History;
use tomo_core::session::{character_dir, start_session};
use tomo_core::sink::TextSink;
use tomo_llm::ChatMessage;
use tomo_protocol::{Event, NoticeLevel, Op};
use tomo_testkit::{ScriptedServer, script};

use support::session::{collect_until, environment, is_idle, say, start, write_profile};

#[tokio::test]
async fn a_torn_history_is_announced_once_and_the_conversation_goes_on() {
    let server = ScriptedServer::start(vec![
        script::text_reply("Hello Ada."),
        script::text_reply("Still here."),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    {
        let (session, mut events) = start(
            &profile,
            environment(dir.path(), vec![]),
            Arc::new(TextSink),
        )
        .await;
        say(&session, "I am Ada.").await;
        collect_until(&mut events, is_idle).await;
        session.send(Op::Shutdown).await.unwrap();
        session.join().await;
    }
    // A crash in the middle of the next write: half a record ending in half of "é".
    let history_file = character_dir(dir.path(), "hana").join("history.jsonl");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&history_file)
        .unwrap();
    file.write_all(
        b"{\"turn_id\":2,\"at\":\"2026-01-01T00:00:00Z\",\"role\":\"user\",\"content\":\"caf\xc3",
    )
    .unwrap();
    drop(file);

    let (session, mut events) = start(
        &profile,
        environment(dir.path(), vec![]),
        Arc::new(TextSink),
    )
    .await;
    let start_events =
        collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    let notices: Vec<&Event> = start_events
        .iter()
        .map(|e| &e.event)
        .filter(|e| matches!(e, Event::Notice { .. }))
        .collect();
    assert_eq!(notices.len(), 1, "{start_events:#?}");
    assert!(matches!(
        notices[0],
        Event::Notice { level: NoticeLevel::Warning, message } if message.contains("1 unreadable line")
    ));
    say(&session, "Are you there?").await;
    collect_until(&mut events, is_idle).await;
    // The model still saw the readable past.
    let messages = server.requests()[1].messages().to_vec();
    assert_eq!(messages[1]["content"], "I am Ada.");
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;

    let history = History::open(&character_dir(dir.path(), "hana")).unwrap();
    let said: Vec<ChatMessage> = history
        .records()
        .iter()
        .map(|r| r.message.clone())
        .collect();
    assert_eq!(
        said,
        vec![
            ChatMessage::user("I am Ada."),
            ChatMessage::assistant("Hello Ada."),
            ChatMessage::user("Are you there?"),
            ChatMessage::assistant("Still here."),
        ]
    );
    assert_eq!(
        history.skipped_lines, 1,
        "the torn line stays alone on its line"
    );
}

#[tokio::test]
async fn a_character_in_use_by_another_process_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(
        dir.path(),
        "hana.toml",
        "Hana",
        "hana",
        "http://127.0.0.1:9/v1",
    );
    let data = character_dir(dir.path(), "hana");
    std::fs::create_dir_all(&data).unwrap();
    // Another process holds the character's folder.
    let other = tomo_testkit::ForeignLock::hold(&data.join(".lock")).unwrap();
    let loaded = tomo_config::profile::load_profile(&profile).unwrap();
    let refused = start_session(
        loaded.profile,
        environment(dir.path(), vec![]),
        Arc::new(TextSink),
    )
    .await;
    drop(other);
    let error = refused
        .expect_err("a second process must not share the history")
        .to_string();
    assert!(error.contains("in use by another Tomo"), "{error}");
}
