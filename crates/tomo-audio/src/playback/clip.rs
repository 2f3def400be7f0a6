//! One clip as the device pulls it: reports its first and last sample to the playback worker and copies
//! what is pulled to the echo reference.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use rodio::Source;

use super::Msg;
use crate::device_clock::{OutputClock, Pull};
use crate::echo::RenderReference;

/// Samples per block handed to the echo reference (~5 ms at [`QUEUE_RATE`]).
const TAP_BLOCK: usize = 256;

/// The rate every clip is played at: that of the silence rodio's queue plays while it waits for the
/// next clip (the queue starts on an `Empty` source, mono at 48 kHz, and its silence takes the format
/// of whatever played last). The mixer converts the queue a span at a time, and a span that begins as
/// a chunk of that silence ends is set up in the silence's format, whatever clip comes next: a clip at
/// another rate had its first samples (up to 512: 23 ms of a 22.05 kHz Piper voice) played 2.2 times
/// too fast. That happened to the first answer of a session, the first after every stop (a fresh
/// queue) and the first after a change of voice rate; other clips follow silence in their own format.
/// Heard: a chirp at the start of the answer. For the echo canceller: that answer's echo came 12.5 ms
/// earlier, against its reference, than every later answer's (the device loop, every run), so AEC3's
/// filter started over at the second answer, which then leaked its first echo (the answers it held
/// for its own voice).
const QUEUE_RATE: u32 = 48_000;

/// `audio` at [`QUEUE_RATE`] (as it is when resampling fails, said in the log). Done by the caller
/// of `play`, not on the playback thread, where it would hold up a stop behind it.
pub(super) fn at_queue_rate(audio: crate::Audio) -> crate::Audio {
    if audio.sample_rate == QUEUE_RATE {
        return audio;
    }
    match crate::resample::resample(&audio.samples, audio.sample_rate, QUEUE_RATE) {
        Ok(samples) => crate::Audio::new(samples, QUEUE_RATE),
        Err(error) => {
            tracing::warn!(%error, "clip played at its own rate");
            audio
        }
    }
}

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

#[cfg(test)]
mod tests {
    use std::num::NonZero;
    use std::sync::mpsc;

    use super::*;

    /// Frames the mixer plays of a clip of `seconds` at `rate`, brought to the queue's rate as `play`
    /// does, appended while the player's queue waits in its silence (the start of a session).
    fn frames_played(rate: u32, seconds: f64) -> usize {
        let mixer_rate = 48_000;
        let (mixer, mut output) =
            rodio::mixer::mixer(NonZero::new(1).unwrap(), NonZero::new(mixer_rate).unwrap());
        let player = rodio::Player::connect_new(&mixer);
        // The queue starts on its silence before the first clip arrives.
        assert!((&mut output).take(100).all(|s| s == 0.0));
        let level = 0.25;
        let samples = vec![level; (f64::from(rate) * seconds) as usize];
        let (reports, _keep) = mpsc::channel();
        player.append(TrackedClip::new(
            1,
            at_queue_rate(crate::Audio::new(samples, rate)),
            reports,
            None,
        ));
        let heard = output
            .take(mixer_rate as usize)
            .filter(|s| (s - level).abs() < 0.05)
            .count();
        drop(player);
        heard
    }

    #[test]
    fn a_clip_appended_while_the_queue_waits_plays_at_its_own_speed() {
        // 0.2 s of a 22.05 kHz voice (Piper) and of a 24 kHz one (Kokoro) are 9,600 frames at 48 kHz
        // (a few short at the edges, where the resampler ramps). Played in the silence's format, the
        // first 512 samples took 512 frames instead of 1,114: 600 frames short.
        for rate in [22_050, 24_000] {
            let frames = frames_played(rate, 0.2);
            assert!(
                (9_570..=9_610).contains(&frames),
                "{rate} Hz: {frames} frames"
            );
        }
    }
}
