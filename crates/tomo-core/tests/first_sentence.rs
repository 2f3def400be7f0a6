//! The first sentence's speech can start before the model's next token confirms where it ends: the
//! session tells the speakers what the first sentence will probably be (`OutputSink::prepare`) as soon as
//! the text stops at a sentence end, once, and only for the first sentence.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use tomo_protocol::Op;

use support::voice;

#[tokio::test]
async fn the_speakers_hear_of_the_first_sentence_before_it_is_confirmed() {
    // Streamed in small deltas: "[joy]", " Of", " course", "!", " It", …
    let voice::Speaking {
        server: _server,
        dir: _dir,
        speakers,
        session,
        ..
    } = voice::answered(
        &["[joy] Of course! It is a lovely day. Anything else?"],
        "Can you help me?",
    )
    .await;

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
