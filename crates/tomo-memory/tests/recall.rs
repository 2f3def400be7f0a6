//! Recall across a long scripted conversation, superseding, and isolation between characters — through
//! a real session, the real plugin manifest, the SQLite store and a scripted OpenAI-compatible server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{last_user_message, memory_block, start, write_profile};
use tomo_memory::{MemoryPluginFactory, MemoryStore, database_path};
use tomo_testkit::{ScriptedServer, script};

const NOTHING: &str = r#"{"add": [], "supersede": []}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_fact_is_recalled_and_superseded_fact_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let profile = write_profile(dir.path(), "hana", &server.base_url(), "limit = 5");
    let factory = Arc::new(MemoryPluginFactory::new());
    let mut chat = start(&profile, dir.path(), Arc::clone(&factory)).await;

    // Each turn: the reply, then (in the background) the extraction answer.
    let mut turns: Vec<(String, String, String)> = vec![(
        "Hi! My cat is called Miso and I live in Paris.".into(),
        "Nice to meet you and Miso!".into(),
        // Fenced, as small models like to answer.
        "```json\n{\"add\": [\"The user has a cat called Miso.\", \"The user lives in Paris.\"], \"supersede\": []}\n```".into(),
    )];
    for i in 0..8 {
        let extraction = if i == 3 {
            // Malformed: logged and skipped, the conversation goes on.
            "Sorry, I can't help with that.".to_owned()
        } else {
            NOTHING.to_owned()
        };
        turns.push((
            format!("Small talk number {i}: the weather is fine."),
            "Indeed it is.".into(),
            extraction,
        ));
    }
    turns.push((
        "Big news: I moved to Berlin last week!".into(),
        "Wow, congratulations on the move!".into(),
        // Fact ids: Miso = 1, Paris = 2 (a fresh database).
        r#"{"add": [], "supersede": [{"id": 2, "fact": "The user lives in Berlin."}]}"#.into(),
    ));
    turns.push((
        "Where do I live these days, and what is my cat's name?".into(),
        "You live in Berlin, and your cat is Miso.".into(),
        NOTHING.into(),
    ));

    for (user, reply, extraction) in &turns {
        server.push(script::text_reply(reply));
        server.push(script::text_reply(extraction));
        let events = chat.say(user).await;
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, tomo_protocol::Event::HookFailed { .. })),
            "{events:#?}"
        );
        factory.wait_idle().await;
    }
    let requests = server
        .wait_for_requests(2 * turns.len(), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(requests.len(), 2 * turns.len());

    // The extraction of the move saw the stored Paris fact with its id.
    let move_extraction = last_user_message(&requests[2 * 9 + 1]);
    assert!(
        move_extraction.contains("id 2 (learned ")
            && move_extraction.contains("): The user lives in Paris."),
        "{move_extraction}"
    );

    let last_turn = last_user_message(&requests[2 * 10]);
    let block = memory_block(&last_turn);
    assert!(
        block.contains("- today: The user lives in Berlin."),
        "{last_turn}"
    );
    assert!(
        block.contains("- today: The user has a cat called Miso."),
        "{last_turn}"
    );
    assert!(
        !block.contains("Paris"),
        "superseded fact injected: {last_turn}"
    );
    assert!(last_turn.ends_with("what is my cat's name?"));

    // The superseded fact is kept, marked.
    let store = MemoryStore::open(&database_path(dir.path())).unwrap();
    let all = store.list("hana", true).unwrap();
    let paris = all.iter().find(|f| f.fact.contains("Paris")).unwrap();
    let berlin = all.iter().find(|f| f.fact.contains("Berlin")).unwrap();
    assert_eq!(paris.superseded_by, Some(berlin.id));
    assert_eq!(berlin.source_turn, Some(10));
    assert_eq!(store.list("hana", false).unwrap().len(), 2);
    chat.stop().await;
}

/// Small models repeat what they were shown: a stored fact re-added with the listing's date, or
/// "superseded" by itself, is the fact already known, and keeps its id and date.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fact_repeated_by_the_extractor_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let profile = write_profile(dir.path(), "hana", &server.base_url(), "limit = 5");
    let factory = Arc::new(MemoryPluginFactory::new());
    let mut chat = start(&profile, dir.path(), Arc::clone(&factory)).await;
    let turns = [
        (
            "My cat is called Miso.",
            r#"{"add": ["The user has a cat called Miso."]}"#,
        ),
        (
            "Miso is sleeping.",
            r#"{"add": ["the user has a cat called Miso (2026-12-03)"],
                "supersede": [{"id": 1, "fact": "The user has a cat called Miso. (2026-12-03)"}]}"#,
        ),
    ];
    for (user, extraction) in turns {
        server.push(script::text_reply("Cute!"));
        server.push(script::text_reply(extraction));
        chat.say(user).await;
        factory.wait_idle().await;
    }
    let store = MemoryStore::open(&database_path(dir.path())).unwrap();
    let all = store.list("hana", true).unwrap();
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0].id, 1);
    assert_eq!(all[0].fact, "The user has a cat called Miso.");
    assert_eq!(all[0].superseded_by, None);
    chat.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn characters_never_see_each_others_memories() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let factory = Arc::new(MemoryPluginFactory::new());

    let hana = write_profile(dir.path(), "hana", &server.base_url(), "");
    let mut chat = start(&hana, dir.path(), Arc::clone(&factory)).await;
    server.push(script::text_reply("Lovely name!"));
    server.push(script::text_reply(
        r#"{"add": ["The user has a cat called Miso."]}"#,
    ));
    chat.say("My cat is called Miso.").await;
    factory.wait_idle().await;
    server.push(script::text_reply("Miso!"));
    server.push(script::text_reply(NOTHING));
    chat.say("What is my cat called?").await;
    factory.wait_idle().await;
    chat.stop().await;

    let kuro = write_profile(dir.path(), "kuro", &server.base_url(), "");
    let mut chat = start(&kuro, dir.path(), Arc::clone(&factory)).await;
    server.push(script::text_reply("I do not know."));
    server.push(script::text_reply(
        r#"{"add": ["The user is called Ken."]}"#,
    ));
    chat.say("What is my cat called?").await;
    factory.wait_idle().await;
    chat.stop().await;

    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    // Hana recalls her fact; Kuro, asked the same question, gets no memory at all.
    assert!(memory_block(&last_user_message(&requests[2])).contains("Miso"));
    let kuro_turn = last_user_message(&requests[4]);
    assert_eq!(memory_block(&kuro_turn), "", "{kuro_turn}");
    // Kuro's extractor was not shown Hana's facts either.
    assert!(!last_user_message(&requests[5]).contains("Miso"));

    let store = MemoryStore::open(&database_path(dir.path())).unwrap();
    let facts = |agent: &str| -> Vec<String> {
        store
            .list(agent, true)
            .unwrap()
            .into_iter()
            .map(|f| f.fact)
            .collect()
    };
    assert_eq!(facts("hana"), ["The user has a cat called Miso."]);
    assert_eq!(facts("kuro"), ["The user is called Ken."]);
    assert!(store.search_text("kuro", "cat Miso", 5).unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vector_search_finds_what_words_miss() {
    let dir = tempfile::tempdir().unwrap();
    // Embeddings server: "pet-like" texts point one way, everything else the other.
    let embeddings = support::TinyServer::start(Arc::new(|seen| {
        let data: Vec<serde_json::Value> = seen.body["input"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let text = text.as_str().unwrap().to_lowercase();
                let petty = text.contains("cat") || text.contains("pet");
                let v = if petty { [1.0, 0.1] } else { [0.1, 1.0] };
                serde_json::json!({"index": i, "embedding": v})
            })
            .collect();
        (200, serde_json::json!({"data": data}))
    }))
    .await;
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let overrides = format!(
        "embeddings_model = \"tiny\"\nembeddings_base_url = \"{}/v1\"",
        embeddings.base_url
    );
    let profile = write_profile(dir.path(), "hana", &server.base_url(), &overrides);
    let factory = Arc::new(MemoryPluginFactory::new());
    let mut chat = start(&profile, dir.path(), Arc::clone(&factory)).await;
    server.push(script::text_reply("Cute!"));
    server.push(script::text_reply(
        r#"{"add": ["The user has a cat called Miso.", "The user works in a bakery."]}"#,
    ));
    chat.say("My cat is called Miso. I work in a bakery.").await;
    factory.wait_idle().await;
    // Two unrelated turns, so the words of the first one are no longer recent context.
    for filler in ["The weather is nice today.", "Sunny, even."] {
        server.push(script::text_reply("Indeed."));
        server.push(script::text_reply(NOTHING));
        chat.say(filler).await;
        factory.wait_idle().await;
    }
    server.push(script::text_reply("Tell me!"));
    server.push(script::text_reply(NOTHING));
    // No word in common with the stored fact: only the vectors connect them.
    chat.say("How is my pet doing?").await;
    factory.wait_idle().await;
    let block = memory_block(&last_user_message(&server.requests()[6]));
    assert!(block.contains("Miso"), "{block}");
    assert!(!block.contains("bakery"), "{block}");
    let seen = embeddings.seen();
    assert!(
        seen.iter()
            .all(|s| s.target == "/v1/embeddings" && s.body["model"] == "tiny")
    );
    chat.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recent_context_finds_what_the_current_words_miss() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(vec![]).await.unwrap();
    let profile = write_profile(dir.path(), "hana", &server.base_url(), "limit = 5");
    let factory = Arc::new(MemoryPluginFactory::new());
    let mut chat = start(&profile, dir.path(), Arc::clone(&factory)).await;
    let turns = [
        (
            "My sister is called Ana.",
            "What a lovely name!",
            r#"{"add": ["The user's sister is called Ana."], "supersede": []}"#,
        ),
        (
            "I miss my sister a lot lately.",
            "That sounds hard.",
            NOTHING,
        ),
        // Nothing in these words matches the fact; the previous utterance ("sister") does.
        ("What was her name again?", "Her name is Ana.", NOTHING),
    ];
    for (user, reply, extraction) in turns {
        server.push(script::text_reply(reply));
        server.push(script::text_reply(extraction));
        chat.say(user).await;
        factory.wait_idle().await;
    }
    let requests = server
        .wait_for_requests(6, Duration::from_secs(5))
        .await
        .unwrap();
    let last_turn = last_user_message(&requests[4]);
    assert!(
        memory_block(&last_turn).contains("The user's sister is called Ana."),
        "{last_turn}"
    );
    assert!(last_turn.ends_with("What was her name again?"));
    chat.stop().await;
}
