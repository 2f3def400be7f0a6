//! Where synthesized clips are played: the speakers (rodio) or a WAV file (`tomo talk`).

use futures::future::BoxFuture;

use crate::Audio;

/// Called by the output when a clip starts and when its last sample has been played.
pub type ClipCallback = Box<dyn FnOnce() + Send + 'static>;

/// One clip to play, with notifications for lip sync and bookkeeping.
pub struct Clip {
    pub audio: Audio,
    pub on_start: Option<ClipCallback>,
    pub on_finish: Option<ClipCallback>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OutputError {
    #[error("no audio output device: {0}")]
    NoDevice(String),
    #[error("audio output failed: {0}")]
    Device(String),
    #[error("cannot write {path}: {message}")]
    File { path: String, message: String },
}

/// A strictly ordered playback queue.
pub trait AudioOutput: Send + Sync {
    /// Queues a clip after the ones already queued. Returns at once.
    fn play(&self, clip: Clip) -> Result<(), OutputError>;
    /// Resolves once every clip queued so far has finished playing (or was dropped by [`AudioOutput::stop`]).
    fn drained(&self) -> BoxFuture<'static, ()>;
    /// Stops the current clip within 100 ms and drops the queue. `on_finish` of dropped clips is not called.
    fn stop(&self);
    /// Holds playback where it is (`true`) or lets it go on from there (`false`); the queue is kept,
    /// and clips queued meanwhile wait. [`AudioOutput::stop`] ends a hold. An output that is not heard in
    /// real time (a file) ignores it.
    fn pause(&self, _paused: bool) {}
}
