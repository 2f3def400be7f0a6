//! What the speakers play, as the echo canceller's reference: a handle the playback side feeds block by
//! block with the time each block will be heard, and the timeline the capture side reads it back from,
//! aligned sample by sample with the microphone.
//!
//! Both sides count time in 16 kHz samples since the handle was made (its epoch), so a capture frame
//! recorded at instant `t` meets exactly the reference that was playing at `t`. A block pulled by the
//! device right after the previous one (by the device's frame count) is taken as its continuation (no
//! clicks, no gaps); any other starts a new stretch (a pause in playback, however short: the next
//! sentence came late; or a reopened device). Blocks with no device frame (files, tests) go by their
//! stamps, which jitter (audio-callback timestamps through PulseAudio's ALSA plugin by 60-80 ms: the
//! device pulls in bursts): within [`CONTIGUOUS_TOLERANCE`] of where the previous one ended they
//! continue it. Where nothing was played the reference is silence.
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

/// Blocks with no device frame whose stamp is this close to the end of the previous one continue it:
/// more than the bursts' jitter (re-anchoring on jitter shifts the reference against the echo, and the
/// canceller loses its adapted filter each time). The capture side's stamps go by it too.
pub const CONTIGUOUS_TOLERANCE: Duration = Duration::from_millis(100);
/// A new stretch goes where the device frames since the anchor put it, unless its stamp is this much
/// later (the device stalled or lost time: its frames no longer count time; the clock's origin moves
/// later only then)...
const LOST_TIME: Duration = Duration::from_millis(20);
/// ...or this much earlier. The origin's estimate creeps earlier by itself (≈ +90 ppm on the null-sink
/// loop, 20 ms in under four minutes), which the echo does not, so this side is wide: only a count gone
/// wrong gets here.
const ORIGIN_CREEP_LIMIT: Duration = Duration::from_millis(250);
/// A block whose first device frame is within this many frames of where the stretch's last block ended,
/// plus as many per clip sample a device frame stands for ([`Stretch::continued_by`]), continues it. On
/// a device at the clips' rate (48 kHz) blocks of one clip, and clips queued back to back, follow each
/// other exactly; at another rate rodio's linear converter, which starts over at every span (a clip's
/// start, after its first 512 samples, then every 32 768), reads a sample or two ahead there, and the
/// fractional frames per block round either way: under 2 frames at 44.1 kHz, 2 at 96 kHz, 4 at 192 kHz.
/// A real pause that short would be misplaced by about a sample at 16 kHz at most.
const DEVICE_SLACK_FRAMES: f64 = 2.0;
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
    /// The device frame just past the last block (`None`: blocks placed by their stamps alone).
    device_end: Option<(DeviceFrame, f64)>,
}

impl Stretch {
    /// Whether `block` goes on where this stretch ends. By the device's frame count when both have one:
    /// a gap the device filled with silence between two clips (the next sentence synthesized late)
    /// shows there, however short, while the stamps jitter, and a block taken for a continuation is
    /// written right after the last one: a 30 ms gap would put the rest of the answer's reference 30 ms
    /// early against its echo. A block from another opening of the device never continues it. Else
    /// (files, tests) by the stamp, within the jitter's [`CONTIGUOUS_TOLERANCE`].
    fn continued_by(&self, block: &Block) -> bool {
        if self.rate != block.sample_rate {
            return false;
        }
        match (self.device_end, block.device) {
            (Some((end, end_frame)), Some(device)) => {
                let frames_per_sample = f64::from(device.rate) / f64::from(block.sample_rate);
                end.stream == device.stream
                    && end.rate == device.rate
                    && (device.frame as f64 - end_frame).abs()
                        <= DEVICE_SLACK_FRAMES * (1.0 + frames_per_sample)
            }
            _ => self.stamp_continues(block),
        }
    }

    /// Whether `block`'s stamp is within the jitter's [`CONTIGUOUS_TOLERANCE`] of the stretch's end.
    fn stamp_continues(&self, block: &Block) -> bool {
        (block.at - self.input_end).unsigned_abs() <= samples_for(CONTIGUOUS_TOLERANCE)
    }

    /// The pause the device played before `block` in ms, when its stamp alone would have continued the
    /// stretch (logged: how often the next sentence comes late; rodio's queue pads with silences of 512
    /// samples, ≈ 10.7 ms at 48 kHz, so it comes in steps of those).
    fn short_pause_ms(&self, block: &Block) -> Option<f64> {
        let (end, end_frame) = self.device_end?;
        let device = block.device?;
        (self.stamp_continues(block)
            && self.rate == block.sample_rate
            && device.stream == end.stream
            && device.rate == end.rate)
            .then(|| (device.frame as f64 - end_frame) * 1_000.0 / f64::from(device.rate))
    }
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
        let continues = self
            .stretch
            .as_ref()
            .is_some_and(|s| s.continued_by(&block));
        if !continues {
            if let Some(pause_ms) = self.stretch.as_ref().and_then(|s| s.short_pause_ms(&block)) {
                tracing::debug!(
                    pause_ms,
                    "echo reference: a short pause in playback starts a new stretch"
                );
            }
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
                device_end: None,
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
        stretch.device_end = block.device.map(|device| {
            let frames =
                block.samples.len() as f64 * f64::from(device.rate) / f64::from(block.sample_rate);
            (device, device.frame as f64 + frames)
        });
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
#[path = "reference_tests.rs"]
mod tests;
