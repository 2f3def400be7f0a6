//! The shipped Hana on the default brain (Qwen2.5-Coder-1.5B, the real engine), as a new user meets her:
//! what the user says in one session is learned by the memory plugin (the model extracts the facts), and a
//! later session — with the conversation history gone, so only memory can know — answers from it. The
//! same later session asks for the time: the answer must be the real hour (the time plugin puts the clock
//! into the turn's context; the `get_time` call itself on this model is tested in
//! crates/tomo-llm-engine/tests/agent_loop.rs).
//!
//! Greedy decoding (temperature 0) so the run is repeatable; everything else is the shipped profile.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};

use chrono::Timelike;
use tomo_memory::{MemoryStore, database_path};
use tomo_protocol::{Event, Op};

use support::{is_idle, repo_root, start, until};

const DEFAULT_FILE: &str = "llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// The shipped profile with greedy decoding, in `dir` (its relative asset paths are not used headless).
fn shipped_hana(dir: &Path) -> PathBuf {
    let shipped = std::fs::read_to_string(repo_root().join("profiles/hana.toml")).unwrap();
    assert!(shipped.contains("temperature = 0.8"), "the profile changed");
    let path = dir.join("hana.toml");
    std::fs::write(
        &path,
        shipped.replace("temperature = 0.8", "temperature = 0.0"),
    )
    .unwrap();
    path
}

async fn say(
    session: &tomo_runtime::RunningSession,
    events: &mut tokio::sync::mpsc::UnboundedReceiver<tomo_protocol::EventEnvelope>,
    text: &str,
) -> Vec<Event> {
    session
        .ops()
        .send(Op::UserText { text: text.into() })
        .await
        .unwrap();
    until(events, 240, is_idle).await
}

/// The current local hour as a model may write it: `17:`, `5:`, `5 pm` or the word (`five`).
fn hour_forms() -> Vec<String> {
    let hour = chrono::Local::now().hour();
    let twelve = (hour + 11) % 12 + 1;
    let words = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    vec![
        format!("{hour}:"),
        format!("{hour:02}:"),
        format!("{twelve}:"),
        format!("{twelve} pm"),
        format!("{twelve} am"),
        format!("{twelve} o'clock"),
        words[twelve as usize - 1].to_owned(),
    ]
}

fn answer(turn: &[Event]) -> String {
    turn.iter()
        .find_map(|e| match e {
            Event::TurnFinished { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the turn was answered: {turn:#?}"))
}

#[tokio::test]
async fn what_the_user_said_in_one_session_is_remembered_in_the_next_and_the_time_is_the_real_one()
{
    if !support::prerequisites() {
        return;
    }
    let model = tomo_testkit::prereq::models_dir().join(DEFAULT_FILE);
    if !model.is_file() {
        tomo_testkit::prereq::skip_or_fail(&format!(
            "{} is not installed (tomo models install)",
            model.display()
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let profile = shipped_hana(dir.path());
    let data = dir.path().join("data");

    // Session 1: the user introduces themself and their cat.
    let (session, mut events) = start(&profile, &data).await.unwrap();
    until(&mut events, 120, |e| {
        matches!(e, Event::SessionReady { .. })
    })
    .await;
    let first = say(
        &session,
        &mut events,
        "My name is Alex and my cat is called Mochi.",
    )
    .await;
    eprintln!("session 1: {}", answer(&first));
    // Shutting down waits for the plugins' background work: the memory extraction of that turn.
    session.shutdown().await;
    let store = MemoryStore::open(&database_path(&data)).unwrap();
    let facts: Vec<String> = store
        .list("hana", false)
        .unwrap()
        .into_iter()
        .map(|f| f.fact)
        .collect();
    eprintln!("learned: {facts:?}");
    assert!(
        facts.iter().any(|f| f.contains("Mochi")),
        "the cat's name was learned: {facts:?}"
    );
    assert!(
        facts.iter().any(|f| f.contains("Alex")),
        "the user's name was learned: {facts:?}"
    );
    drop(store);

    // The conversation itself is gone (as after clearing it, or long after it was compressed away).
    let history = data.join("characters/hana/history.jsonl");
    assert!(
        history.is_file(),
        "session 1 kept its history at {history:?}"
    );
    std::fs::remove_file(&history).unwrap();

    // Session 2: a new start of the app.
    let (session, mut events) = start(&profile, &data).await.unwrap();
    until(&mut events, 120, |e| {
        matches!(e, Event::SessionReady { .. })
    })
    .await;
    let recalled = answer(&say(&session, &mut events, "What is my cat called?").await);
    eprintln!("session 2, recall: {recalled}");
    assert!(
        recalled.contains("Mochi"),
        "recalled from memory: {recalled}"
    );
    assert!(
        !recalled.contains("memory context") && !recalled.contains("remember about the user"),
        "the context block is never part of the answer: {recalled}"
    );

    let hours_before = hour_forms();
    let told = answer(&say(&session, &mut events, "What time is it right now?").await);
    eprintln!("session 2, time: {told}");
    let mut hours = hour_forms();
    hours.extend(hours_before);
    let lower = told.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
    // Digit forms anywhere ("17:19"), the hour's word only as a whole word ("five", not "often").
    assert!(
        hours
            .iter()
            .any(|h| if h.chars().any(|c| c.is_ascii_digit()) {
                lower.contains(h.as_str())
            } else {
                words.contains(&h.as_str())
            }),
        "the answer tells the real hour ({hours:?}): {told}"
    );
    session.shutdown().await;
}
