//! Tests that need installed models, tools or a display: in CI a missing prerequisite fails the test
//! (the CI script installs everything first); on a developer machine it is skipped with the reason.

use std::path::PathBuf;

/// Without `CI` a missing prerequisite skips the test (prints why); in CI it fails it.
pub fn skip_or_fail(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{why}");
    }
    eprintln!("skipped: {why}");
}

/// The model store root the tests read: `$TOMO_MODELS_DIR`, else `<data dir>/tomo/models` (the same rule
/// as tomo-models' `ModelStore::from_env`).
pub fn models_dir() -> PathBuf {
    match std::env::var_os("TOMO_MODELS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => dirs::data_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("tomo")
            .join("models"),
    }
}
