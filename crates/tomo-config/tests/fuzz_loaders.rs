//! Fuzzing the profile and manifest loaders with proptest: whatever the bytes (random text, or a shipped
//! file with random edits: torn, spliced, duplicated), loading never panics, and every problem it
//! reports points inside the file. `PROPTEST_CASES=10000 cargo test -p tomo-config --test fuzz_loaders`
//! runs longer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use proptest::prelude::*;
use tomo_config::manifest::parse_manifest;
use tomo_config::profile::{Diagnostic, ProfileError, parse_profile};

fn shipped(path: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(path),
    )
    .unwrap()
}

/// Every located diagnostic names a line of `text` and a column on it (or just past its end).
fn located_inside(text: &str, diagnostics: &[Diagnostic]) -> Result<(), TestCaseError> {
    let lines: Vec<&str> = text.split('\n').collect();
    for d in diagnostics {
        if d.line == 0 {
            prop_assert_eq!(d.column, 0, "{}", d);
            continue;
        }
        prop_assert!(
            d.line <= lines.len(),
            "line {} of {}: {}",
            d.line,
            lines.len(),
            d
        );
        let chars = lines[d.line - 1].chars().count();
        prop_assert!(
            d.column >= 1 && d.column <= chars + 1,
            "column {} of {}: {}",
            d.column,
            chars,
            d
        );
    }
    Ok(())
}

/// One edit of `text`: cut at a byte (a torn write), insert a snippet, or drop a range.
#[derive(Debug, Clone)]
enum Edit {
    Truncate(usize),
    Insert(usize, String),
    Remove(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let snippet = prop_oneof![
        Just("\"".to_owned()),
        Just("[".to_owned()),
        Just("]]\n".to_owned()),
        Just("= =".to_owned()),
        Just("\n[llm]\n".to_owned()),
        Just("x = 1e400\n".to_owned()),
        Just("request_timeout_secs = 1e20\n".to_owned()),
        Just("é".to_owned()),
        Just("\u{0}".to_owned()),
        "\\PC{0,12}",
    ];
    prop_oneof![
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), snippet).prop_map(|(at, s)| Edit::Insert(at, s)),
        (any::<usize>(), 0_usize..40).prop_map(|(at, n)| Edit::Remove(at, n)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut out = text.to_owned();
    let boundary = |s: &str, at: usize| {
        let mut at = at % (s.len() + 1);
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    for edit in edits {
        match edit {
            Edit::Truncate(at) => {
                let at = boundary(&out, *at);
                out.truncate(at);
            }
            Edit::Insert(at, snippet) => {
                let at = boundary(&out, *at);
                out.insert_str(at, snippet);
            }
            Edit::Remove(at, n) => {
                let start = boundary(&out, *at);
                let end = boundary(&out, start + n);
                if end > start {
                    out.replace_range(start..end, "");
                }
            }
        }
    }
    out
}

fn check_profile_text(text: &str) -> Result<(), TestCaseError> {
    match parse_profile(text, Path::new("fuzz.toml")) {
        Ok(loaded) => located_inside(text, &loaded.warnings),
        Err(ProfileError::Invalid(diagnostics)) => {
            prop_assert!(!diagnostics.is_empty());
            located_inside(text, &diagnostics)
        }
        Err(other) => Err(TestCaseError::fail(format!("unexpected error: {other}"))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_text_never_panics_the_profile_loader(text in "\\PC{0,400}") {
        check_profile_text(&text)?;
    }

    #[test]
    fn edited_shipped_profiles_load_or_report_inside_the_file(
        which in 0_usize..3,
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let file = ["profiles/hana.toml", "profiles/kuro.toml", "profiles/game-companion.toml"][which];
        check_profile_text(&apply(&shipped(file), &edits))?;
    }

    #[test]
    fn edited_manifests_never_panic_the_manifest_loader(
        which in 0_usize..4,
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let id = ["time", "web_fetch", "diary", "mood_chat"][which];
        let text = apply(&shipped(&format!("plugins/{id}/plugin.toml")), &edits);
        match parse_manifest(&text, Path::new("plugins/x/plugin.toml")) {
            Ok((_, warnings)) => located_inside(&text, &warnings)?,
            Err(tomo_config::manifest::ManifestError::Invalid(diagnostics)) => located_inside(&text, &diagnostics)?,
            Err(other) => return Err(TestCaseError::fail(format!("unexpected error: {other}"))),
        }
    }
}
