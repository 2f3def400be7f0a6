//! The `http` backend against a tiny local memory service: recall and hand-over follow the REST contract
//! in plugins/memory/README.md; when the service is down the turn proceeds without memory and the user is
//! told once (one `hook_failed`), until it is back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use support::{TinyServer, last_user_message, memory_block, start, write_profile};
use tomo_memory::MemoryPluginFactory;
use tomo_protocol::{Event, HookStage};
use tomo_testkit::{ScriptedServer, script};

fn hook_failures(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::HookFailed {
                hook,
                stage: HookStage::BeforeTurn,
                message,
                ..
            } if hook == "memory" => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_down_means_one_notice_and_turns_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let up = Arc::new(AtomicBool::new(true));
    let flag = Arc::clone(&up);
    // Learned three days ago, whatever day the test runs.
    let learned = (chrono::Utc::now() - chrono::Duration::days(3)).to_rfc3339();
    let service = TinyServer::start(Arc::new(move |seen| {
        if !flag.load(Ordering::SeqCst) {
            return (503, json!({"error": "maintenance"}));
        }
        if seen.target.starts_with("/memories/search") {
            (
                200,
                json!({"memories": [
                    {"id": "m1", "memory": "The user plays the cello.", "created_at": learned}
                ]}),
            )
        } else {
            (201, json!({"ok": true}))
        }
    }))
    .await;
    let llm = ScriptedServer::start(vec![]).await.unwrap();
    let overrides = format!(
        "backend = \"http\"\nbase_url = \"{}\"\nuser_id = \"ken\"\ntimeout_secs = 2.0",
        service.base_url
    );
    let profile = write_profile(dir.path(), "hana", &llm.base_url(), &overrides);
    let factory = Arc::new(MemoryPluginFactory::new());
    let mut chat = start(&profile, dir.path(), Arc::clone(&factory)).await;

    llm.push(script::text_reply("You play the cello."));
    let events = chat.say("What instrument do I play?").await;
    factory.wait_idle().await;
    assert!(hook_failures(&events).is_empty(), "{events:#?}");
    let seen = service.seen();
    assert!(
        seen[0]
            .target
            .starts_with("/memories/search?q=What+instrument"),
        "{seen:?}"
    );
    assert!(seen[0].target.contains("agent_id=hana") && seen[0].target.contains("user_id=ken"));
    assert_eq!(seen[1].method, "POST");
    assert_eq!(seen[1].target, "/memories");
    assert_eq!(
        seen[1].body["messages"][1]["content"],
        "You play the cello."
    );

    // Down: three turns all get answered; exactly one notice.
    up.store(false, Ordering::SeqCst);
    let mut failures = Vec::new();
    for i in 0..3 {
        llm.push(script::text_reply("Sure."));
        let events = chat.say(&format!("Question {i}?")).await;
        factory.wait_idle().await;
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::TurnFinished { .. })),
            "{events:#?}"
        );
        failures.extend(hook_failures(&events));
    }
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains(&service.base_url), "{}", failures[0]);
    let requests = llm.requests();
    assert_eq!(memory_block(&last_user_message(&requests[1])), "");

    // Back: memory returns, and a later outage is reported again (once).
    up.store(true, Ordering::SeqCst);
    llm.push(script::text_reply("The cello."));
    let events = chat.say("What do I play?").await;
    factory.wait_idle().await;
    assert!(hook_failures(&events).is_empty());
    let last = last_user_message(&llm.requests()[4]);
    assert!(
        memory_block(&last).contains("- 3 days ago: The user plays the cello."),
        "{last}"
    );
    chat.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_service_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    // A port nobody listens on: bind, note it, close.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let llm = ScriptedServer::start(vec![]).await.unwrap();
    let overrides =
        format!("backend = \"http\"\nbase_url = \"http://{closed}\"\ntimeout_secs = 1.0");
    let profile = write_profile(dir.path(), "hana", &llm.base_url(), &overrides);
    let factory = Arc::new(MemoryPluginFactory::new());
    let mut chat = start(&profile, dir.path(), Arc::clone(&factory)).await;
    let mut failures = Vec::new();
    for _ in 0..2 {
        llm.push(script::text_reply("Hello."));
        let events = chat.say("Hello?").await;
        factory.wait_idle().await;
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::TurnFinished { .. }))
        );
        failures.extend(hook_failures(&events));
    }
    assert_eq!(failures.len(), 1, "{failures:?}");
    chat.stop().await;
}
