//! Speech to text: local whisper.cpp ([`whisper::WhisperAsr`]) or an OpenAI-compatible service
//! ([`cloud::CloudAsr`]), and word and character error rates to measure them.

pub mod cloud;
mod wer;
pub mod whisper;

pub use cloud::CloudAsr;
pub use wer::{character_error_rate, normalize_words, word_error_rate};
pub use whisper::{WhisperAsr, WhisperConfig};

/// What the user said.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcript {
    pub text: String,
    /// Detected or configured language code (`en`, `zh`, ...).
    pub language: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AsrError {
    #[error("speech model not found at {0} (install it with `tomo models install`)")]
    ModelMissing(String),
    #[error("cannot load speech model {path}: {message}")]
    ModelLoad { path: String, message: String },
    #[error("transcription failed: {0}")]
    Failed(String),
    #[error("speech service error: {0}")]
    Service(String),
    /// The caller said the words went stale (the speaker went on) while they were being recognised.
    #[error("transcription given up: the speech it was for went on")]
    GivenUp,
}

/// Asked while a recognition runs: `true` once its result is no longer wanted.
pub type Stale = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

/// A speech recognizer. `transcribe` is blocking and CPU-heavy: call it off the async runtime
/// (`tokio::task::spawn_blocking`).
pub trait SpeechToText: Send + Sync {
    fn name(&self) -> &str;
    /// `samples`: 16 kHz mono in `[-1, 1]`.
    fn transcribe(&self, samples: &[f32]) -> Result<Transcript, AsrError>;

    /// Like [`SpeechToText::transcribe`], but gives up with [`AsrError::GivenUp`] once `stale` says so
    /// (whisper checks after its encoder and after each decoder pass), freeing the cores for the words
    /// that made it stale. Engines that cannot stop midway finish and check once at the end.
    fn transcribe_unless(&self, samples: &[f32], stale: &Stale) -> Result<Transcript, AsrError> {
        let transcript = self.transcribe(samples)?;
        if stale() {
            return Err(AsrError::GivenUp);
        }
        Ok(transcript)
    }
}
