#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use super::*;
use crate::diagnostic::{Diagnostic, Severity};

use Severity::{Error, Warning};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn places(diagnostics: &[Diagnostic]) -> Vec<(Severity, usize, usize, &str)> {
    diagnostics
        .iter()
        .map(|d| (d.severity, d.line, d.column, d.field.as_str()))
        .collect()
}

fn invalid(text: &str) -> Vec<Diagnostic> {
    match parse_manifest(text, Path::new("plugin.toml")) {
        Err(ManifestError::Invalid(d)) => d,
        Err(e) => panic!("expected Invalid, got {e}"),
        Ok(m) => panic!("expected Invalid, got {m:?}"),
    }
}

fn table(text: &str) -> toml::Table {
    text.parse().unwrap()
}

fn write(dir: &Path, folder: &str, text: &str) {
    std::fs::create_dir_all(dir.join(folder)).unwrap();
    std::fs::write(dir.join(folder).join("plugin.toml"), text).unwrap();
}

const GOOD: &str = r#"[plugin]
id = "good"
type = "tool"
description = "A good plugin."
"#;

#[test]
fn shipped_manifests_load() {
    let dir = repo_root().join("plugins");
    let (manifests, diagnostics) = discover_plugins(&dir);
    assert!(diagnostics.is_empty(), "{diagnostics:#?}");
    let ids: Vec<&str> = manifests.iter().map(|m| m.id.as_str()).collect();
    // `memory` and `screen_watch` are implemented outside tomo-core (tomo-memory, tomo-vision).
    assert_eq!(
        ids,
        [
            "diary",
            "memory",
            "mood_chat",
            "screen_watch",
            "time",
            "web_fetch"
        ]
    );

    let diary = &manifests[0];
    assert_eq!(diary.kind, PluginKind::Hook);
    assert_eq!(
        diary.config,
        table("inject_recent = 3\nmax_entry_chars = 2000")
    );
    assert_eq!(diary.source, dir.join("diary/plugin.toml"));

    let mood = &manifests[2];
    assert_eq!(mood.kind, PluginKind::Scheduler);
    // That the shipped defaults parse as the typed config is checked beside mood_chat (tomo-plugins).
    assert_eq!(manifests[3].kind, PluginKind::Sensor);

    let time = &manifests[4];
    assert_eq!(time.kind, PluginKind::Tool);
    assert_eq!(time.config, table("inject_now = true"));

    let web = &manifests[5];
    assert_eq!(web.kind, PluginKind::Tool);
    assert_eq!(
        web.config,
        table(
            "max_bytes = 300000\ntimeout_secs = 10.0\nmax_chars = 6000\nallow_private_hosts = false\nallow_with_screen_text = false"
        )
    );
    assert!(web.mcp.is_none());
    let schema = plugin_manifest_json_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for m in &manifests {
        assert!(!m.description.is_empty());
        assert_eq!(load_manifest(&m.source).unwrap(), *m);
        let text = std::fs::read_to_string(&m.source).unwrap();
        let json = serde_json::to_value(table(&text)).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&json)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", m.id);
    }
}

#[test]
fn minimal_manifest_gets_defaults() {
    let (m, warnings) = parse_manifest(GOOD, Path::new("x/plugin.toml")).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(m.id, "good");
    assert_eq!(m.tool_limits, ToolLimits::default());
    assert_eq!(m.mcp, None);
    assert!(m.config.is_empty());
    assert_eq!(m.source, Path::new("x/plugin.toml"));
}

#[test]
fn mcp_section_loads() {
    let text = format!(
        "{GOOD}\n[mcp]\ncommand = \"my-server\"\nargs = [\"--stdio\"]\nenv = {{ LOG = \"warn\" }}\n"
    );
    let (m, _) = parse_manifest(&text, Path::new("plugin.toml")).unwrap();
    let mcp = m.mcp.unwrap();
    assert_eq!(mcp.command, "my-server");
    assert_eq!(mcp.args, ["--stdio"]);
    assert_eq!(mcp.env["LOG"], "warn");
    assert_eq!(mcp.startup_timeout_secs, 15.0);
}

#[test]
fn manifest_errors_are_located() {
    let text = r#"[plugin]
id = "Web Fetch"
type = "toool"

[tool]
timeout = 5
retries = -1

[confg]
x = 1
"#;
    let d = invalid(text);
    assert_eq!(
        places(&d),
        [
            (Error, 1, 2, "plugin.description"),
            (Error, 2, 6, "plugin.id"),
            (Error, 3, 8, "plugin.type"),
            (Error, 6, 1, "tool.timeout"),
            (Error, 7, 11, "tool.retries"),
            (Warning, 9, 2, "confg"),
        ]
    );
    assert_eq!(d[0].message, "missing required field");
    assert!(d[1].message.contains("not a valid plugin id"));
    assert!(
        d[2].message.contains("(did you mean `tool`?)"),
        "{}",
        d[2].message
    );
    assert!(
        d[3].message.contains("(did you mean `timeout_secs`?)"),
        "{}",
        d[3].message
    );
    assert!(d[5].message.contains("(did you mean `config`?)"));
}

#[test]
fn manifest_value_checks() {
    let text = r#"[plugin]
id = "enabled"
type = "tool"
description = " "

[tool]
timeout_secs = 0

[mcp]
command = ""
startup_timeout_secs = -1
"#;
    let d = invalid(text);
    assert_eq!(
        places(&d),
        [
            (Error, 2, 6, "plugin.id"),
            (Error, 4, 15, "plugin.description"),
            (Error, 7, 16, "tool.timeout_secs"),
            (Error, 10, 11, "mcp.command"),
            (Error, 11, 24, "mcp.startup_timeout_secs"),
        ]
    );
    assert!(d[0].message.contains("`enabled` is reserved"));
}

#[test]
fn unreadable_manifest_is_an_io_error() {
    let err = load_manifest(Path::new("/nonexistent/plugin.toml")).unwrap_err();
    assert!(matches!(err, ManifestError::Io { .. }), "{err}");
}

#[test]
fn discovery_skips_broken_manifests_and_keeps_the_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "good", GOOD);
    write(root, "broken", "[plugin]\nid = \"broken\ntype = \"tool\"\n");
    write(root, "renamed", &GOOD.replace("\"good\"", "\"other\""));
    write(
        root,
        "typo",
        &format!("{}\nextra = 1\n", GOOD.replace("\"good\"", "\"typo\"")),
    );
    std::fs::create_dir_all(root.join("assets")).unwrap();
    std::fs::write(root.join("README.md"), "not a plugin").unwrap();

    let (manifests, d) = discover_plugins(root);
    let ids: Vec<&str> = manifests.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["good", "typo"]);

    let files: Vec<PathBuf> = d.iter().map(|d| d.file.clone()).collect();
    assert_eq!(
        files,
        [
            root.join("broken/plugin.toml"),
            root.join("renamed/plugin.toml"),
            root.join("typo/plugin.toml"),
        ]
    );
    assert_eq!(
        places(&d),
        [
            (Error, 2, 13, "plugin.id"),
            (Error, 2, 6, "plugin.id"),
            (Warning, 6, 1, "plugin.extra"),
        ]
    );
    assert!(d[0].message.starts_with("invalid TOML"));
    assert_eq!(
        d[1].message,
        "id `other` does not match the plugin's folder name `renamed`; rename one so they are equal"
    );
}

#[test]
fn discovery_of_a_missing_directory_reports_it() {
    let dir = Path::new("/nonexistent/plugins");
    let (manifests, d) = discover_plugins(dir);
    assert!(manifests.is_empty());
    assert_eq!(places(&d), [(Error, 0, 0, "")]);
    assert_eq!(d[0].file, dir);
}

fn demo_manifest() -> PluginManifest {
    let text = r#"[plugin]
id = "demo"
type = "tool"
description = "Demo."

[config]
count = 1
ratio = 1.5
name = "a"
list = [1, 2]
headers = {}

[config.limits]
max = 10
min = 1
"#;
    parse_manifest(text, Path::new("demo/plugin.toml"))
        .unwrap()
        .0
}

#[test]
fn effective_config_without_overrides_is_the_defaults() {
    let m = demo_manifest();
    let (config, d) = effective_config(&m, None);
    assert_eq!(config, m.config);
    assert!(d.is_empty());
}

#[test]
fn effective_config_merges_key_by_key() {
    let m = demo_manifest();
    let overrides = table(
        r#"
count = 3
ratio = 2
list = [9]
headers = { Accept = "text/html" }
limits = { max = 20 }
"#,
    );
    let (config, d) = effective_config(&m, Some(&overrides));
    assert!(d.is_empty(), "{d:?}");
    let expected = table(
        r#"
count = 3
ratio = 2.0
name = "a"
list = [9]
headers = { Accept = "text/html" }
limits = { max = 20, min = 1 }
"#,
    );
    assert_eq!(config, expected);
}

#[test]
fn effective_config_reports_unknown_keys_and_type_mismatches() {
    let m = demo_manifest();
    let overrides = table(
        r#"
cuont = 3
count = "many"
ratio = true
limits = { maxx = 20, min = 2.5 }
name = { a = 1 }
"#,
    );
    let (config, d) = effective_config(&m, Some(&overrides));
    // Unknown keys are dropped, mismatches keep the default: the shape and types are the manifest's.
    assert_eq!(config, m.config);
    let mut d = d;
    d.sort_by(|a, b| a.field.cmp(&b.field));
    let found: Vec<(Severity, &str)> = d.iter().map(|d| (d.severity, d.field.as_str())).collect();
    assert_eq!(
        found,
        [
            (Error, "plugins.demo.count"),
            (Warning, "plugins.demo.cuont"),
            (Warning, "plugins.demo.limits.maxx"),
            (Error, "plugins.demo.limits.min"),
            (Error, "plugins.demo.name"),
            (Error, "plugins.demo.ratio"),
        ]
    );
    assert_eq!(
        d[0].to_string(),
        "error: `plugins.demo.count`: expected an integer (the type of the plugin's default), \
         found a string; the default is used"
    );
    assert!(d[1].message.contains("(did you mean `count`?)"));
    assert!(d[2].message.contains("(did you mean `max`?)"));
    assert!(
        d.iter()
            .all(|d| d.line == 0 && d.file.as_os_str().is_empty())
    );
}

#[test]
fn committed_manifest_schema_is_up_to_date() {
    let path = repo_root().join("plugins/plugin.schema.json");
    let generated = format!(
        "{}\n",
        serde_json::to_string_pretty(&plugin_manifest_json_schema()).unwrap()
    );
    if std::env::var_os("TOMO_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "plugins/plugin.schema.json is out of date. Regenerate it with\n    \
         TOMO_BLESS=1 cargo test -p tomo-config --lib committed_manifest_schema_is_up_to_date\n\
         and commit the result."
    );
}
