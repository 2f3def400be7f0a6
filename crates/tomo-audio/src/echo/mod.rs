//! Acoustic echo cancellation: the speakers' signal ([`RenderReference`], fed by the playback side)
//! removed from the microphone's ([`EchoCanceller`], on the capture path before the VAD), so the user can
//! talk over the character without headphones.

pub mod canceller;
pub mod path;
pub mod recorded;
pub mod reference;
mod resume;

pub use canceller::{BlockLevel, CHUNK, EchoCanceller, EchoConfig, EchoOutput, FrameEcho};
pub use path::{EchoPath, EchoPathDetector};
pub use recorded::{CleanedRecording, cancel_recorded};
pub use reference::{ReferenceTimeline, RenderReference};
