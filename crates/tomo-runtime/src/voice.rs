//! Building the voice pipeline from a profile and the model store: VAD, ASR, TTS, and the first-run install
//! of what a profile needs. Shared by `tomo talk`, `tomo run`, `tomo bench voice` and the desktop app.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tomo_audio::{SegmenterConfig, SileroVad};
use tomo_config::profile::{AsrEngine, Profile, TtsEngine};
use tomo_models::{InstallEvent, InstallOptions, ModelStatus, ModelStore};
use tomo_speech::asr::cloud::CloudAsr;
use tomo_speech::asr::whisper::WhisperAsr;
use tomo_speech::asr::{SpeechToText, Transcript};
use tomo_speech::tts::{self, TextToSpeech};
use tomo_speech::voice_sink::VoiceBuilder;

pub const VAD_MODEL: &str = "silero-vad";
pub const RUNTIME: &str = "onnxruntime";
/// Decides when the user has finished speaking (without it a fixed silence does).
pub const END_OF_TURN_MODEL: &str = "smart-turn-v3";
/// The Kokoro model with its vocabulary and voices (one store entry for every Kokoro voice).
pub const KOKORO: &str = "kokoro-v1.0";

/// The store name of the whisper model a profile asks for (`[asr] model = "base"` → `whisper-base`).
pub fn whisper_model(profile: &Profile) -> String {
    format!("whisper-{}", profile.asr.model)
}

/// Models this profile needs that are not installed (or are corrupt).
pub fn missing_models(store: &ModelStore, profile: &Profile) -> anyhow::Result<Vec<String>> {
    let mut needed = vec![
        VAD_MODEL.to_owned(),
        RUNTIME.to_owned(),
        END_OF_TURN_MODEL.to_owned(),
    ];
    if profile.asr.engine == AsrEngine::Whisper {
        needed.push(whisper_model(profile));
    }
    if profile.tts.engine == TtsEngine::Piper {
        needed.push(format!("piper-{}", piper_short_name(&profile.tts.voice)));
    }
    if profile.tts.engine == TtsEngine::Kokoro {
        needed.push(KOKORO.to_owned());
    }
    let mut missing = Vec::new();
    for name in needed {
        match store.status(&name) {
            Ok(ModelStatus::Installed) => {}
            Ok(_) => missing.push(name),
            // A voice the manifest does not know: TTS falls back to a Debian voice, nothing to install.
            Err(_) if name.starts_with("piper-") => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(missing)
}

/// Installs the models `profile` needs that are missing (first run), reporting progress to `on_event`.
/// Returns the names it installed (empty: nothing was missing). Blocking: downloads and hashes files.
pub fn install_missing(
    store: &ModelStore,
    profile: &Profile,
    on_event: &mut dyn FnMut(InstallEvent),
) -> anyhow::Result<Vec<String>> {
    let missing = missing_models(store, profile)?;
    if !missing.is_empty() {
        tomo_models::install(store, &missing, &InstallOptions::default(), on_event).with_context(
            || {
                format!(
                    "cannot install {} into {}",
                    missing.join(", "),
                    store.root.display()
                )
            },
        )?;
    }
    Ok(missing)
}

/// `en_US-joe-medium` → `en-joe` (the manifest's naming: language, speaker).
fn piper_short_name(voice: &str) -> String {
    let mut parts = voice.split('-');
    let language = parts
        .next()
        .unwrap_or_default()
        .split('_')
        .next()
        .unwrap_or_default();
    let speaker = parts.next().unwrap_or_default();
    format!("{language}-{speaker}")
}

pub fn vad(store: &ModelStore) -> anyhow::Result<SileroVad> {
    let model = store.path(VAD_MODEL)?;
    let runtime = store.path(RUNTIME)?;
    SileroVad::new(&model, &runtime)
        .with_context(|| format!("cannot load the VAD model {}", model.display()))
}

/// The live segmenter: the default timings, and the utterance offered for recognition at the first
/// frame of silence (one the VAD calls silent, or the second hushed one: see the segmenter's
/// `level.rs`), so ASR runs while the end of the turn is being decided. When the speaker goes on,
/// the recognition gives up after whisper's encoder (asr_worker.rs) and its words are not offered: on the
/// device benchmark the transcript came 58 ms sooner than at three frames (p50 386 against 444 ms after
/// the last word). Quiet frames skip the VAD model while nobody speaks (idle listening's cost).
pub fn segmenter_config() -> SegmenterConfig {
    SegmenterConfig {
        speculate_after: Some(std::time::Duration::from_millis(32)),
        skip_quiet: true,
        ..SegmenterConfig::default()
    }
}

/// The semantic end-of-turn model when it is installed; `None` (logged) leaves the fixed hangover.
pub fn end_of_turn(store: &ModelStore) -> Option<Box<dyn tomo_audio::EndOfTurn + Send>> {
    let model = tomo_audio::turn::smart_turn::model_path(&store.root);
    let runtime = store.path(RUNTIME).ok()?;
    match tomo_audio::SmartTurn::new(&model, &runtime) {
        Ok(model) => Some(Box::new(model)),
        Err(error) => {
            tracing::info!(%error, "no end-of-turn model: a fixed silence ends each utterance");
            None
        }
    }
}

pub fn asr(profile: &Profile, store: &ModelStore) -> anyhow::Result<Arc<dyn SpeechToText>> {
    let language = profile.asr.language.clone();
    match profile.asr.engine {
        AsrEngine::Whisper => {
            let model = store.path(&whisper_model(profile))?;
            let threads = crate::listen::asr_threads();
            Ok(Arc::new(WhisperAsr::new(&model, language, threads)?))
        }
        AsrEngine::OpenAi => {
            // Audio leaves the machine only when the profile asks for a cloud engine.
            let base = std::env::var("TOMO_ASR_BASE_URL")
                .unwrap_or_else(|_| "https://api.openai.com/v1".into());
            let model = std::env::var("TOMO_ASR_MODEL").unwrap_or_else(|_| "whisper-1".into());
            let key = std::env::var("TOMO_ASR_API_KEY")
                .ok()
                .filter(|k| !k.is_empty());
            Ok(Arc::new(CloudAsr::new(base, model, key, language)?))
        }
    }
}

pub fn tts(profile: &Profile, store: &ModelStore) -> anyhow::Result<Arc<dyn TextToSpeech>> {
    let voice = tts::from_config(
        profile.tts.engine.as_str(),
        &profile.tts.voice,
        profile.tts.speed,
        &store.root,
    )?;
    Ok(Arc::from(voice))
}

/// How a voice sink builds the next character's voice on a character switch.
pub fn voice_builder(store: &ModelStore) -> VoiceBuilder {
    let store = store.clone();
    Arc::new(move |profile: &Profile| tts(profile, &store).map_err(|error| format!("{error:#}")))
}

/// Runs ASR off the async runtime and measures it.
pub async fn transcribe(
    asr: Arc<dyn SpeechToText>,
    samples: Vec<f32>,
) -> anyhow::Result<(Transcript, Duration)> {
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let transcript = asr.transcribe(&samples)?;
        Ok((transcript, started.elapsed()))
    })
    .await?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piper_voice_names_map_to_manifest_names() {
        assert_eq!(piper_short_name("en_US-joe-medium"), "en-joe");
    }
}
