//! A missing ONNX Runtime library. Its own test binary (own process): `tomo_onnx` loads the runtime once per
//! process, so this must not share a process with tests that load the real one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tomo_speech::tts::{self, PiperTts, TtsError};

const CONFIG: &str = r#"{
    "audio": {"sample_rate": 22050},
    "espeak": {"voice": "en-us"},
    "phoneme_id_map": {"_": [0], "^": [1], "$": [2], "a": [14]}
}"#;

#[test]
fn missing_runtime_is_a_clear_error_and_the_profile_falls_back() {
    let root = tempfile::tempdir().unwrap();
    let (model, config) = tts::piper_voice_paths(root.path(), "en_US-test-medium");
    std::fs::create_dir_all(model.parent().unwrap()).unwrap();
    // The runtime is checked before the model is parsed, so the model file only has to exist.
    std::fs::write(&model, b"not read").unwrap();
    std::fs::write(&config, CONFIG).unwrap();
    let runtime = tts::runtime_path(root.path());

    let err = PiperTts::new(&model, &config, &runtime, 1.0).unwrap_err();
    assert!(matches!(err, TtsError::Runtime(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(&runtime.display().to_string()),
        "{message}"
    );
    assert!(message.contains("tomo models install"), "{message}");

    // The same store through the profile constructor: a Debian voice speaks instead.
    let tts = tts::from_config("piper", "en_US-test-medium", 1.0, root.path()).unwrap();
    assert_eq!(tts.name(), "flite");
    let audio = tts.synthesize("The runtime is missing.").unwrap();
    assert!(!audio.samples.is_empty());
}
