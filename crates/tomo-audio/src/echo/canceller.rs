//! The capture-side echo canceller: WebRTC's AEC3 (the `sonora` port) cleaning microphone frames with
//! what the speakers played at the same moment as its reference.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use sonora::config::EchoCanceller as Aec3;
use sonora::{AudioProcessing, Config, StreamConfig};

use super::reference::{CONTIGUOUS_TOLERANCE, ReferenceTimeline, RenderReference};
use crate::SAMPLE_RATE;

/// AEC3 works on 10 ms chunks.
pub const CHUNK: usize = SAMPLE_RATE as usize / 100;

#[derive(Debug, Clone, PartialEq)]
pub struct EchoConfig {
    /// The reference is handed to AEC3 this much ahead of the capture it is matched with. Timestamps
    /// are estimates and AEC3 only looks for echoes *after* their reference, so erring early is safe
    /// (its delay estimator finds the rest, up to about half a second).
    pub reference_lead: Duration,
    /// With nothing played for this long (echo tail included), frames pass through untouched and
    /// AEC3 rests: idle listening costs nothing extra. Its adapted filter is kept for the next answer.
    pub idle_after: Duration,
}

impl Default for EchoConfig {
    fn default() -> Self {
        Self {
            reference_lead: Duration::from_millis(20),
            idle_after: Duration::from_millis(1_500),
        }
    }
}

/// Cleans 16 kHz microphone audio of what the speakers play. Output is delayed by [`CHUNK`] samples
/// (10 ms) against the input, whatever the frame size.
pub struct EchoCanceller {
    apm: AudioProcessing,
    timeline: ReferenceTimeline,
    lead: i64,
    idle_after: i64,
    /// Capture samples not yet processed, the first at sample index `pending_index`.
    pending: Vec<f32>,
    pending_index: Option<i64>,
    output: VecDeque<f32>,
    reference_chunk: Vec<f32>,
    processed_chunk: Vec<f32>,
    /// Chunks that went through AEC3 (not passed through idle).
    cancelled_chunks: u64,
}

impl std::fmt::Debug for EchoCanceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EchoCanceller")
            .field("lead", &self.lead)
            .field("cancelled_chunks", &self.cancelled_chunks)
            .finish_non_exhaustive()
    }
}

fn samples(duration: Duration) -> i64 {
    (duration.as_secs_f64() * f64::from(SAMPLE_RATE)).round() as i64
}

impl EchoCanceller {
    pub fn new(reference: RenderReference, config: &EchoConfig) -> Self {
        let stream = StreamConfig::new(SAMPLE_RATE, 1);
        let apm = AudioProcessing::builder()
            .config(Config {
                echo_canceller: Some(Aec3::default()),
                ..Config::default()
            })
            .capture_config(stream)
            .render_config(stream)
            .build();
        Self {
            apm,
            timeline: ReferenceTimeline::new(reference),
            lead: samples(config.reference_lead),
            idle_after: samples(config.idle_after),
            pending: Vec::with_capacity(CHUNK * 4),
            pending_index: None,
            // Primed with one chunk of silence: every frame in gets a frame out at once.
            output: std::iter::repeat_n(0.0, CHUNK).collect(),
            reference_chunk: vec![0.0; CHUNK],
            processed_chunk: vec![0.0; CHUNK],
            cancelled_chunks: 0,
        }
    }

    /// The handle the playback side feeds.
    pub fn reference(&self) -> &RenderReference {
        self.timeline.reference()
    }

    /// Chunks (10 ms) that went through AEC3 so far.
    pub fn cancelled_chunks(&self) -> u64 {
        self.cancelled_chunks
    }

    /// Echo statistics from AEC3 (ERL, ERLE, estimated delay).
    pub fn statistics(&self) -> &sonora::AudioProcessingStats {
        self.apm.statistics()
    }

    /// Cleans `frame`, whose first sample was recorded at `recorded_at`.
    pub fn process(&mut self, frame: &[f32], recorded_at: Instant) -> Vec<f32> {
        let index = self.timeline.reference().index_of(recorded_at);
        self.process_at(frame, index)
    }

    /// Cleans `frame`, whose first sample was recorded at 16 kHz sample index `first_index` of the
    /// reference's clock. Returns as many samples as it was given.
    pub fn process_at(&mut self, frame: &[f32], first_index: i64) -> Vec<f32> {
        let expected = self.pending_index.map(|i| i + self.pending.len() as i64);
        let anchor = match expected {
            // Capture timestamps jitter like the playback ones: close enough continues the stream.
            Some(expected)
                if (first_index - expected).unsigned_abs()
                    <= (samples(CONTIGUOUS_TOLERANCE) as u64) =>
            {
                expected
            }
            Some(expected) => {
                tracing::debug!(
                    jump = first_index - expected,
                    "capture clock jumped; echo alignment re-anchored"
                );
                first_index
            }
            None => first_index,
        };
        self.pending_index = Some(anchor - self.pending.len() as i64);
        self.pending.extend_from_slice(frame);
        self.timeline.update();
        let whole = self.pending.len() / CHUNK * CHUNK;
        let mut start = 0;
        while start < whole {
            let index = self.pending_index.unwrap_or(0) + start as i64;
            self.process_chunk(start, index);
            start += CHUNK;
        }
        self.pending.drain(..whole);
        if let Some(index) = self.pending_index.as_mut() {
            *index += whole as i64;
        }
        let take = frame.len().min(self.output.len());
        self.output.drain(..take).collect()
    }

    fn process_chunk(&mut self, offset: usize, index: i64) {
        let chunk = &self.pending[offset..offset + CHUNK];
        let idle = self
            .timeline
            .last_played()
            .is_none_or(|end| index - end > self.idle_after);
        if idle {
            self.output.extend(chunk);
            return;
        }
        self.timeline
            .read(index - self.lead, &mut self.reference_chunk);
        let mut render_out = [0.0_f32; CHUNK];
        let delay_ms = (self.lead * 1000 / i64::from(SAMPLE_RATE)) as i32;
        let result = self
            .apm
            .process_render_f32(&[&self.reference_chunk], &mut [&mut render_out])
            .and_then(|()| {
                // AEC3 estimates the delay itself; this is the lead we add, clamped to its range.
                let _ = self.apm.set_stream_delay_ms(delay_ms);
                self.apm
                    .process_capture_f32(&[chunk], &mut [&mut self.processed_chunk])
            });
        match result {
            Ok(()) => {
                self.output.extend(&self.processed_chunk);
                self.cancelled_chunks += 1;
            }
            Err(error) => {
                tracing::warn!(?error, "echo cancellation failed on a chunk; passed through");
                self.output.extend(chunk);
            }
        }
    }
}
