//! The first sentence's speech can start before the model's next token confirms where it ends: the
//! session tells the speakers what the first sentence will probably be (`OutputSink::prepare`) as soon as
//! the text stops at a sentence end, once, and only for the first sentence.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use tomo_protocol::{Event, Op};
use tomo_testkit::{ScriptedServer, script};

use support::session::{collect_until, environment, say, start, write_profile};
use support::voice::Speakers;

#[tokio::test]
async fn the_speakers_hear_of_the_first_sentence_before_it_is_confirmed() {
    // Streamed in small deltas: "[joy]", " Of", " course", "!", " It", …
    let server = ScriptedServer::start(vec![script::text_reply(
        "[joy] Of course! It is a lovely day. Anything else?",
    )])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "hana", &server.base_url());
    let speakers = Arc::new(Speakers::default());
    let (session, mut events) =
        start(&profile, environment(dir.path(), vec![]), speakers.clone()).await;
    say(&session, "Can you help me?").await;
    collect_until(&mut events, |e| matches!(e, Event::TurnFinished { .. })).await;

    let spoken: Vec<Option<String>> = speakers
        .sentences
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.tts_text.clone())
        .collect();
    assert_eq!(spoken[0].as_deref(), Some("Of course!"));
    // Prepared once, before any sentence was enqueued, with the words the first sentence then had.
    assert_eq!(
        *speakers.prepared.lock().unwrap(),
        [(0, "Of course!".to_owned())]
    );
    speakers.play_to_the_end();
    session.send(Op::Shutdown).await.unwrap();
    session.join().await;
}
