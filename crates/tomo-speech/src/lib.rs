//! Speech for Tomo: speech-to-text and text-to-speech engines behind traits, and the voice output sink
//! (the models they load are installed by tomo-models).

pub mod asr;
pub mod tts;
pub mod voice_sink;
