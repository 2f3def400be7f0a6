#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use tomo_config::profile::{DEFAULT_EMBEDDED_MODEL, parse_profile};
use tomo_models::Manifest;

fn profile(llm: &str) -> Profile {
    let text = format!(
        "[character]\nname = \"Hana\"\nagent_id = \"hana\"\npersona = \"You are Hana.\"\n\n[llm]\n{llm}\n"
    );
    parse_profile(&text, std::path::Path::new("p.toml"))
        .unwrap()
        .profile
}

fn store(root: &std::path::Path) -> ModelStore {
    ModelStore::new(root, Manifest::builtin().unwrap())
}

fn request(prompt_budget: u32, max_tokens: Option<u32>) -> EmbeddedRequest {
    EmbeddedRequest {
        model: "m".into(),
        temperature: None,
        max_tokens,
        idle_timeout: Duration::from_secs(60),
        prompt_budget,
    }
}

#[test]
fn the_default_embedded_model_is_the_manifests_default_brain() {
    let manifest = Manifest::builtin().unwrap();
    let defaults: Vec<&str> = manifest
        .models
        .iter()
        .filter(|m| m.kind == ModelKind::Llm && m.default)
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(defaults, [DEFAULT_EMBEDDED_MODEL]);
}

#[test]
fn the_engines_window_holds_the_prompt_budget_and_the_answer() {
    assert_eq!(slot_context(&request(3000, Some(400))), 4096);
    assert_eq!(slot_context(&request(256, Some(100))), 2048);
    assert_eq!(slot_context(&request(8000, None)), 9728);
    assert_eq!(slot_context(&request(u32::MAX, None)), 16_384);
}

#[test]
fn flags_choose_between_the_embedded_brain_and_an_endpoint() {
    let embedded = profile("engine = \"embedded\"");
    let none = EnvOptions::default();
    assert_eq!(
        embedded_model(&embedded, &none).as_deref(),
        Some(DEFAULT_EMBEDDED_MODEL)
    );
    let other = EnvOptions {
        llm_model: Some("smollm2-135m".into()),
        ..EnvOptions::default()
    };
    assert_eq!(
        embedded_model(&embedded, &other).as_deref(),
        Some("smollm2-135m")
    );
    let url = EnvOptions {
        llm_base_url: Some("http://127.0.0.1:8080/v1".into()),
        ..EnvOptions::default()
    };
    assert_eq!(embedded_model(&embedded, &url), None);
    assert_eq!(
        embedded_model(&profile("model = \"qwen2.5:3b\""), &none),
        None
    );
}

#[test]
fn a_missing_model_is_named_for_the_first_run_install_and_an_unknown_one_lists_the_known() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let none = EnvOptions::default();
    assert_eq!(
        missing_model(&store, &profile("engine = \"embedded\""), &none).as_deref(),
        Some(DEFAULT_EMBEDDED_MODEL)
    );
    assert_eq!(
        missing_model(&store, &profile("model = \"qwen2.5:3b\""), &none),
        None
    );
    let brain = Brain::new(store, Arc::new(|_| {}));
    let Err(LlmError::Brain(message)) = brain.engine_config("qwen-huge", 4096) else {
        panic!("an unknown model is refused");
    };
    assert!(
        message.contains("no embedded model `qwen-huge`")
            && message.contains("qwen2.5-coder-1.5b")
            && message.contains("smollm2-135m"),
        "{message}"
    );
    // Not an embedded model at all (a voice): refused the same way.
    assert!(brain.engine_config("silero-vad", 4096).is_err());
    let config = brain.engine_config("smollm2-135m", 4096).unwrap();
    assert!(
        config
            .model_path
            .ends_with("llm/smollm2-135m-instruct-q4_1.gguf")
    );
    assert_eq!(config.expected_size, Some(98_362_432));
}
