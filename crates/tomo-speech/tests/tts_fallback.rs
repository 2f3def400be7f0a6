//! Debian voices (flite, espeak-ng) and the fallback wrapper, with the real tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "tts_common/mod.rs"]
mod common;

use common::rms;
use tomo_speech::tts::{
    self, CloudAudioFormat, CloudTts, CloudTtsConfig, EspeakTts, FallbackTts, FliteTts,
    TextToSpeech, TtsError,
};

const TEXT: &str = "The quick brown fox jumps over the lazy dog.";

#[test]
fn flite_speaks_at_16_khz() {
    let tts = FliteTts::new("slt", 1.0).unwrap();
    assert_eq!(tts.name(), "flite");
    let audio = tts.synthesize(TEXT).unwrap();
    assert_eq!(audio.sample_rate, 16_000);
    assert!(rms(&audio.samples) > 0.02, "rms {}", rms(&audio.samples));
    assert!(
        (1.5..6.0).contains(&audio.duration_secs()),
        "{}",
        audio.duration_secs()
    );
}

#[test]
fn espeak_speaks_at_22_khz() {
    let tts = EspeakTts::new("en-us", 1.0).unwrap();
    assert_eq!(tts.name(), "espeak");
    let audio = tts.synthesize(TEXT).unwrap();
    assert_eq!(audio.sample_rate, 22_050);
    assert!(rms(&audio.samples) > 0.02, "rms {}", rms(&audio.samples));
    assert!(
        (1.5..6.0).contains(&audio.duration_secs()),
        "{}",
        audio.duration_secs()
    );
    // Mandarin, which no Piper voice in any package covers.
    let chinese = EspeakTts::new("cmn", 1.0)
        .unwrap()
        .synthesize("你好，世界。")
        .unwrap();
    assert!(rms(&chinese.samples) > 0.02);
}

#[test]
fn speed_maps_to_each_tool_rate() {
    let flite = |speed| {
        FliteTts::new("slt", speed)
            .unwrap()
            .synthesize(TEXT)
            .unwrap()
            .duration_secs()
    };
    let espeak = |speed| {
        EspeakTts::new("en-us", speed)
            .unwrap()
            .synthesize(TEXT)
            .unwrap()
            .duration_secs()
    };
    let (slow, fast) = (flite(1.0), flite(1.5));
    assert!(fast < slow * 0.8, "flite 1.0: {slow}, 1.5: {fast}");
    let (slow, fast) = (espeak(1.0), espeak(1.5));
    assert!(fast < slow * 0.8, "espeak 1.0: {slow}, 1.5: {fast}");
}

#[test]
fn text_that_looks_like_an_option_is_spoken() {
    for tts in [
        Box::new(FliteTts::new("slt", 1.0).unwrap()) as Box<dyn TextToSpeech>,
        Box::new(EspeakTts::new("en-us", 1.0).unwrap()),
    ] {
        let audio = tts.synthesize("-h --help minus five").unwrap();
        assert!(rms(&audio.samples) > 0.02, "{}", tts.name());
    }
}

#[test]
fn empty_text_gives_empty_audio() {
    for tts in [
        Box::new(FliteTts::new("slt", 1.0).unwrap()) as Box<dyn TextToSpeech>,
        Box::new(EspeakTts::new("en-us", 1.0).unwrap()),
    ] {
        for text in ["", "  ", "..."] {
            let audio = tts.synthesize(text).unwrap();
            assert!(audio.samples.is_empty(), "{}: {text:?}", tts.name());
            assert!(audio.sample_rate > 0);
        }
    }
}

#[test]
fn missing_binaries_are_voice_missing_naming_them() {
    let err = FliteTts::with_binary("/nonexistent/flite", "slt", 1.0).unwrap_err();
    assert!(matches!(err, TtsError::VoiceMissing(_)), "{err:?}");
    assert!(err.to_string().contains("/nonexistent/flite"), "{err}");
    let err = EspeakTts::with_binary("/nonexistent/espeak-ng", "en-us", 1.0).unwrap_err();
    assert!(matches!(err, TtsError::VoiceMissing(_)), "{err:?}");
    assert!(err.to_string().contains("/nonexistent/espeak-ng"), "{err}");
}

#[test]
fn missing_piper_model_falls_back_to_flite() {
    let root = tempfile::tempdir().unwrap();
    let (model, config) = tts::piper_voice_paths(root.path(), "en_US-joe-medium");
    let primary = tts::PiperTts::new(&model, &config, &tts::runtime_path(root.path()), 1.0)
        .map(|p| Box::new(p) as Box<dyn TextToSpeech>);
    assert!(matches!(&primary, Err(TtsError::VoiceMissing(path)) if path.contains("joe")));
    let tts = FallbackTts::new(primary, Box::new(FliteTts::new("slt", 1.0).unwrap()));
    assert!(tts.is_degraded());
    assert_eq!(tts.name(), "flite");
    let audio = tts.synthesize(TEXT).unwrap();
    assert_eq!(audio.sample_rate, 16_000, "flite's rate: flite spoke");
    assert!(rms(&audio.samples) > 0.02);
}

#[test]
fn primary_failing_while_speaking_falls_back() {
    // A cloud voice whose server is down: built fine, fails on every sentence.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let cloud = CloudTts::new(CloudTtsConfig {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        model: "tts-1".into(),
        voice: "alloy".into(),
        api_key: None,
        speed: 1.0,
        format: CloudAudioFormat::Wav,
        timeout: std::time::Duration::from_secs(5),
    })
    .unwrap();
    let tts = FallbackTts::new(
        Ok(Box::new(cloud)),
        Box::new(EspeakTts::new("en-us", 1.0).unwrap()),
    );
    assert!(!tts.is_degraded());
    assert_eq!(tts.name(), "openai");
    for _ in 0..2 {
        let audio = tts.synthesize(TEXT).unwrap();
        assert_eq!(audio.sample_rate, 22_050, "espeak's rate: espeak spoke");
        assert!(rms(&audio.samples) > 0.02);
    }
}

#[test]
fn from_config_uses_the_store_voice_when_present() {
    let Some(_) = common::piper(1.0) else { return };
    let tts = tts::from_config("piper", common::VOICE, 1.0, &common::models_root()).unwrap();
    assert_eq!(tts.name(), "piper");
    let audio = tts.synthesize("Hello.").unwrap();
    assert_eq!(audio.sample_rate, 22_050);
}

#[test]
fn from_config_builds_each_debian_engine() {
    let root = tempfile::tempdir().unwrap();
    let flite = tts::from_config("flite", "slt", 1.2, root.path()).unwrap();
    assert_eq!(flite.name(), "flite");
    let espeak = tts::from_config("espeak", "en-us", 1.0, root.path()).unwrap();
    assert_eq!(espeak.name(), "espeak");
    assert!(rms(&espeak.synthesize("Hi there.").unwrap().samples) > 0.02);
}
