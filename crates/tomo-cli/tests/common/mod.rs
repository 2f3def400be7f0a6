//! Shared by the tests that run `tomo` on the real sound device (a PulseAudio null sink).

use std::path::{Path, PathBuf};
use std::process::Command;

use tomo_models::{ModelStatus, ModelStore};

/// A path of the checkout.
pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// Whether `models` are installed and the null sink is up. Outside CI a missing part skips the test; in
/// CI it fails it.
pub fn device_ready(models: &[&str]) -> bool {
    let store = ModelStore::from_env().unwrap();
    let installed = models
        .iter()
        .all(|m| matches!(store.status(m), Ok(ModelStatus::Installed)));
    let pulse = Command::new("bash")
        .arg(repo("scripts/pulse-null.sh"))
        .output();
    let pulse_ok = pulse.as_ref().is_ok_and(|o| o.status.success());
    if !(installed && pulse_ok) {
        let message =
            format!("voice models installed: {installed}, PulseAudio null sink: {pulse_ok}");
        assert!(std::env::var_os("CI").is_none(), "{message}");
        println!("skipped: {message}");
        return false;
    }
    true
}

/// Speaks `text` into a WAV file with flite's `slt` voice (the user's side of the conversation).
pub fn flite(text: &str, path: &Path) {
    let made = Command::new("flite")
        .args(["-voice", "slt", "-t", text, "-o"])
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
}
