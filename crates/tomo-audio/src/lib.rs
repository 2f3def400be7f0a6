//! Audio I/O for Tomo, free of UI and LLM concerns: PCM clips, microphone capture, resampling to 16 kHz
//! mono, voice activity detection with pre-roll and hangover, and a playback queue.

pub mod output;
mod pcm;

pub use pcm::Audio;
