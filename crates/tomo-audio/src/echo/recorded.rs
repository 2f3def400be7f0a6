//! The echo canceller over recordings instead of devices: a microphone recording cleaned of what the
//! speakers played, with the reference fed as the live playback side feeds it. For the echo fixtures
//! (tests/fixtures/echo-*) and for looking into a recording of a session.

use crate::echo::{CHUNK, EchoCanceller, EchoConfig, FrameEcho, RenderReference};
use crate::{Audio, FRAME_SAMPLES};

/// How far the playback side runs ahead of the capture (16 kHz samples): the device pulls ahead.
const PLAYBACK_LEAD: i64 = 1_600;
/// Samples per reference block, as the playback tap hands them over.
const TAP_BLOCK: usize = 256;

/// A microphone recording after the canceller, and per 32 ms frame what the canceller did to it.
#[derive(Debug, Clone)]
pub struct CleanedRecording {
    pub samples: Vec<f32>,
    /// The linear filter's output (the user's voice for recognition; see `EchoCanceller::take_voice`).
    pub voice: Vec<f32>,
    pub echo: Vec<FrameEcho>,
}

/// Cancels `played` (what the speakers played, any rate, starting with the microphone's first
/// sample) out of `mic` (16 kHz mono): the playback side 100 ms ahead of the capture, in blocks of 256
/// samples. A tail shorter than a frame is dropped.
pub fn cancel_recorded(mic: &[f32], played: &Audio, config: &EchoConfig) -> CleanedRecording {
    let reference = RenderReference::new();
    let mut canceller = EchoCanceller::new(reference.clone(), config);
    let ratio = 16_000.0 / f64::from(played.sample_rate.max(1));
    let mut blocks = played.samples.chunks(TAP_BLOCK).enumerate().peekable();
    let mut samples = Vec::with_capacity(mic.len());
    let mut voice = Vec::with_capacity(mic.len());
    let mut levels = Vec::new();
    for (k, frame) in mic.chunks_exact(FRAME_SAMPLES).enumerate() {
        let index = (k * FRAME_SAMPLES) as i64;
        while let Some((b, block)) = blocks.peek() {
            let at = ((b * TAP_BLOCK) as f64 * ratio).round() as i64;
            if at > index + PLAYBACK_LEAD {
                break;
            }
            reference.push_at(block, played.sample_rate, at);
            blocks.next();
        }
        samples.extend(canceller.process_at(frame, index));
        canceller.take_levels(&mut levels);
        canceller.take_voice(&mut voice);
        if k % 400 == 399 {
            let (erl, erle, delay) = canceller.metrics();
            tracing::trace!(
                seconds = index as f64 / 16_000.0,
                erl,
                erle,
                delay,
                "echo canceller"
            );
        }
    }
    let echo = levels
        .chunks(FRAME_SAMPLES / CHUNK)
        .map(FrameEcho::of)
        .collect();
    CleanedRecording {
        samples,
        voice,
        echo,
    }
}
