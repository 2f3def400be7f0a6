//! Audio I/O for Tomo, free of UI and LLM concerns: PCM clips, microphone capture, resampling to 16 kHz
//! mono, voice activity detection with pre-roll and hangover, a semantic end-of-turn model, and a playback
//! queue.

pub mod barge_in;
pub mod capture;
mod device_clock;
pub mod echo;
mod glitch_log;
pub mod output;
mod pcm;
pub mod playback;
pub mod resample;
pub mod segmenter;
pub mod turn;
pub mod vad;
pub mod wav_input;
pub mod wav_output;

pub use barge_in::{BargeIn, BargeInConfig, BargeInGate, HeldBy};
pub use capture::{
    Capture, CaptureConfig, CaptureError, CaptureStatus, CaptureStreams, MicFrame,
    list_input_devices,
};
pub use echo::{EchoCanceller, EchoConfig, EchoOutput, EchoPath, FrameEcho, RenderReference};
pub use pcm::Audio;
pub use playback::{RodioOutput, list_output_devices};
pub use segmenter::{
    FRAME_DURATION, ListenMode, Segmenter, SegmenterConfig, SegmenterEvent, SpeechSegment,
};
pub use turn::{EndOfTurn, SmartTurn, TurnConfig, TurnEnd, TurnError};
pub use vad::{SileroVad, VadError, VoiceActivity};
pub use wav_input::{WavError, read_wav_16k, read_wav_mono, segments_from_wav};
pub use wav_output::WavOutput;

/// The rate everything downstream of capture works at (VAD, ASR).
pub const SAMPLE_RATE: u32 = 16_000;
/// Samples per frame: 32 ms at 16 kHz, Silero VAD's window.
pub const FRAME_SAMPLES: usize = 512;
