//! The embedded brain in a profile: what it needs, what it ignores, and the names `check` offers.

use super::*;

#[test]
fn an_embedded_profile_needs_no_model_url_or_key_and_old_profiles_stay_endpoints() {
    let p = parse(EMBEDDED).unwrap().profile;
    assert_eq!(p.llm.engine, LlmEngine::Embedded);
    assert_eq!(p.llm.embedded_model(), Some("qwen2.5-coder-1.5b"));
    let named = parse(&format!("{EMBEDDED}model = \"smollm2-135m\"\n")).unwrap();
    assert_eq!(named.profile.llm.embedded_model(), Some("smollm2-135m"));
    for spelling in ["Embedded", "llama.cpp"] {
        let text = EMBEDDED.replace("\"embedded\"", &format!("\"{spelling}\""));
        assert_eq!(
            parse(&text).unwrap().profile.llm.engine,
            LlmEngine::Embedded
        );
    }
    // Without `engine`: what such a profile always meant, an OpenAI-compatible endpoint.
    let old = parse(MINIMAL).unwrap().profile;
    assert_eq!(old.llm.engine, LlmEngine::OpenAi);
    assert_eq!(old.llm.embedded_model(), None);
    let spelled = MINIMAL.replace("[llm]\n", "[llm]\nengine = \"OpenAI\"\n");
    assert_eq!(
        parse(&spelled).unwrap().profile.llm.engine,
        LlmEngine::OpenAi
    );
}

#[test]
fn an_endpoint_without_a_model_says_what_to_write() {
    let d = invalid(parse(&MINIMAL.replace("model = \"qwen2.5:3b\"\n", "")));
    assert_eq!(places(&d), [(Error, 6, 2, "llm.model")]);
    assert!(
        d[0].message.contains("engine = \"embedded\""),
        "{}",
        d[0].message
    );
    let d = invalid(parse(&MINIMAL.replace("qwen2.5:3b", " ")));
    assert_eq!(d[0].message, "must not be empty");
}

#[test]
fn url_and_key_of_an_embedded_profile_are_ignored_with_a_warning() {
    let text = format!(
        "{EMBEDDED}base_url = \"https://api.openai.com/v1\"\napi_key_env = \"OPENAI_API_KEY\"\n"
    );
    let loaded = parse(&text).unwrap();
    assert_eq!(
        places(&loaded.warnings),
        [
            (Warning, 8, 1, "llm.base_url"),
            (Warning, 9, 1, "llm.api_key_env")
        ]
    );
    assert!(loaded.warnings[1].message.contains("needs no key"));
}

#[test]
fn check_names_the_embedded_models_when_the_name_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    let known = CheckContext {
        embedded_models: Some(vec![
            EmbeddedModelInfo {
                name: "qwen2.5-coder-1.5b".into(),
                installed: true,
            },
            EmbeddedModelInfo {
                name: "smollm2-135m".into(),
                installed: false,
            },
        ]),
    };
    let plugins = repo_root().join("plugins");
    std::fs::write(&path, format!("{EMBEDDED}model = \"qwen2.5-coder-1.5\"\n")).unwrap();
    let d = check_profile_with(&path, &plugins, &known);
    assert_eq!(places(&d), [(Error, 8, 9, "llm.model")]);
    assert!(
        d[0].message
            .contains("`qwen2.5-coder-1.5b` (installed), `smollm2-135m`"),
        "{}",
        d[0].message
    );
    assert!(d[0].message.contains("did you mean `qwen2.5-coder-1.5b`"));
    std::fs::write(&path, format!("{EMBEDDED}model = \"smollm2-135m\"\n")).unwrap();
    let d = check_profile_with(&path, &plugins, &known);
    assert_eq!(places(&d), [(Warning, 8, 9, "llm.model")]);
    assert!(d[0].message.contains("tomo models install smollm2-135m"));
    // The default model, installed: all is well; and without a store nothing is checked.
    std::fs::write(&path, EMBEDDED).unwrap();
    assert!(check_profile_with(&path, &plugins, &known).is_empty());
    std::fs::write(&path, format!("{EMBEDDED}model = \"nope\"\n")).unwrap();
    assert!(check_profile(&path, &plugins).is_empty());
}
