//! An answer interrupted on speakers: history, `turn_aborted` and the next request keep only what the
//! user heard — the sentences played to the end and the playing one up to its share of the audio — and
//! the cut is marked so the model knows where it was stopped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use tomo_core::session::heard::CUT_MARKER;
use tomo_core::sink::OutputSink;
use tomo_protocol::{Event, Op};

use support::session::{collect_until, is_idle, say};
use support::voice;

fn last_history_record(dir: &std::path::Path) -> Value {
    let history = std::fs::read_to_string(dir.join("characters/hana/history.jsonl")).unwrap();
    serde_json::from_str(history.lines().last().unwrap()).unwrap()
}

#[tokio::test]
async fn history_keeps_the_sentences_heard_and_the_share_of_the_one_playing() {
    let answer = "One sentence here. Two is a longer sentence here. Three.";
    // The text is complete; the speakers are in the middle of the second sentence (half of its audio).
    let voice::Speaking {
        server,
        dir,
        speakers,
        session,
        mut events,
    } = voice::speaking(&[answer, "Sorry, go on."], "tell me something").await;
    assert_eq!(speakers.sentences.lock().unwrap().len(), 3);
    session.send(Op::Interrupt).await.unwrap();
    let seen = collect_until(&mut events, is_idle).await;
    let partial = seen
        .iter()
        .find_map(|e| match &e.event {
            Event::TurnAborted { partial_text, .. } => Some(partial_text.clone()),
            _ => None,
        })
        .expect("turn_aborted");
    assert_eq!(partial, "One sentence here. Two is a longer");
    let last = last_history_record(dir.path());
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["interrupted"], true);
    let stored = format!("One sentence here. Two is a longer{CUT_MARKER}");
    assert_eq!(last["content"], stored.as_str());

    // The next request tells the model where it was cut off.
    *speakers.playhead.lock().unwrap() = None;
    say(&session, "wait, what?").await;
    collect_until(&mut events, |e| matches!(e, Event::TurnFinished { .. })).await;
    let messages = server.requests()[1].messages().to_vec();
    assert_eq!(messages[2]["content"], stored.as_str());
    assert_eq!(messages[3]["content"], "wait, what?");
    speakers.interrupt();
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}

#[tokio::test]
async fn an_answer_drained_to_the_end_is_stored_whole() {
    let voice::Speaking {
        server: _server,
        dir,
        speakers,
        session,
        mut events,
    } = voice::answered(&["All of it. Really."], "hi").await;
    speakers.play_to_the_end();
    collect_until(&mut events, is_idle).await;
    let last = last_history_record(dir.path());
    assert_eq!(last["content"], "All of it. Really.");
    assert!(last.get("interrupted").is_none());
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}
