//! A session whose embedded model is missing or truncated does not start, and says which file and which
//! command fixes it. One test in its own binary: it points `TOMO_MODELS_DIR` (read by the builder) at a
//! scratch store, which no other test in this process may see.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Write;

use support::{FIXTURE_FILE, start, write_profile};
use tomo_runtime::StartError;
use tomo_testkit::prereq::models_dir;

#[tokio::test]
async fn a_missing_or_truncated_model_names_the_file_and_the_install_command() {
    if !support::prerequisites() {
        return;
    }
    let fixture = models_dir().join(FIXTURE_FILE);
    let store = tempfile::tempdir().unwrap();
    // SAFETY: set_var is unsafe for its effect on other threads reading the environment; this binary has
    // a single test, and no thread of it reads the environment concurrently.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var("TOMO_MODELS_DIR", store.path());
    }
    let dir = tempfile::tempdir().unwrap();
    let profile = write_profile(dir.path(), "hana.toml", "Hana", "");

    let Err(StartError::Brain(error)) = start(&profile, dir.path()).await else {
        panic!("a missing model does not start");
    };
    let text = error.to_string();
    assert!(
        text.contains(&store.path().join(FIXTURE_FILE).display().to_string()),
        "{text}"
    );
    assert!(text.contains("tomo models install smollm2-135m"), "{text}");

    let cut = store.path().join(FIXTURE_FILE);
    std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
    let bytes = std::fs::read(&fixture).unwrap();
    std::fs::File::create(&cut)
        .unwrap()
        .write_all(&bytes[..bytes.len() / 3])
        .unwrap();
    let Err(StartError::Brain(error)) = start(&profile, dir.path()).await else {
        panic!("a truncated model does not start");
    };
    let text = error.to_string();
    assert!(text.contains("truncated"), "{text}");
    assert!(
        text.contains("tomo models install --force smollm2-135m"),
        "{text}"
    );
}
