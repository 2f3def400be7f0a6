//! What every front end (the `tomo` CLI, the desktop app) needs to run a session in-process: the session
//! environment and plugin factories ([`env`]), model checks and the first-run install plus the VAD/ASR/TTS
//! factories ([`voice`]), the microphone front end ([`listen`]) and output sinks ([`sinks`]).

pub mod env;
pub mod listen;
pub mod notices;
pub mod paths;
pub mod sinks;
pub mod voice;

pub use env::{EnvOptions, Prepared, environment};
pub use listen::{ListenFlags, Notify, start_listening};
pub use notices::SessionNotices;
pub use sinks::{speaker_sink, speaker_sink_or_text};
