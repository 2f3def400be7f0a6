//! What every front end (the `tomo` CLI, the desktop app) needs to run a session in-process, assembled
//! one way: [`SessionBuilder`] turns a profile and the shared [`flags`] into a [`RunningSession`] — the
//! environment and plugin factories ([`env`]), model checks, the first-run install and the VAD/ASR/TTS
//! factories ([`voice`]), the microphone front end ([`listen`]), and typed [`notices`] for every client.

mod asr_worker;
pub mod brain;
pub mod builder;
pub mod env;
pub mod flags;
pub mod listen;
pub mod notices;
pub mod paths;
mod recognizing;
pub mod trust;
pub mod turn_words;
pub mod voice;

pub use brain::{Brain, BrainProgress, BrainStats};
pub use builder::{
    Duplex, ModelInstall, RunningSession, SessionBuilder, StartError, VoiceIn, VoiceOut,
};
pub use env::{EnvOptions, Prepared, environment, environment_with};
pub use flags::{SessionFlags, VoiceFlags};
pub use listen::{ListenFlags, Listener, start_listening};
pub use notices::{Notice, Notify, SessionNotices};
