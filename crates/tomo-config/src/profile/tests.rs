#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use super::*;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/profiles")
        .join(case)
        .join("profile.toml")
}

/// `(severity, line, column, field)` of each diagnostic, for compact assertions.
fn places(diagnostics: &[Diagnostic]) -> Vec<(Severity, usize, usize, &str)> {
    diagnostics
        .iter()
        .map(|d| (d.severity, d.line, d.column, d.field.as_str()))
        .collect()
}

fn invalid(result: Result<LoadedProfile, ProfileError>) -> Vec<Diagnostic> {
    match result {
        Err(ProfileError::Invalid(d)) => d,
        Err(e) => panic!("expected Invalid, got {e}"),
        Ok(p) => panic!("expected Invalid, got a profile: {p:?}"),
    }
}

fn parse(text: &str) -> Result<LoadedProfile, ProfileError> {
    parse_profile(text, Path::new("test.toml"))
}

const MINIMAL: &str = r#"[character]
name = "Hana"
agent_id = "hana"
persona = "You are Hana."

[llm]
model = "qwen2.5:3b"
"#;

use Severity::{Error, Warning};

#[test]
fn minimal_profile_loads_with_defaults() {
    let loaded = parse(MINIMAL).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let p = loaded.profile;
    assert_eq!(p.source, Path::new("test.toml"));
    assert_eq!(p.character.name, "Hana");
    assert_eq!(p.character.greeting, None);
    assert_eq!(p.llm.base_url, "http://127.0.0.1:11434/v1");
    assert_eq!(p.llm.model, "qwen2.5:3b");
    assert_eq!(p.llm.api_key_env, None);
    assert_eq!(p.llm.temperature, None);
    assert!(!p.llm.show_reasoning && !p.llm.show_think);
    assert_eq!(p.llm.context_turns, 20);
    assert_eq!(p.llm.request_timeout_secs, 60.0);
    assert_eq!(p.llm.max_retries, 2);
    assert_eq!(p.llm.max_tool_rounds, 6);
    assert_eq!(p.asr, AsrConfig::default());
    assert_eq!(
        (p.asr.engine.as_str(), p.asr.model.as_str()),
        ("whisper", "base")
    );
    assert_eq!((p.tts.engine.as_str(), p.tts.speed), ("piper", 1.0));
    assert_eq!(p.live2d, Live2dConfig::default());
    assert_eq!(p.plugins, PluginsConfig::default());
    assert!(p.emotions().is_empty());
}

#[test]
fn shipped_profiles_load_without_warnings_and_pass_check() {
    for (file, name) in [
        ("hana", "hana"),
        ("kuro", "kuro"),
        ("mei", "mei"),
        ("game-companion", "kuma"),
    ] {
        let path = repo_root().join("profiles").join(format!("{file}.toml"));
        let loaded = load_profile(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let p = &loaded.profile;
        assert_eq!(p.character.agent_id, name);
        // A fresh install talks: the brain on this computer, no server, no key.
        assert_eq!(p.llm.engine, LlmEngine::Embedded);
        assert_eq!(p.llm.embedded_model(), Some(DEFAULT_EMBEDDED_MODEL));
        assert_eq!(p.llm.api_key_env, None);
        assert_eq!(p.emotions().len(), 5);
        for emotion in p.emotions() {
            assert!(
                p.character.persona.contains(&format!("[{emotion}]")),
                "{name}'s persona should teach the `[{emotion}]` tag"
            );
        }
        let diagnostics = check_profile(&path, &repo_root().join("plugins"));
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
    }
    let hana = load_profile(&repo_root().join("profiles/hana.toml"))
        .unwrap()
        .profile;
    assert_eq!(hana.plugins.enabled, ["time", "diary", "memory"]);
    assert_eq!(
        hana.emotions(),
        ["angry", "joy", "neutral", "sad", "surprised"]
    );
    assert_eq!(
        hana.live2d.model.as_deref(),
        Some("assets/live2d/shizuku/shizuku.model.json")
    );
    let kuro = load_profile(&repo_root().join("profiles/kuro.toml"))
        .unwrap()
        .profile;
    assert_eq!(kuro.plugins.enabled, ["time", "web_fetch"]);
    // Voices that fit the characters: a woman's for Hana, a man's for Kuro (Kokoro: `af_`/`am_`).
    assert_eq!(
        (hana.tts.engine.as_str(), hana.tts.voice.as_str()),
        ("kokoro", "af_heart")
    );
    assert_eq!(
        (kuro.tts.engine.as_str(), kuro.tts.voice.as_str()),
        ("kokoro", "am_michael")
    );
    let mei = load_profile(&repo_root().join("profiles/mei.toml"))
        .unwrap()
        .profile;
    // Mei listens and speaks Mandarin.
    assert_eq!(mei.asr.language.as_deref(), Some("zh"));
    assert!(mei.tts.voice.starts_with("zf_"), "{}", mei.tts.voice);
    assert!(mei.character.persona.contains("简体中文"));
}

#[test]
fn every_wrong_type_is_reported_at_its_value() {
    let d = invalid(load_profile(&fixture("wrong_type")));
    assert_eq!(
        places(&d),
        [
            (Error, 8, 15, "llm.temperature"),
            (Error, 9, 14, "llm.max_tokens"),
            (Error, 10, 14, "llm.show_think"),
        ]
    );
    assert_eq!(d[0].message, "expected a number, found a string");
    assert_eq!(d[1].message, "expected a non-negative integer, found `-5`");
    assert_eq!(
        d[2].message,
        "expected a boolean (true or false), found a string"
    );
    let file = fixture("wrong_type");
    assert_eq!(
        d[0].to_string(),
        format!(
            "{}:8:15: error: `llm.temperature`: expected a number, found a string",
            file.display()
        )
    );
}

#[test]
fn missing_required_fields_are_reported_at_their_table() {
    let d = invalid(load_profile(&fixture("missing_required")));
    // `name` has the wrong type: reported once as such, not again as missing.
    assert_eq!(
        places(&d),
        [
            (Error, 2, 2, "character.persona"),
            (Error, 3, 8, "character.name"),
            (Error, 6, 2, "llm.model"),
        ]
    );
    assert_eq!(d[0].message, "missing required field");
    assert_eq!(d[1].message, "expected a string, found an integer");
}

#[test]
fn a_missing_table_is_reported_at_the_start() {
    let text = "[character]\nname = \"Hana\"\nagent_id = \"hana\"\npersona = \"x\"\n";
    let d = invalid(parse(text));
    assert_eq!(places(&d), [(Error, 1, 1, "llm.model")]);
    assert!(
        d[0].message
            .starts_with("missing required field (the file has no `[llm]` table)"),
        "{}",
        d[0].message
    );
    assert!(d[0].message.contains("engine = \"embedded\""));
}

#[test]
fn a_section_that_is_not_a_table_is_an_error() {
    let text = format!("tts = \"piper\"\n{MINIMAL}");
    let d = invalid(parse(&text));
    assert_eq!(places(&d), [(Error, 1, 7, "tts")]);
    assert_eq!(d[0].message, "expected a table, found a string");
}

#[test]
fn invalid_values_are_all_reported() {
    let d = invalid(load_profile(&fixture("invalid_values")));
    assert_eq!(
        places(&d),
        [
            (Error, 3, 12, "character.agent_id"),
            (Error, 7, 12, "llm.base_url"),
            (Error, 9, 15, "llm.api_key_env"),
            (Error, 10, 19, "llm.max_tool_rounds"),
            (Error, 13, 9, "tts.speed"),
        ]
    );
    assert!(d[0].message.contains("try `hana_chan`"), "{}", d[0].message);
    assert!(d[1].message.contains("http:// or https://"));
    assert!(d[2].message.contains("looks like an API key"));
    assert_eq!(d[3].message, "must be between 1 and 6, found 9");
    assert_eq!(d[4].message, "must be greater than 0, found 0");
}

#[test]
fn llm_value_ranges() {
    let text = MINIMAL.replace(
        "model = \"qwen2.5:3b\"",
        "model = \"  \"\ntemperature = 2.5\nmax_tokens = 0\nrequest_timeout_secs = -1\nmax_tool_rounds = 0\napi_key_env = \"my key\"",
    );
    let d = invalid(parse(&text));
    assert_eq!(
        places(&d),
        [
            (Error, 7, 9, "llm.model"),
            (Error, 8, 15, "llm.temperature"),
            (Error, 9, 14, "llm.max_tokens"),
            (Error, 10, 24, "llm.request_timeout_secs"),
            (Error, 11, 19, "llm.max_tool_rounds"),
            (Error, 12, 15, "llm.api_key_env"),
        ]
    );
    assert!(d[5].message.contains("name of an environment variable"));
    for rounds in 1..=6 {
        let ok = format!("{MINIMAL}max_tool_rounds = {rounds}\n");
        assert_eq!(parse(&ok).unwrap().profile.llm.max_tool_rounds, rounds);
    }
}

#[test]
fn interrupting_is_on_by_default_and_its_word_count_is_checked() {
    let asr = parse(MINIMAL).unwrap().profile.asr;
    assert!(asr.interrupt);
    assert_eq!(asr.interrupt_min_words, 2);
    let text = format!("{MINIMAL}\n[asr]\ninterrupt = false\ninterrupt_min_words = 0\n");
    let d = invalid(parse(&text));
    assert_eq!(places(&d), [(Error, 11, 23, "asr.interrupt_min_words")]);
    assert_eq!(d[0].message, "must be between 1 and 20, found 0");
    let text = format!("{MINIMAL}\n[asr]\ninterrupt = false\ninterrupt_min_words = 3\n");
    let asr = parse(&text).unwrap().profile.asr;
    assert!(!asr.interrupt);
    assert_eq!(asr.interrupt_min_words, 3);
}

#[test]
fn unknown_keys_are_warnings_with_hints() {
    let loaded = load_profile(&fixture("unknown_key")).unwrap();
    let w = &loaded.warnings;
    assert_eq!(
        places(w),
        [
            (Warning, 8, 1, "llm.temprature"),
            (Warning, 11, 1, "tts.voise"),
            (Warning, 13, 2, "colour"),
        ]
    );
    assert_eq!(
        w[0].message,
        "unknown key `temprature` is ignored (did you mean `temperature`?)"
    );
    assert!(w[1].message.ends_with("(did you mean `voice`?)"));
    assert_eq!(w[2].message, "unknown key `colour` is ignored");
    // The typo really did nothing: the default is in place.
    assert_eq!(loaded.profile.llm.temperature, None);
}

#[test]
fn unknown_keys_are_listed_alongside_errors() {
    let text = MINIMAL.replace("model =", "modle =");
    let d = invalid(parse(&text));
    assert_eq!(
        places(&d),
        [(Error, 6, 2, "llm.model"), (Warning, 7, 1, "llm.modle")]
    );
    assert!(d[1].message.contains("did you mean `model`?"));
}

#[test]
fn syntax_errors_have_position_and_field() {
    let d = invalid(load_profile(&fixture("syntax_error")));
    assert_eq!(places(&d), [(Error, 7, 20, "llm.model")]);
    assert!(
        d[0].message.starts_with("invalid TOML: "),
        "{}",
        d[0].message
    );

    let d = invalid(parse("[character]\nname = \"a\"\nname = \"b\"\n"));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].line, d[0].field.as_str()), (3, "character.name"));
}

#[test]
fn plugin_table_problems() {
    let text = format!(
        "{MINIMAL}\n[plugins]\nenable = [\"time\"]\nenabled = [\"time\", 3, \"Time\", \"time\"]\n\n[plugins.diary]\nx = 1\n"
    );
    let d = invalid(parse(&text));
    assert_eq!(
        places(&d),
        [
            (Error, 10, 10, "plugins.enable"),
            (Error, 11, 20, "plugins.enabled[1]"),
            (Warning, 13, 10, "plugins.diary"),
        ]
    );
    assert!(
        d[0].message.contains("did you mean `enabled`?"),
        "{}",
        d[0].message
    );
    assert_eq!(d[1].message, "expected a string, found an integer");

    let text = format!("{MINIMAL}\n[plugins]\nenabled = [\"time\", \"Time\", \"time\"]\n");
    let d = invalid(parse(&text));
    assert_eq!(
        places(&d),
        [
            (Error, 10, 20, "plugins.enabled[1]"),
            (Warning, 10, 28, "plugins.enabled[2]"),
        ]
    );
}

#[test]
fn plugin_overrides_are_kept_as_tables() {
    let text = format!(
        "{MINIMAL}\n[plugins]\nenabled = [\"diary\"]\n\n[plugins.diary]\ninject_recent = 5\nnested = {{ a = 1 }}\n"
    );
    let p = parse(&text).unwrap().profile;
    let diary = &p.plugins.overrides["diary"];
    assert_eq!(diary["inject_recent"].as_integer(), Some(5));
    assert_eq!(diary["nested"]["a"].as_integer(), Some(1));
}

#[test]
fn emotion_map_entries_are_checked() {
    let text = format!(
        "{MINIMAL}\n[live2d.emotion_map]\njoy = \"f01\"\n\"very happy\" = \"f02\"\nsad = \"\"\nangry = 2\n"
    );
    let d = invalid(parse(&text));
    assert_eq!(
        places(&d),
        [
            (Error, 11, 1, "live2d.emotion_map.very happy"),
            (Error, 12, 7, "live2d.emotion_map.sad"),
            (Error, 13, 9, "live2d.emotion_map.angry"),
        ]
    );
}

#[test]
fn the_live2d_model_must_be_a_settings_file_under_assets_live2d() {
    for good in [
        "assets/live2d/shizuku/shizuku.model.json",
        "assets/live2d/mine/runtime/mine.model3.json",
    ] {
        let text = format!("{MINIMAL}\n[live2d]\nmodel = \"{good}\"\n");
        assert!(parse(&text).is_ok(), "{good}");
    }
    for (bad, why) in [
        (
            "models/mine.model3.json",
            "must be a path under `assets/live2d/`",
        ),
        (
            "/home/me/mine.model3.json",
            "must be a path under `assets/live2d/`",
        ),
        (
            "https://example.com/x.model3.json",
            "must be a path under `assets/live2d/`",
        ),
        (
            "assets/live2d/../../secret.model.json",
            "plain relative path",
        ),
        (
            "assets/live2d/mine//mine.model3.json",
            "plain relative path",
        ),
        ("assets/live2d/mine/mine.moc3", "model settings file"),
        (
            "assets/live2d/my#1/mine.model3.json",
            "must not contain `#`",
        ),
        (
            "assets/live2d/mine/mine%20.model3.json",
            "must not contain `%`",
        ),
    ] {
        let text = format!("{MINIMAL}\n[live2d]\nmodel = \"{bad}\"\n");
        let d = invalid(parse(&text));
        assert_eq!(places(&d), [(Error, 10, 9, "live2d.model")], "{bad}");
        assert!(d[0].message.contains(why), "{bad}: {}", d[0].message);
    }
}

#[test]
fn invalid_error_display_lists_everything() {
    let err = load_profile(&fixture("invalid_values")).unwrap_err();
    let text = err.to_string();
    assert_eq!(text.lines().count(), 5, "{text}");
    assert!(text.lines().all(|l| l.contains(": error: `")));
}

#[test]
fn unreadable_files() {
    let missing = repo_root().join("profiles/does-not-exist.toml");
    assert!(matches!(
        load_profile(&missing),
        Err(ProfileError::Io { .. })
    ));
    let d = check_profile(&missing, &repo_root().join("plugins"));
    assert_eq!(places(&d), [(Error, 0, 0, "")]);
    assert!(d[0].message.starts_with("cannot read profile"));
}

#[test]
fn check_resolves_plugins_and_overrides() {
    let plugins = repo_root().join("plugins");
    let d = check_profile(&fixture("plugin_refs"), &plugins);
    assert_eq!(
        places(&d),
        [
            (Error, 10, 20, "plugins.enabled[1]"),
            (Warning, 14, 1, "plugins.web_fetch.max_byte"),
            (Error, 16, 23, "plugins.web_fetch.allow_private_hosts"),
            (Error, 18, 10, "plugins.weather"),
        ]
    );
    assert!(d[0].message.contains("no plugin `diarry`"));
    assert!(d[0].message.contains("did you mean `diary`?"));
    assert!(d[1].message.contains("did you mean `max_bytes`?"));
    assert!(d[2].message.starts_with("expected a boolean"));
    assert!(d[3].message.contains("no plugin `weather`"));
    // Without the plugin directory only the profile itself is judged: just the unused-override warning.
    let loaded = load_profile(&fixture("plugin_refs")).unwrap();
    assert_eq!(
        places(&loaded.warnings),
        [(Warning, 18, 10, "plugins.weather")]
    );
}

#[test]
fn check_reports_a_missing_plugin_directory() {
    let dir = repo_root().join("no-such-plugins-dir");
    let d = check_profile(&repo_root().join("profiles/hana.toml"), &dir);
    assert!(d.iter().any(|d| d.file == dir && d.is_error()), "{d:#?}");
}

#[test]
fn committed_schema_is_up_to_date() {
    let path = repo_root().join("profiles/profile.schema.json");
    let generated = format!(
        "{}\n",
        serde_json::to_string_pretty(&profile_json_schema()).unwrap()
    );
    if std::env::var_os("TOMO_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "profiles/profile.schema.json is out of date. Regenerate it with\n    \
         TOMO_BLESS=1 cargo test -p tomo-config --lib profile::tests::committed_schema_is_up_to_date\n\
         (or `tomo profile schema > profiles/profile.schema.json`) and commit the result."
    );
}

/// The schema must accept what the loader accepts (checked on the shipped profiles) and carry the
/// loader's constraints (checked on a value the loader rejects).
#[test]
fn shipped_profiles_validate_against_the_schema() {
    let schema = profile_json_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let as_json = |text: &str| serde_json::to_value(text.parse::<toml::Table>().unwrap()).unwrap();
    for name in ["hana", "kuro"] {
        let text =
            std::fs::read_to_string(repo_root().join(format!("profiles/{name}.toml"))).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&as_json(&text))
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
    }
    let bad = format!("{MINIMAL}max_tool_rounds = 9\n");
    assert!(!validator.is_valid(&as_json(&bad)));
    let no_model = MINIMAL.replace("model = \"qwen2.5:3b\"", "");
    assert!(!validator.is_valid(&as_json(&no_model)));
}

#[test]
fn several_syntax_errors_are_all_reported_in_order() {
    let text = "[character]\nname = \"Hana\nagent_id = hana\npersona = \"x\"\n[llm\nmodel = 3\n";
    let d = invalid(parse(text));
    assert_eq!(
        places(&d),
        [
            (Error, 2, 13, "character.name"),
            (Error, 3, 12, "character.agent_id"),
            (Error, 5, 5, ""),
        ]
    );
    assert_eq!(d[2].message, "invalid TOML: unclosed table, expected `]`");
}

const EMBEDDED: &str = r#"[character]
name = "Hana"
agent_id = "hana"
persona = "You are Hana."

[llm]
engine = "embedded"
"#;

/// Inputs bounded where they are written (sizes, durations, error counts).
mod bounds;
mod embedded;
