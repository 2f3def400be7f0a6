//! What the speakers play, as the echo canceller's reference: a handle the playback side feeds block by
//! block with the time each block will be heard, and the timeline the capture side reads it back from,
//! aligned sample by sample with the microphone.
//!
//! Both sides count time in 16 kHz samples since the handle was made (its epoch), so a capture frame
//! recorded at instant `t` meets exactly the reference that was playing at `t`. Audio-callback timestamps
//! jitter (through PulseAudio's ALSA plugin by 60-80 ms: the device pulls in bursts); a block that starts within [`CONTIGUOUS_TOLERANCE`] of where the previous
//! one ended is taken as its continuation (no clicks, no gaps), and only a larger jump (a pause in
//! playback, an underrun) moves the write position. Where nothing was played the reference is silence.
//!
//! A new stretch (the next sentence or answer after a pause) is placed by the device frames pulled
//! since the anchor (the last stretch placed by its stamp), not by the clock's stamp, unless the stamp
//! is more than [`LOST_TIME`] later (the device lost time) or [`ORIGIN_CREEP_LIMIT`] earlier: the stamps
//! come from an origin that is re-estimated from the earliest
//! deliveries and keeps creeping earlier, and through the null-sink loop each new answer then met its
//! echo 0-29 samples off where the last one did (+90 ppm over a run), so AEC3's linear filter started
//! over at every answer, while the frame count, like the echo, stayed put.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::SAMPLE_RATE;
use crate::device_clock::Pull;
use crate::resample::StreamResampler;

/// Blocks whose start is this close to the end of the previous one continue it: more than the bursts'
/// jitter (re-anchoring on jitter shifts the reference against the echo, and the canceller loses its
/// adapted filter each time), less than a pause between sentences usually is.
pub const CONTIGUOUS_TOLERANCE: Duration = Duration::from_millis(100);
/// A new stretch goes where the device frames since the anchor put it, unless its stamp is this much
/// later (the device stalled or lost time: its frames no longer count time; the clock's origin moves
/// later only then)...
const LOST_TIME: Duration = Duration::from_millis(20);
/// ...or this much earlier. The origin's estimate creeps earlier by itself (≈ +90 ppm on the null-sink
/// loop, 20 ms in under four minutes), which the echo does not, so this side is wide: only a count gone
/// wrong gets here.
const ORIGIN_CREEP_LIMIT: Duration = Duration::from_millis(250);
/// Input frames per FFT call of the reference's resampler (one tap block).
const RESAMPLE_CHUNK: usize = 256;
/// Reference audio kept for the capture side (more than any device delay the canceller can handle).
const KEEP_SAMPLES: u64 = 2 * SAMPLE_RATE as u64;
/// Blocks the playback side may queue before the capture side takes them; beyond it the oldest go (a
/// capture side that stopped reading must not grow memory).
const MAX_QUEUED_BLOCKS: usize = 1_024;

fn samples_for(duration: Duration) -> u64 {
    (duration.as_secs_f64() * f64::from(SAMPLE_RATE)).round() as u64
}

/// One block as the playback side handed it over.
struct Block {
    samples: Vec<f32>,
    sample_rate: u32,
    /// 16 kHz sample index (since the epoch) at which its first sample is heard.
    at: i64,
    /// The output device frame that pulled its first sample (`None`: placed by `at` alone).
    device: Option<DeviceFrame>,
}

/// An output device frame number at the device's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DeviceFrame {
    frame: u64,
    rate: u32,
    stream: u64,
}

/// Where the last stretch placed by its stamp began, and its device frame: later stretches count from
/// here (not from each other, so the rounding to 16 kHz samples does not add up).
#[derive(Debug, Clone, Copy)]
struct Anchor {
    at: i64,
    device: DeviceFrame,
}

struct Shared {
    epoch: Instant,
    queue: VecDeque<Block>,
    dropped: u64,
}

/// The playback side's handle: cheap to clone, safe to call from an audio callback (one short lock).
#[derive(Clone)]
pub struct RenderReference {
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for RenderReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderReference").finish_non_exhaustive()
    }
}

/// Two handles are equal when they feed the same reference.
impl PartialEq for RenderReference {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl Default for RenderReference {
    fn default() -> Self {
        Self::new()
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RenderReference {
    pub fn new() -> Self {
        Self::with_epoch(Instant::now())
    }

    /// A reference whose sample clock starts at `epoch`.
    pub fn with_epoch(epoch: Instant) -> Self {
        Self {
            shared: Arc::new(Mutex::new(Shared {
                epoch,
                queue: VecDeque::new(),
                dropped: 0,
            })),
        }
    }

    /// The instant sample index 0 stands for.
    pub fn epoch(&self) -> Instant {
        lock(&self.shared).epoch
    }

    /// The 16 kHz sample index of `instant` on this reference's clock (negative before the epoch).
    pub fn index_of(&self, instant: Instant) -> i64 {
        index_of(self.epoch(), instant)
    }

    /// Mono `samples` at `sample_rate` whose first sample the output device pulled as `pulled` (when
    /// it is heard, and which device frame it was).
    pub(crate) fn push_pulled(&self, samples: &[f32], sample_rate: u32, pulled: Pull) {
        let mut shared = lock(&self.shared);
        let at = index_of(shared.epoch, pulled.at);
        let device = DeviceFrame {
            frame: pulled.frame,
            rate: pulled.rate,
            stream: pulled.stream,
        };
        push_block(&mut shared, samples, sample_rate, at, Some(device));
    }

    /// Mono `samples` heard from the 16 kHz sample index `index` on, with no device frame to place a
    /// new stretch by (tests, files).
    pub fn push_at(&self, samples: &[f32], sample_rate: u32, index: i64) {
        push_block(&mut lock(&self.shared), samples, sample_rate, index, None);
    }

    /// Blocks dropped because the capture side did not take them.
    pub fn dropped_blocks(&self) -> u64 {
        lock(&self.shared).dropped
    }

    fn take(&self) -> Vec<Block> {
        lock(&self.shared).queue.drain(..).collect()
    }
}

fn index_of(epoch: Instant, instant: Instant) -> i64 {
    let (magnitude, sign) = match instant.checked_duration_since(epoch) {
        Some(after) => (after, 1),
        None => (epoch.saturating_duration_since(instant), -1),
    };
    sign * samples_for(magnitude) as i64
}

fn push_block(
    shared: &mut Shared,
    samples: &[f32],
    sample_rate: u32,
    at: i64,
    device: Option<DeviceFrame>,
) {
    if samples.is_empty() || sample_rate == 0 {
        return;
    }
    if shared.queue.len() >= MAX_QUEUED_BLOCKS {
        shared.queue.pop_front();
        shared.dropped += 1;
    }
    shared.queue.push_back(Block {
        samples: samples.to_vec(),
        sample_rate,
        at,
        device,
    });
}

/// A run of contiguous blocks at one rate, converted by one resampler.
struct Stretch {
    rate: u32,
    resampler: StreamResampler,
    /// Index of the stretch's first sample.
    start: i64,
    /// Where the next contiguous block should begin (start + input so far, at 16 kHz).
    input_end: i64,
    /// The input so far, in 16 kHz samples: kept unrounded, so a block's fraction of a sample (a
    /// 256-sample block at 48 kHz is 85.33) does not add up block by block.
    input_len: f64,
    /// Output samples produced so far (they sit at `start ..`).
    produced: i64,
}

/// The capture side's view: the reference resampled to 16 kHz on the shared sample clock.
pub struct ReferenceTimeline {
    source: RenderReference,
    /// Samples from index `start` on; silence where nothing was played.
    buffer: VecDeque<f32>,
    start: i64,
    stretch: Option<Stretch>,
    /// Index just past the last sample that was really played (not filled silence).
    last_played: Option<i64>,
    anchor: Option<Anchor>,
}

impl ReferenceTimeline {
    pub fn new(source: RenderReference) -> Self {
        Self {
            source,
            buffer: VecDeque::new(),
            start: 0,
            stretch: None,
            last_played: None,
            anchor: None,
        }
    }

    pub fn reference(&self) -> &RenderReference {
        &self.source
    }

    /// Index just past the last played sample placed so far (`None`: nothing played yet).
    pub fn last_played(&self) -> Option<i64> {
        self.last_played
    }

    /// Index just past the last sample the playback side has handed over, placed or still in the
    /// resampler (`None`: nothing played yet).
    pub fn last_pulled(&self) -> Option<i64> {
        match (&self.stretch, self.last_played) {
            (Some(stretch), played) => {
                Some(played.map_or(stretch.input_end, |p| p.max(stretch.input_end)))
            }
            (None, played) => played,
        }
    }

    /// Takes what the playback side queued and writes it onto the timeline.
    pub fn update(&mut self) {
        for block in self.source.take() {
            self.place(block);
        }
    }

    fn place(&mut self, block: Block) {
        let tolerance = samples_for(CONTIGUOUS_TOLERANCE);
        let continues = self.stretch.as_ref().is_some_and(|s| {
            s.rate == block.sample_rate && (block.at - s.input_end).unsigned_abs() <= tolerance
        });
        if !continues {
            self.flush();
            let start = self.new_stretch_at(&block);
            // Small FFT chunks: what was pulled reaches the timeline within ~5 ms (256 frames at 48
            // kHz, the rate every clip is played at), so the canceller hardly waits for its reference.
            let Ok(resampler) =
                StreamResampler::with_chunk(block.sample_rate, SAMPLE_RATE, RESAMPLE_CHUNK)
            else {
                return;
            };
            self.stretch = Some(Stretch {
                rate: block.sample_rate,
                resampler,
                start,
                input_end: start,
                input_len: 0.0,
                produced: 0,
            });
        }
        let Some(stretch) = self.stretch.as_mut() else {
            return;
        };
        let converted = match stretch.resampler.push(&block.samples) {
            Ok(converted) => converted,
            Err(error) => {
                tracing::warn!(%error, "echo reference resampling failed");
                return;
            }
        };
        let consumed =
            block.samples.len() as f64 * f64::from(SAMPLE_RATE) / f64::from(block.sample_rate);
        // The stretch's own length, not the block's stamp: jitter must not stretch or squeeze it.
        stretch.input_len += consumed;
        stretch.input_end = stretch.start + stretch.input_len.round() as i64;
        let at = stretch.start + stretch.produced;
        stretch.produced += converted.len() as i64;
        self.write_samples(at, &converted);
    }

    /// Where a new stretch begins: the device frames since the anchor, counted at 16 kHz, while the
    /// block's stamp is at most [`LOST_TIME`] later and [`ORIGIN_CREEP_LIMIT`] earlier; otherwise the
    /// stamp, which anchors anew.
    fn new_stretch_at(&mut self, block: &Block) -> i64 {
        let Some(device) = block.device else {
            self.anchor = None;
            return block.at;
        };
        let anchor = self.anchor.filter(|a| {
            a.device.stream == device.stream
                && a.device.rate == device.rate
                && device.frame >= a.device.frame
        });
        if let Some(anchor) = anchor {
            let frames = (device.frame - anchor.device.frame) as f64;
            let counted = anchor.at.saturating_add(
                (frames * f64::from(SAMPLE_RATE) / f64::from(device.rate)).round() as i64,
            );
            let stamp_later = block.at.saturating_sub(counted);
            if stamp_later <= samples_for(LOST_TIME) as i64
                && stamp_later >= -(samples_for(ORIGIN_CREEP_LIMIT) as i64)
            {
                return counted;
            }
            tracing::debug!(
                stamp_later_ms = stamp_later as f64 * 1_000.0 / f64::from(SAMPLE_RATE),
                "echo reference re-anchored on the output clock's stamp"
            );
        }
        self.anchor = Some(Anchor {
            at: block.at,
            device,
        });
        block.at
    }

    /// Ends the current stretch: the samples its resampler still holds go onto the timeline.
    fn flush(&mut self) {
        let Some(mut stretch) = self.stretch.take() else {
            return;
        };
        match stretch.resampler.finish() {
            Ok(tail) => {
                let at = stretch.start + stretch.produced;
                self.write_samples(at, &tail);
            }
            Err(error) => tracing::warn!(%error, "echo reference resampling failed"),
        }
    }

    fn write_samples(&mut self, at: i64, samples: &[f32]) {
        if samples.is_empty() {
            return;
        }
        if self.buffer.is_empty() {
            self.start = at;
        }
        let (at, samples) = if at < self.start {
            // Older than what is kept: only the part from `start` on.
            let skip = (self.start - at) as usize;
            if skip >= samples.len() {
                return;
            }
            (self.start, &samples[skip..])
        } else {
            (at, samples)
        };
        let offset = (at - self.start) as usize;
        if offset > self.buffer.len() {
            self.buffer.resize(offset, 0.0);
        }
        for (i, &s) in samples.iter().enumerate() {
            match self.buffer.get_mut(offset + i) {
                Some(slot) => *slot = s,
                None => self.buffer.push_back(s),
            }
        }
        let end = at + samples.len() as i64;
        self.last_played = Some(self.last_played.map_or(end, |e| e.max(end)));
        let excess = self.buffer.len().saturating_sub(KEEP_SAMPLES as usize);
        self.buffer.drain(..excess);
        self.start += excess as i64;
    }

    /// Fills `out` with the reference from sample index `from` on (silence where nothing played) and
    /// forgets what lies before `from`.
    pub fn read(&mut self, from: i64, out: &mut [f32]) {
        let until = from + out.len() as i64;
        // The capture side wants audio the resampler still holds back and no block came to push it out:
        // playback has paused or ended, so the stretch is over.
        if self
            .stretch
            .as_ref()
            .is_some_and(|s| until > s.start + s.produced && s.input_end > s.start + s.produced)
        {
            self.flush();
        }
        for (i, slot) in out.iter_mut().enumerate() {
            let index = from + i as i64;
            *slot = if index >= self.start {
                self.buffer
                    .get((index - self.start) as usize)
                    .copied()
                    .unwrap_or(0.0)
            } else {
                0.0
            };
        }
        if from > self.start {
            let drop = ((from - self.start) as usize).min(self.buffer.len());
            self.buffer.drain(..drop);
            self.start += drop as i64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(n: usize) -> Vec<f32> {
        (0..n).map(|i| i as f32 / n as f32).collect()
    }

    #[test]
    fn blocks_land_where_they_are_heard_and_silence_fills_the_rest() {
        let reference = RenderReference::new();
        let mut timeline = ReferenceTimeline::new(reference.clone());
        reference.push_at(&[0.5; 160], SAMPLE_RATE, 1_000);
        timeline.update();
        let mut out = vec![9.0; 400];
        timeline.read(900, &mut out);
        assert!(out[..100].iter().all(|&s| s == 0.0), "before: silence");
        assert!(out[100..260].iter().all(|&s| s == 0.5), "the block");
        assert!(out[260..].iter().all(|&s| s == 0.0), "after: silence");
        assert_eq!(timeline.last_played(), Some(1_160));
    }

    /// A 48 kHz device's pull of `frame`, `us` microseconds after `epoch`.
    fn pulled(epoch: Instant, us: u64, frame: u64, stream: u64) -> Pull {
        Pull {
            at: epoch + Duration::from_micros(us),
            frame,
            rate: 48_000,
            stream,
        }
    }

    /// Where the first non-silent sample of the timeline is, reading `from` on.
    fn first_sound(timeline: &mut ReferenceTimeline, from: i64) -> Option<i64> {
        let mut out = vec![0.0; 16_000];
        timeline.read(from, &mut out);
        out.iter().position(|&s| s != 0.0).map(|i| from + i as i64)
    }

    #[test]
    fn a_new_stretch_goes_where_the_device_frames_put_it_unless_the_device_lost_time() {
        let epoch = Instant::now();
        let reference = RenderReference::with_epoch(epoch);
        let mut timeline = ReferenceTimeline::new(reference.clone());
        let pulled = |ms: u64, frame: u64| pulled(epoch, ms * 1_000, frame, 0);
        // An answer pulled as device frame 48 000, stamped at 1 s (16 000 at 16 kHz).
        reference.push_pulled(&[0.5; 480], 48_000, pulled(1_000, 48_000));
        timeline.update();
        assert_eq!(first_sound(&mut timeline, 15_000), Some(16_000));
        // The next answer, 2 s of device frames later; the clock's origin crept 2 ms earlier: the
        // frames place it, 2 s after the first.
        reference.push_pulled(&[0.5; 480], 48_000, pulled(2_998, 144_000));
        timeline.update();
        assert_eq!(first_sound(&mut timeline, 47_000), Some(48_000));
        // 50 ms more than its frames say: the device lost time, the stamp places it and anchors.
        reference.push_pulled(&[0.5; 480], 48_000, pulled(5_050, 240_000));
        timeline.update();
        assert_eq!(first_sound(&mut timeline, 79_000), Some(80_800));
        reference.push_pulled(&[0.5; 480], 48_000, pulled(6_049, 288_000));
        timeline.update();
        assert_eq!(first_sound(&mut timeline, 95_000), Some(96_800));
    }

    #[test]
    fn stretches_count_from_the_anchor_through_the_origin_s_creep_but_not_across_a_reopened_device()
    {
        let epoch = Instant::now();
        let reference = RenderReference::with_epoch(epoch);
        let mut timeline = ReferenceTimeline::new(reference.clone());
        let pulled = |us: u64, frame: u64, stream: u64| pulled(epoch, us, frame, stream);
        reference.push_pulled(&[0.5; 480], 48_000, pulled(1_000_000, 48_000, 0));
        timeline.update();
        // Thirty answers 48 001 frames apart (16 000⅓ samples at 16 kHz): counted from the anchor they
        // land exactly; counted from each other the thirds would be rounded away, 10 samples short.
        for k in 1..=30u64 {
            let frame = 48_000 + k * 48_001;
            reference.push_pulled(&[0.5; 480], 48_000, pulled(frame * 1_000 / 48, frame, 0));
            timeline.update();
        }
        let last = 16_000 + (30 * 48_001) / 3;
        assert_eq!(first_sound(&mut timeline, last - 1_000), Some(last));
        // The clock's origin crept 100 ms earlier: the frames still place the next answer.
        let frame = 48_000 + 31 * 48_001;
        let counted = 16_000 + ((31.0 * 48_001.0) / 3.0_f64).round() as i64;
        reference.push_pulled(
            &[0.5; 480],
            48_000,
            pulled(frame * 1_000 / 48 - 100_000, frame, 0),
        );
        timeline.update();
        assert_eq!(first_sound(&mut timeline, counted - 2_000), Some(counted));
        // The device reopened and counts from 0 again, to a frame that counted on from the old anchor
        // would put it 1 000 samples later than its stamp, which passes for creep: the stamp places it.
        let at_us = frame * 1_000 / 48 + 2_000_000;
        let stamped = (at_us * 16 / 1_000) as i64;
        let reopened_frame = 48_000 + 3 * (stamped + 1_000 - 16_000) as u64;
        reference.push_pulled(&[0.5; 480], 48_000, pulled(at_us, reopened_frame, 1));
        timeline.update();
        assert_eq!(first_sound(&mut timeline, stamped - 2_000), Some(stamped));
    }

    #[test]
    fn jittery_stamps_within_the_tolerance_continue_the_stretch() {
        let reference = RenderReference::new();
        let mut timeline = ReferenceTimeline::new(reference.clone());
        let signal = ramp(1_600);
        // Stamps off by up to ±10 ms (160 samples), as audio callbacks are.
        for (k, block) in signal.chunks(320).enumerate() {
            let jitter = [0, 150, -120, 90, -160][k];
            reference.push_at(block, SAMPLE_RATE, (k * 320) as i64 + jitter);
        }
        timeline.update();
        let mut out = vec![0.0; 1_600];
        timeline.read(0, &mut out);
        assert_eq!(out, signal, "no gaps, no overlaps");
    }

    #[test]
    fn a_long_stretch_of_fractional_blocks_keeps_its_length() {
        let reference = RenderReference::new();
        let mut timeline = ReferenceTimeline::new(reference.clone());
        // 40 s of 256-sample blocks at 48 kHz (85⅓ samples each at 16 kHz), stamped where they are
        // heard. Rounded block by block the stretch's end ran 2 500 samples short, past the
        // tolerance: the answer broke into new stretches.
        let blocks = 7_500;
        for k in 0..blocks {
            reference.push_at(&[0.25; 256], 48_000, k * 256 / 3);
            timeline.update();
        }
        assert_eq!(timeline.last_pulled(), Some(blocks * 256 / 3));
    }

    #[test]
    fn another_rate_is_resampled_onto_the_clock() {
        let reference = RenderReference::new();
        let mut timeline = ReferenceTimeline::new(reference.clone());
        let tone: Vec<f32> = (0..22_050)
            .map(|i| (2.0 * std::f32::consts::PI * 440.0 * i as f32 / 22_050.0).sin() * 0.5)
            .collect();
        for (k, block) in tone.chunks(441).enumerate() {
            reference.push_at(block, 22_050, (k * 320) as i64);
        }
        timeline.update();
        let mut out = vec![0.0; 16_000];
        timeline.read(0, &mut out);
        // One second of a 440 Hz tone at 16 kHz: ~880 zero crossings, and the held-back tail flushed.
        let crossings = out
            .windows(2)
            .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
            .count();
        assert!((crossings as i64 - 880).abs() < 10, "{crossings} crossings");
        assert!(
            out[15_500..15_900].iter().any(|s| s.abs() > 0.3),
            "tail present"
        );
    }

    #[test]
    fn a_silent_capture_side_does_not_grow_memory() {
        let reference = RenderReference::new();
        for k in 0..(MAX_QUEUED_BLOCKS + 10) {
            reference.push_at(&[0.1; 16], SAMPLE_RATE, (k * 16) as i64);
        }
        assert_eq!(reference.dropped_blocks(), 10);
    }
}
