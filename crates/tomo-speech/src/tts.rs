//! Text to speech.

use tomo_audio::Audio;

#[derive(Debug, thiserror::Error)]
pub enum TtsError {
    #[error("voice not found at {0} (install it with `tomo models install`)")]
    VoiceMissing(String),
    #[error("cannot load voice {path}: {message}")]
    VoiceLoad { path: String, message: String },
    #[error("synthesis failed: {0}")]
    Failed(String),
    #[error("speech service error: {0}")]
    Service(String),
}

/// A voice. `synthesize` is blocking and CPU-heavy: call it off the async runtime.
pub trait TextToSpeech: Send + Sync {
    fn name(&self) -> &str;
    /// Mono audio of `text` spoken at the voice's configured speed.
    fn synthesize(&self, text: &str) -> Result<Audio, TtsError>;
}
