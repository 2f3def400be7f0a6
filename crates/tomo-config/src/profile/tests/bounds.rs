//! Profiles that would crash or stall Tomo are refused with their place.

use super::*;

/// Durations that would overflow `Duration` at run time (and panic `tomo chat`) are refused where they
/// are written: the profile's own timeout and any plugin setting named `*_secs` / `*_s`.
#[test]
fn huge_durations_are_refused_with_their_place() {
    let text = MINIMAL.replace(
        "model = \"qwen2.5:3b\"",
        "model = \"qwen2.5:3b\"\nrequest_timeout_secs = 1e20",
    );
    let d = invalid(parse(&text));
    assert_eq!(places(&d), [(Error, 8, 24, "llm.request_timeout_secs")]);
    assert!(
        d[0].message.contains("found 100000000000000000000"),
        "{}",
        d[0].message
    );

    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    let overrides = "\n[plugins]\nenabled = [\"memory\", \"screen_watch\"]\n\n[plugins.memory]\ntimeout_secs = 1e20\n\n[plugins.screen_watch]\nforce_every_s = 1e300\n";
    std::fs::write(&profile, format!("{MINIMAL}{overrides}")).unwrap();
    let d = check_profile(&profile, &repo_root().join("plugins"));
    assert_eq!(
        places(&d),
        [
            (Error, 13, 16, "plugins.memory.timeout_secs"),
            (Error, 16, 17, "plugins.screen_watch.force_every_s"),
        ]
    );
    assert!(d[0].message.contains("30 days"), "{}", d[0].message);
    // At run time the same values fall back to the defaults instead of reaching a `Duration`.
    let manifests = crate::manifest::discover_plugins(&repo_root().join("plugins")).0;
    let memory = manifests.iter().find(|m| m.id == "memory").unwrap();
    let over: toml::Table = toml::from_str("timeout_secs = 1e20").unwrap();
    let (effective, issues) = crate::manifest::effective_config(memory, Some(&over));
    assert_eq!(effective["timeout_secs"], memory.config["timeout_secs"]);
    assert!(issues.iter().any(|d| d.is_error()), "{issues:?}");
}

/// A profile bigger than any real one is refused before parsing, with the reason; `tomo serve` lists
/// profiles on every `/api/profiles`, and a multi-megabyte file of garbage must not cost it seconds.
#[test]
fn oversized_profiles_are_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.toml");
    let mut text = MINIMAL.to_owned();
    while (text.len() as u64) <= crate::diagnostic::MAX_CONFIG_FILE_BYTES {
        text.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    std::fs::write(&path, &text).unwrap();
    let Err(ProfileError::Io { source, .. }) = load_profile(&path) else {
        panic!("an oversized profile loaded");
    };
    assert_eq!(source.kind(), std::io::ErrorKind::InvalidData);
    assert!(source.to_string().contains("at most 1048576"), "{source}");
    let d = check_profile(&path, &repo_root().join("plugins"));
    assert_eq!(places(&d), [(Error, 0, 0, "")]);
    assert!(d[0].message.contains("at most 1048576"), "{}", d[0].message);
}

/// Ten thousand broken lines are each reported at their own line, with the table they are in (the
/// positions come from one line index; they used to be found by rescanning the text per error).
#[test]
fn many_syntax_errors_are_each_located() {
    let mut text = MINIMAL.to_owned();
    text.push_str("[tts]\n");
    let first = text.lines().count() + 1;
    for i in 0..10_000 {
        text.push_str(&format!("key{i} = = broken\n"));
    }
    let d = invalid(parse(&text));
    let mut lines = std::collections::BTreeSet::new();
    for diagnostic in &d {
        let i = diagnostic.line - first;
        assert_eq!(diagnostic.field, format!("tts.key{i}"), "{diagnostic}");
        lines.insert(diagnostic.line);
    }
    assert_eq!(lines.len(), 10_000);
    assert_eq!(lines.first(), Some(&first));
}
