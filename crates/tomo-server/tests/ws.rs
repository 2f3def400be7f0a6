//! The session over real WebSockets on 127.0.0.1, with the scripted LLM.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{Fixture, is_idle, next, send, seqs, types, until};
use tomo_testkit::script;

#[tokio::test]
async fn a_turn_streams_to_every_client_in_seq_order() {
    let fx = Fixture::start(
        vec![script::text_reply("[joy] Hello there! Nice to see you.")],
        |_| {},
    )
    .await;
    let mut a = fx.connect("").await;
    let mut b = fx.connect("").await;
    let ready = next(&mut a).await;
    assert_eq!(ready["type"], "session_ready", "{ready}");
    assert_eq!(ready["seq"], 1);
    assert_eq!(ready["character"], "Hana");

    send(&mut a, r#"{"type":"user_text","text":"hi"}"#).await;
    let mut seen_a = vec![ready];
    seen_a.extend(until(&mut a, is_idle).await);
    let seen_b = until(&mut b, is_idle).await;

    let kinds = types(&seen_a);
    for kind in ["turn_started", "text_delta", "sentence", "turn_finished"] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let expected: Vec<u64> = (1..=seen_a.len() as u64).collect();
    assert_eq!(seqs(&seen_a), expected, "seq must increase by one, from 1");
    assert_eq!(seen_a, seen_b, "both clients see the same events");

    let finished = seen_a
        .iter()
        .find(|f| f["type"] == "turn_finished")
        .unwrap();
    assert_eq!(finished["text"], "[joy] Hello there! Nice to see you.");
    let sentences: Vec<&Value> = seen_a.iter().filter(|f| f["type"] == "sentence").collect();
    assert_eq!(sentences[0]["sentence"]["display_text"], "Hello there!");
    assert_eq!(sentences[0]["sentence"]["actions"][0]["name"], "joy");
}

#[tokio::test]
async fn a_client_dropped_mid_turn_gets_every_missed_event_once_on_reconnect() {
    let long = "Once upon a time there was a small robot who lived on a desk. \
                It liked tea, rainy days and long conversations. \
                Every evening it told the user a story about the stars.";
    let fx = Fixture::start(
        vec![script::text_reply_with_delay(
            long,
            Duration::from_millis(20),
            Duration::from_millis(25),
        )],
        |_| {},
    )
    .await;
    // The witness stays connected for the whole turn.
    let mut witness = fx.connect("").await;
    let mut flaky = fx.connect("").await;
    send(
        &mut flaky,
        r#"{"type":"user_text","text":"tell me a story"}"#,
    )
    .await;

    // Read a few deltas, then drop the socket in the middle of the turn.
    let mut deltas = 0;
    let first = until(&mut flaky, |f| {
        if f["type"] == "text_delta" {
            deltas += 1;
        }
        deltas == 3
    })
    .await;
    let last_seq = first.last().unwrap()["seq"].as_u64().unwrap();
    drop(flaky);
    assert!(
        !types(&first).contains(&"turn_finished"),
        "the turn must still be running when the client drops"
    );
    // Let the session go on without this client: wait until it has emitted more events.
    fx.wait_for_seq(last_seq + 5).await;

    let mut back = fx.connect(&format!("last_seq={last_seq}")).await;
    let rest = until(&mut back, is_idle).await;
    let all = until(&mut witness, is_idle).await;

    assert_eq!(
        rest[0]["seq"].as_u64(),
        Some(last_seq + 1),
        "replay resumes right after last_seq"
    );
    let mut rebuilt = first.clone();
    rebuilt.extend(rest.iter().cloned());
    assert_eq!(rebuilt, all, "missed events exactly once, in order");
    let text: String = rebuilt
        .iter()
        .filter(|f| f["type"] == "text_delta")
        .map(|f| f["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, long);
}

#[tokio::test]
async fn bad_frames_get_an_error_and_the_connection_stays_open() {
    let fx = Fixture::start(vec![script::text_reply("Still here.")], |_| {}).await;
    let mut ws = fx.connect("").await;
    assert_eq!(next(&mut ws).await["type"], "session_ready");

    let cases = [
        ("{not json", "not a valid op"),
        (r#"{"type":"dance"}"#, "dance"),
        (r#"{"type":"user_text"}"#, "text"),
        (r#"{"type":"shutdown"}"#, "shutdown"),
        (
            r#"{"type":"switch_profile","path":"../outside.toml"}"#,
            "../outside.toml",
        ),
        (
            r#"{"type":"switch_profile","path":"/etc/passwd"}"#,
            "/etc/passwd",
        ),
    ];
    std::fs::write(fx.dir.path().join("outside.toml"), "").unwrap();
    for (frame, named) in cases {
        send(&mut ws, frame).await;
        let error = next(&mut ws).await;
        assert_eq!(error["type"], "error", "{frame}: {error}");
        assert_eq!(error["code"], "invalid_op");
        assert!(
            error.get("seq").is_none(),
            "server frames carry no seq: {error}"
        );
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(named), "{frame}: {message}");
    }

    send(&mut ws, r#"{"type":"user_text","text":"are you there?"}"#).await;
    let turn = until(&mut ws, is_idle).await;
    let finished = turn.iter().find(|f| f["type"] == "turn_finished").unwrap();
    assert_eq!(finished["text"], "Still here.");
}

#[tokio::test]
async fn switch_profile_loads_a_character_from_the_profiles_directory() {
    let fx = Fixture::start(Vec::new(), |_| {}).await;
    let mut ws = fx.connect("").await;
    assert_eq!(next(&mut ws).await["character"], "Hana");
    send(&mut ws, r#"{"type":"switch_profile","path":"kuro.toml"}"#).await;
    let ready = until(&mut ws, |f| f["type"] == "session_ready").await;
    let ready = ready.last().unwrap();
    assert_eq!(ready["character"], "Kuro");
    assert_eq!(ready["agent_id"], "kuro");
}

#[tokio::test]
async fn a_new_client_replays_the_buffer_and_reports_what_it_no_longer_has() {
    let fx = Fixture::start(vec![script::text_reply("One. Two. Three.")], |c| {
        c.replay_capacity = 5;
    })
    .await;
    let mut ws = fx.connect("").await;
    send(&mut ws, r#"{"type":"user_text","text":"count"}"#).await;
    let all = until(&mut ws, is_idle).await;
    let latest = all.last().unwrap()["seq"].as_u64().unwrap();
    assert!(latest > 5, "the turn must outgrow the buffer");

    let mut late = fx.connect("last_seq=0").await;
    let gap = next(&mut late).await;
    assert_eq!(gap["type"], "replay_gap", "{gap}");
    assert_eq!(gap["missed_from"], 1);
    assert_eq!(gap["missed_to"], latest - 5);
    let mut kept = Vec::new();
    for _ in 0..5 {
        kept.push(next(&mut late).await);
    }
    assert_eq!(kept, all[all.len() - 5..].to_vec());

    // A seq this server never emitted: an earlier server process.
    let mut stale = fx.connect(&format!("last_seq={}", latest + 100)).await;
    let reset = next(&mut stale).await;
    assert_eq!(reset["type"], "session_reset", "{reset}");
    assert_eq!(reset["latest_seq"], latest);
}
