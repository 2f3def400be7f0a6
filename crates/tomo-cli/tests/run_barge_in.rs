//! Talking over the character on speakers, for real and by default: `tomo run` speaks a long answer into
//! the PulseAudio null sink and listens on its monitor (so it hears its own voice, as on speakers in a
//! room); echo cancellation keeps it from hearing itself, and a question played over the answer holds
//! it at once and then, its words recognised, stops it. The user's words become the next turn, and
//! history keeps only what was heard of the cut answer, up to the hold.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tomo_testkit::{ScriptedServer, script};

mod common;
use common::{device_ready, flite, repo};

const STORY: &str = "Once upon a time a small grey cat lived on a windowsill in a quiet town. \
    Every morning she watched the birds in the garden and counted the clouds. \
    In the afternoon she slept in the sun and dreamed of fish. \
    In the evening she waited for her friend to come home from work. \
    And every night she purred until the whole house fell asleep.";

#[tokio::test(flavor = "multi_thread")]
async fn the_users_words_interrupt_the_character_on_speakers_and_become_the_next_turn() {
    if !device_ready(&[
        "silero-vad",
        "onnxruntime",
        "whisper-base",
        "piper-en-joe",
        "smart-turn-v3",
    ]) {
        return;
    }
    let server = ScriptedServer::start(vec![
        script::text_reply(STORY),
        script::text_reply("[joy] Dogs are loyal and love long walks."),
        script::text_reply("unused"),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ask, cut_in) = (dir.path().join("ask.wav"), dir.path().join("cut.wav"));
    flite("Tell me a story about a cat.", &ask);
    flite("Stop please. Tell me about dogs instead.", &cut_in);

    let mut child = Command::new(env!("CARGO_BIN_EXE_tomo"))
        .env("TOMO_LLM_BASE_URL", server.base_url())
        .env("TOMO_DATA_DIR", dir.path().join("data"))
        .env("RUST_LOG", "tomo_runtime=debug,warn")
        .args(["run", "--json", "--profile"])
        .arg(repo("crates/tomo-cli/tests/fixtures/voice/profile.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("listening on") {
                return;
            }
        }
        panic!("tomo run ended before listening");
    })
    .await
    .expect("tomo run never started listening");
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });

    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        Command::new("paplay")
            .arg(&ask)
            .status()
            .await
            .unwrap()
            .success()
    );

    let mut events: Vec<Value> = Vec::new();
    let mut next_event = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(90), stdout.next_line())
            .await
            .expect("no event in time")
            .unwrap()
            .expect("tomo run ended");
        serde_json::from_str(&line).unwrap()
    };
    // The story is playing: its third sentence has started.
    loop {
        let event = next_event().await;
        let third = event["type"] == "audio_started" && event["sentence_index"] == 2;
        assert_ne!(
            event["type"], "turn_aborted",
            "the character interrupted itself: {events:#?}"
        );
        events.push(event);
        if third {
            break;
        }
    }
    // The user talks over it.
    assert!(
        Command::new("paplay")
            .arg(&cut_in)
            .status()
            .await
            .unwrap()
            .success()
    );
    let mut held = false;
    let partial = loop {
        let event = next_event().await;
        held |= event["type"] == "answer_held";
        let aborted = (event["type"] == "turn_aborted").then(|| event["partial_text"].clone());
        events.push(event);
        if let Some(partial) = aborted {
            break partial.as_str().unwrap().to_owned();
        }
    };
    assert!(
        !partial.is_empty() && partial.len() < STORY.len() && STORY.starts_with(&partial[..20]),
        "heard so far: {partial:?}"
    );
    assert!(held, "the answer was held before it stopped: {events:#?}");
    // Two sentences had played before the cut, the end of the story had not.
    assert!(partial.contains("counted the clouds"), "{partial}");
    assert!(!partial.contains("purred"), "{partial}");
    let heard = loop {
        let event = next_event().await;
        let transcript = (event["type"] == "user_transcript").then(|| event["text"].clone());
        events.push(event);
        if let Some(text) = transcript {
            break text.as_str().unwrap().to_lowercase();
        }
    };
    assert!(
        heard.contains("dogs"),
        "the cut-in became the next turn: {heard:?}"
    );
    loop {
        let event = next_event().await;
        let done = event["type"] == "turn_finished";
        events.push(event);
        if done {
            break;
        }
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one answer, cut; one for the cut-in");
    let messages = requests[1].messages().to_vec();
    let cut_answer = messages[messages.len() - 2]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        cut_answer.starts_with(&partial) && cut_answer.contains("interrupted"),
        "the model is told where it was cut off: {cut_answer:?}"
    );
    assert!(
        messages.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("dogs")
    );
    child.start_kill().unwrap();
}
