//! One clip as the device pulls it: reports its first and last sample to the playback worker and copies
//! what is pulled to the echo reference.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use rodio::Source;

use super::Msg;
use crate::device_clock::{OutputClock, Pull};
use crate::echo::RenderReference;

/// Samples per block handed to the echo reference (~10 ms at common rates).
const TAP_BLOCK: usize = 256;

/// Copies what the device pulls to the echo reference, in blocks stamped with when the device pulled
/// them on its steady pull clock: no later than they are heard. The output latency is not added: its
/// estimate is a guess (the buffer size, or 50 ms), and a reference stamped later than its echo is one
/// the canceller cannot use, while one stamped early only adds to the delay its estimator finds anyway.
pub(super) struct ReferenceTap {
    reference: RenderReference,
    clock: OutputClock,
    block: Vec<f32>,
    /// When the block's first sample was pulled.
    first_pulled: Option<Pull>,
}

impl ReferenceTap {
    pub(super) fn new(reference: RenderReference, clock: OutputClock) -> Self {
        Self {
            reference,
            clock,
            block: Vec::with_capacity(TAP_BLOCK),
            first_pulled: None,
        }
    }

    fn pulled(&mut self, sample: f32, rate: u32) {
        if self.block.is_empty() {
            self.first_pulled = Some(self.clock.pull_now());
        }
        self.block.push(sample);
        if self.block.len() >= TAP_BLOCK {
            self.flush(rate);
        }
    }

    fn flush(&mut self, rate: u32) {
        if let Some(pulled) = self.first_pulled.take() {
            self.reference.push_pulled(&self.block, rate, pulled);
        }
        self.block.clear();
    }
}

/// A clip as a rodio source that reports its first and last sample to the worker.
pub(super) struct TrackedClip {
    id: u64,
    samples: std::vec::IntoIter<f32>,
    sample_rate: rodio::SampleRate,
    reports: Sender<Msg>,
    started: bool,
    done: bool,
    tap: Option<ReferenceTap>,
}

impl TrackedClip {
    pub(super) fn new(
        id: u64,
        audio: crate::Audio,
        reports: Sender<Msg>,
        tap: Option<ReferenceTap>,
    ) -> Self {
        let mut samples = audio.samples;
        if samples.is_empty() {
            // One silent sample so the source is pulled at all and both reports fire in order.
            samples.push(0.0);
        }
        Self {
            id,
            samples: samples.into_iter(),
            sample_rate: rodio::SampleRate::new(audio.sample_rate)
                .unwrap_or(rodio::SampleRate::MIN),
            reports,
            started: false,
            done: false,
            tap,
        }
    }
}

impl Iterator for TrackedClip {
    type Item = rodio::Sample;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.started {
            self.started = true;
            let _ = self.reports.send(Msg::Started {
                id: self.id,
                at: Instant::now(),
            });
        }
        let sample = self.samples.next();
        if let Some(tap) = self.tap.as_mut() {
            match sample {
                Some(value) => tap.pulled(value, self.sample_rate.get()),
                None => tap.flush(self.sample_rate.get()),
            }
        }
        if sample.is_none() && !self.done {
            self.done = true;
            let _ = self.reports.send(Msg::Exhausted {
                id: self.id,
                at: Instant::now(),
            });
        }
        sample
    }
}

impl Source for TrackedClip {
    fn current_span_len(&self) -> Option<usize> {
        Some(self.samples.len())
    }
    fn channels(&self) -> rodio::ChannelCount {
        rodio::ChannelCount::MIN
    }
    fn sample_rate(&self) -> rodio::SampleRate {
        self.sample_rate
    }
    fn total_duration(&self) -> Option<Duration> {
        None
    }
}
