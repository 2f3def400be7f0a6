//! Speech for Tomo: speech-to-text and text-to-speech engines behind traits, and the model store.

pub mod asr;
pub mod models;
pub mod tts;
pub mod voice_sink;
