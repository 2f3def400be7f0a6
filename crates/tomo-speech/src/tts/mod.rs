//! Text to speech.
//!
//! Engines: [`PiperTts`] (neural Piper voices via ONNX Runtime), [`KokoroTts`] (Kokoro-82M's multilingual
//! voices via ONNX Runtime: slower than Piper, female and male English, Mandarin), [`FliteTts`] and [`EspeakTts`] (Debian
//! command-line voices that need no download), [`CloudTts`] (OpenAI-compatible `/audio/speech`).
//! [`from_config`] builds what a profile's `[tts]` section asks for, wrapped in [`FallbackTts`] so Tomo keeps
//! talking with a Debian voice when the configured one is missing or fails.

mod cli;
pub mod cloud;
pub mod fallback;
pub mod kokoro;
pub mod phonemes;
pub mod piper;
mod text;
mod trim;

use std::path::Path;

use tomo_audio::Audio;

pub use cloud::{CloudAudioFormat, CloudTts, CloudTtsConfig};
pub use fallback::{EspeakTts, FallbackTts, FliteTts};
pub use kokoro::{KokoroPaths, KokoroTts};
pub use piper::{PiperConfig, PiperTts};

#[derive(Debug, thiserror::Error)]
pub enum TtsError {
    #[error("voice not found at {0} (install it with `tomo models install`)")]
    VoiceMissing(String),
    #[error("{engine} voice `{voice}` is not installed ({})", installed_list(.installed))]
    UnknownVoice {
        engine: String,
        voice: String,
        installed: Vec<String>,
    },
    #[error("cannot load voice {path}: {message}")]
    VoiceLoad { path: String, message: String },
    #[error("invalid voice config {path}: field `{field}`: {message}")]
    Config {
        path: String,
        field: String,
        message: String,
    },
    #[error(transparent)]
    Runtime(#[from] tomo_onnx::OnnxError),
    #[error("speech speed must be a number greater than 0, got {0}")]
    InvalidSpeed(f32),
    #[error("unknown TTS engine `{0}` (expected piper, kokoro, flite, espeak or openai)")]
    UnknownEngine(String),
    #[error("synthesis failed: {0}")]
    Failed(String),
    #[error("speech service error: {0}")]
    Service(String),
}

fn installed_list(installed: &[String]) -> String {
    if installed.is_empty() {
        "none is installed: run `tomo models install`".to_owned()
    } else {
        format!("installed: {}", installed.join(", "))
    }
}

/// A voice. `synthesize` is blocking and CPU-heavy: call it off the async runtime.
pub trait TextToSpeech: Send + Sync {
    fn name(&self) -> &str;
    /// Mono audio of `text` spoken at the voice's configured speed. Text with nothing to say gives empty
    /// audio, not an error; long text is split internally.
    fn synthesize(&self, text: &str) -> Result<Audio, TtsError>;
}

/// Where a Piper voice named `voice` lives in the model store rooted at `models_root`: (model, config).
pub fn piper_voice_paths(
    models_root: &Path,
    voice: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = models_root.join("piper");
    (
        dir.join(format!("{voice}.onnx")),
        dir.join(format!("{voice}.onnx.json")),
    )
}

/// The ONNX Runtime library in the model store rooted at `models_root`.
pub fn runtime_path(models_root: &Path) -> std::path::PathBuf {
    models_root.join("runtime").join("libonnxruntime.so")
}

/// Builds the voice a profile's `[tts]` asks for: `engine` is `piper`, `kokoro`, `flite`, `espeak` or
/// `openai`; `voice` is the engine's voice name (a Piper voice file stem such as `en_US-joe-medium`, a Kokoro
/// voice such as `af_heart`, a flite voice, an espeak-ng voice, a cloud voice); `models_root` is the model
/// store.
///
/// Never fails while a Debian voice (flite or espeak-ng) is installed: if the requested voice cannot be
/// built, or the engine is unknown, the Debian voice is returned and the reason logged; the requested voice
/// is still wrapped in [`FallbackTts`] so a failure while speaking also falls back. Without a Debian voice,
/// the requested voice's own error is returned.
pub fn from_config(
    engine: &str,
    voice: &str,
    speed: f32,
    models_root: &Path,
) -> Result<Box<dyn TextToSpeech>, TtsError> {
    let speed = if speed.is_finite() && speed > 0.0 {
        speed
    } else {
        tracing::warn!(speed, "invalid TTS speed, using 1.0");
        1.0
    };
    let engine_id = engine.trim().to_ascii_lowercase();
    let primary: Result<Box<dyn TextToSpeech>, TtsError> = match engine_id.as_str() {
        "piper" => {
            let (model, config) = piper_voice_paths(models_root, voice);
            PiperTts::new(&model, &config, &runtime_path(models_root), speed)
                .map(|e| Box::new(e) as Box<dyn TextToSpeech>)
        }
        "kokoro" => KokoroTts::new(
            &KokoroPaths::in_store(models_root),
            or(voice, "af_heart"),
            &runtime_path(models_root),
            speed,
        )
        .map(|e| Box::new(e) as _),
        "flite" => FliteTts::new(or(voice, "slt"), speed).map(|e| Box::new(e) as _),
        "espeak" | "espeak-ng" => {
            EspeakTts::new(or(voice, "en-us"), speed).map(|e| Box::new(e) as _)
        }
        "openai" | "cloud" => CloudTts::new(CloudTtsConfig::from_env(or(voice, "alloy"), speed))
            .map(|e| Box::new(e) as _),
        _ => Err(TtsError::UnknownEngine(engine.to_owned())),
    };
    match debian_fallback(&engine_id, voice, speed) {
        Ok(fallback) => Ok(Box::new(FallbackTts::new(primary, fallback))),
        Err(no_fallback) => {
            if let Err(reason) = &primary {
                tracing::error!(%reason, fallback = %no_fallback, "no voice available");
            }
            primary
        }
    }
}

fn or<'a>(voice: &'a str, default: &'a str) -> &'a str {
    if voice.trim().is_empty() {
        default
    } else {
        voice.trim()
    }
}

/// A Debian voice to fall back on, of another engine than the one asked for: flite for English, espeak-ng
/// for other languages (flite speaks only English), each the other's backup.
fn debian_fallback(
    engine: &str,
    voice: &str,
    speed: f32,
) -> Result<Box<dyn TextToSpeech>, TtsError> {
    let language = fallback_language(engine, voice);
    let candidates = if language.starts_with("en") {
        [("flite", "slt"), ("espeak", "en-us")]
    } else {
        [("espeak", language.as_str()), ("flite", "slt")]
    };
    let requested = if engine == "espeak-ng" {
        "espeak"
    } else {
        engine
    };
    let mut last =
        TtsError::VoiceMissing("flite or espeak-ng (Debian packages `flite`, `espeak-ng`)".into());
    for (kind, voice) in candidates {
        if kind == requested {
            continue;
        }
        let built: Result<Box<dyn TextToSpeech>, TtsError> = if kind == "flite" {
            FliteTts::new(voice, speed).map(|e| Box::new(e) as _)
        } else {
            EspeakTts::new(voice, speed).map(|e| Box::new(e) as _)
        };
        match built {
            Ok(engine) => return Ok(engine),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// espeak-ng language code guessed from the configured voice: Piper names start with `ll_RR-`
/// (`de_DE-thorsten-medium` → `de`, `zh_CN-…` → `cmn`); espeak voices are languages already.
fn fallback_language(engine: &str, voice: &str) -> String {
    let voice = voice.trim();
    match engine {
        "espeak" | "espeak-ng" if !voice.is_empty() => voice.to_owned(),
        "piper" => {
            let language = voice
                .split(['_', '-'])
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            match language.as_str() {
                "" => "en".to_owned(),
                "zh" => "cmn".to_owned(),
                _ => language,
            }
        }
        // Kokoro voices start with their language: `z` Mandarin, `j` Japanese, `a`/`b` English.
        "kokoro" => match voice.chars().next() {
            Some('z') => "cmn".to_owned(),
            Some('j') => "ja".to_owned(),
            _ => "en".to_owned(),
        },
        _ => "en".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_language_from_voice_names() {
        assert_eq!(fallback_language("piper", "en_US-joe-medium"), "en");
        assert_eq!(fallback_language("piper", "de_DE-thorsten-medium"), "de");
        assert_eq!(fallback_language("piper", "zh_CN-huayan-medium"), "cmn");
        assert_eq!(fallback_language("espeak", "cmn"), "cmn");
        assert_eq!(fallback_language("openai", "alloy"), "en");
        assert_eq!(fallback_language("kokoro", "zf_xiaoxiao"), "cmn");
        assert_eq!(fallback_language("kokoro", "af_heart"), "en");
    }

    #[test]
    fn missing_piper_voice_falls_back_to_flite() {
        let root = tempfile::tempdir().unwrap();
        let tts = from_config("piper", "en_US-nobody-medium", 1.0, root.path()).unwrap();
        assert_eq!(tts.name(), "flite");
    }

    #[test]
    fn non_english_piper_voice_falls_back_to_espeak() {
        let root = tempfile::tempdir().unwrap();
        let tts = from_config("piper", "de_DE-nobody-medium", 1.0, root.path()).unwrap();
        assert_eq!(tts.name(), "espeak");
    }

    #[test]
    fn missing_kokoro_voice_falls_back_to_a_debian_voice_of_its_language() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(
            from_config("kokoro", "af_heart", 1.0, root.path())
                .unwrap()
                .name(),
            "flite"
        );
        let zh = from_config("kokoro", "zf_xiaoxiao", 1.0, root.path()).unwrap();
        assert_eq!(zh.name(), "espeak");
    }

    #[test]
    fn flite_falls_back_to_espeak_and_unknown_engines_to_flite() {
        let root = tempfile::tempdir().unwrap();
        let tts = from_config("flite", "no-such-voice", 1.0, root.path()).unwrap();
        assert_eq!(tts.name(), "espeak");
        let tts = from_config("festival", "x", 1.0, root.path()).unwrap();
        assert_eq!(tts.name(), "flite");
    }
}
