//! A voice turn's answer started in the user's pause (`Op::SpeechPaused`), against the scripted server
//! speaking the real SSE wire format: the turn that ends with the same words takes the request over (the
//! server is asked once, with the request the turn would have sent); other words ask afresh, and the
//! history holds only the turn's own words and answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tomo_core::session::SessionHandle;
use tomo_protocol::{Event, EventEnvelope, Op};
use tomo_testkit::{ScriptedResponse, ScriptedServer, script};

use support::session::{collect_until, is_idle, text_session};
use support::voice::{ended, paused};

fn finished_text(seen: &[tomo_protocol::EventEnvelope]) -> String {
    seen.iter()
        .find_map(|e| match &e.event {
            Event::TurnFinished { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no turn_finished: {seen:#?}"))
}

fn user_words(request: &tomo_testkit::RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// A session the user has paused in, saying `words`: the answer's request for them has reached the
/// server, which answers with `replies` in order.
async fn paused_session(
    replies: Vec<ScriptedResponse>,
    words: &str,
) -> (
    ScriptedServer,
    tempfile::TempDir,
    SessionHandle,
    UnboundedReceiver<EventEnvelope>,
) {
    let server = ScriptedServer::start(replies).await.unwrap();
    let (dir, session, mut events) = text_session(&server).await;
    collect_until(&mut events, |e| matches!(e, Event::SessionReady { .. })).await;
    session.send(paused(words)).await.unwrap();
    server
        .wait_for_requests(1, Duration::from_secs(5))
        .await
        .unwrap();
    (server, dir, session, events)
}

#[tokio::test]
async fn the_turn_ending_on_the_paused_words_uses_the_answer_already_started() {
    let (server, _dir, session, mut events) = paused_session(
        vec![
            script::text_reply_with_delay(
                "It is noon.",
                Duration::from_millis(200),
                Duration::ZERO,
            ),
            script::text_reply("A later answer."),
        ],
        "what time is it",
    )
    .await;
    session.send(ended("what time is it")).await.unwrap();
    let seen = collect_until(&mut events, is_idle).await;
    assert_eq!(finished_text(&seen), "It is noon.");
    assert_eq!(server.requests().len(), 1, "asked once, in the pause");

    // The next turn sees that exchange in its history, exactly once.
    session.send(ended("thanks")).await.unwrap();
    let seen = collect_until(&mut events, is_idle).await;
    assert_eq!(finished_text(&seen), "A later answer.");
    let sent = server.requests();
    assert_eq!(user_words(&sent[1]), vec!["what time is it", "thanks"]);
}

#[tokio::test]
async fn other_words_at_the_end_of_the_turn_ask_for_themselves() {
    let (server, _dir, session, mut events) = paused_session(
        vec![
            script::text_reply("For the pause."),
            script::text_reply("For the whole sentence."),
            script::text_reply("Next."),
        ],
        "I was thinking",
    )
    .await;
    session
        .send(ended("I was thinking maybe we could go out"))
        .await
        .unwrap();
    let seen = collect_until(&mut events, is_idle).await;
    assert_eq!(finished_text(&seen), "For the whole sentence.");
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        user_words(&sent[1]),
        vec!["I was thinking maybe we could go out"]
    );

    // Noise after a pause: no turn, and what the pause started is not used later.
    session.send(Op::SpeechStarted).await.unwrap();
    session.send(paused("um")).await.unwrap();
    server
        .wait_for_requests(3, Duration::from_secs(5))
        .await
        .unwrap();
    session.send(ended("  ")).await.unwrap();
    collect_until(&mut events, is_idle).await;
    // The same words again as a voice turn: had the pause's request survived the noise, it would be
    // taken ("Next." answered it); it was dropped, so the turn asks afresh (and the script has no answer).
    session.send(ended("um")).await.unwrap();
    let seen = collect_until(&mut events, is_idle).await;
    assert!(
        !seen
            .iter()
            .any(|e| matches!(&e.event, Event::TurnFinished { text, .. } if text == "Next.")),
        "{seen:#?}"
    );
    // (It is retried, as any failed request.)
    assert!(server.requests().len() > 3);
}

#[tokio::test]
async fn the_user_going_on_after_the_pause_drops_what_the_pause_started() {
    let (server, _dir, session, mut events) = paused_session(
        vec![
            script::text_reply_with_delay(
                "For the pause.",
                Duration::from_millis(300),
                Duration::ZERO,
            ),
            script::text_reply("Asked afresh."),
        ],
        "I was thinking",
    )
    .await;
    session.send(Op::SpeechResumed).await.unwrap();
    // The same words at the end (what was said after the pause was not words): had the pause's request
    // survived the user going on, the turn would take it over and answer "For the pause.".
    session.send(ended("I was thinking")).await.unwrap();
    let seen = collect_until(&mut events, is_idle).await;
    assert_eq!(finished_text(&seen), "Asked afresh.");
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(user_words(&sent[1]), vec!["I was thinking"]);
}
