//! The capture-side echo canceller: WebRTC's AEC3 (the `sonora-aec3` port) cleaning microphone frames
//! with what the speakers played at the same moment as its reference.
//!
//! AEC3's block processor is driven directly (at 16 kHz there is a single band, so none of the band
//! splitting of the full audio-processing module is needed): that gives access to its configuration and
//! to both of its outputs, the linear filter's (the echo subtracted, the user's voice untouched) and the
//! suppressor's (residual echo masked too, at the price of attenuating the user's first syllables while
//! both talk at once). With no echo at the microphone at all (headphones: [`super::path`]) the linear
//! output goes on instead, and the warm-up's silence is skipped.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use sonora_aec3::block::Block;
use sonora_aec3::block_processor::BlockProcessor;
use sonora_aec3::config::EchoCanceller3Config;

use super::path::{EchoPath, EchoPathDetector};
use super::reference::{CONTIGUOUS_TOLERANCE, ReferenceTimeline, RenderReference};
use super::resume::{IdleHistory, ResumedLog};
use crate::SAMPLE_RATE;

/// AEC3 works on blocks of 64 samples (4 ms at 16 kHz).
pub const CHUNK: usize = 64;
/// AEC3's levels (noise floors, render activity) are tuned for 16-bit sample values.
const SCALE: f32 = 32_768.0;
/// A reference sample above this (-60 dBFS) is the character making a sound.
const SOUNDING: f32 = 0.001;

/// Energy of one block of [`CHUNK`] samples as it came from the microphone and as it left the
/// canceller: how much of the microphone it let through. The residual of the character's own voice
/// comes out far below what the microphone heard; the user's voice over it much less so.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BlockLevel {
    pub input: f32,
    pub output: f32,
    /// What the canceller assumed about the echo as it cleaned the block.
    pub path: EchoPath,
}

impl BlockLevel {
    /// A block that went through as it was.
    pub fn untouched(samples: &[f32]) -> Self {
        let input = energy(samples);
        Self {
            input,
            output: input,
            path: EchoPath::default(),
        }
    }

    /// What a group of blocks let through, in dB (0: untouched; also for digital silence).
    pub fn kept_db(levels: &[BlockLevel]) -> f32 {
        const FLOOR: f32 = 1e-10;
        let (input, output) = levels
            .iter()
            .fold((0.0, 0.0), |(i, o), l| (i + l.input, o + l.output));
        10.0 * ((output + FLOOR) / (input + FLOOR)).log10()
    }
}

/// Whether the character makes a sound in `samples` of the reference.
fn sounding(samples: &[f32]) -> bool {
    samples.iter().any(|s| s.abs() > SOUNDING)
}

fn energy(samples: &[f32]) -> f32 {
    samples.iter().map(|s| s * s).sum()
}

/// What the canceller did to one frame of blocks, as the barge-in gate weighs it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameEcho {
    /// How much of the microphone's energy it let through (dB; 0 when untouched).
    pub kept_db: f32,
    /// [`EchoPath::Absent`] when it judged, for every block, that the microphone hears no echo.
    pub path: EchoPath,
}

impl FrameEcho {
    pub fn of(levels: &[BlockLevel]) -> Self {
        let absent =
            !levels.is_empty() && levels.iter().all(|level| level.path == EchoPath::Absent);
        Self {
            kept_db: BlockLevel::kept_db(levels),
            path: if absent {
                EchoPath::Absent
            } else {
                EchoPath::Heard
            },
        }
    }
}

/// Which of AEC3's outputs leaves the canceller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EchoOutput {
    /// The linear echo filter's output: the echo subtracted, the user's voice as it was (a little residual
    /// echo remains, well under what the VAD takes for speech).
    Linear,
    /// After the non-linear suppressor: less residual echo, but the user's voice is attenuated while the
    /// character talks too.
    #[default]
    Suppressed,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EchoConfig {
    /// The reference is handed to AEC3 this much ahead of the capture it is matched with: the capture
    /// stamped t is cancelled against what was pulled for the speakers at t + lead. AEC3 only looks for
    /// echoes *after* their reference, and capture stamps run late (through PulseAudio the echo came up
    /// to 45 ms before the moment its reference was pulled): erring early is safe, its delay estimator
    /// finds the rest (up to about half a second). While the character speaks, a capture block waits
    /// until its reference has been pulled (at most this long): that is the listening delay it costs.
    pub reference_lead: Duration,
    /// With nothing played for this long (echo tail included), frames pass through untouched and
    /// AEC3 rests: idle listening costs nothing extra. Its adapted filter is kept for the next answer.
    pub idle_after: Duration,
    /// Until AEC3 has heard this much of the character (blocks whose reference is not silent), what
    /// comes out is silence: a fresh AEC3 lets the first echo through untouched. Through the null-sink
    /// loop the session's first answer came out of it at −18 to −15 dBFS for its first ≈ 100 ms (then
    /// under −55 dBFS), the VAD called that speech and held on to it, and the character stopped itself.
    /// The cost: words spoken over the first half second the character ever says are not heard.
    pub warm_up: Duration,
    pub output: EchoOutput,
}

impl Default for EchoConfig {
    fn default() -> Self {
        Self {
            reference_lead: Duration::from_millis(20),
            idle_after: Duration::from_millis(1_500),
            warm_up: Duration::from_millis(500),
            output: EchoOutput::default(),
        }
    }
}

/// The linear filter's length in 4 ms blocks: 128 ms of the room's echo after the delay AEC3 finds. Its
/// default, 13 (52 ms; 12 while it first converges), fits a phone held to the ear; a room's reverberation
/// outlasts it, the rest is left to the suppressor, and while the character speaks the suppressor takes
/// the user's first words down with the echo (above ≈ 1 kHz for the first 100-150 ms). With 32 blocks
/// (the first convergence still runs at AEC3's 12-13), words said over an answer (`examples/
/// talk_over_timing` in tomo-runtime: six phrases over 20 answers six times per room) were held within
/// 300 ms of their onset 108 of 120 times in the near room (105 at 13 blocks) and 108 in the far room
/// (86), p90 274 / 290 ms (352 / 455); the echo alone held none of 3 × 20 answers. Long from the first
/// convergence too: 110 / 111, but the device loop held 5 of 20 answers for their own echo (1 this way,
/// 0 at 13 blocks). 24 blocks: 107 / 101; 64: 109 / 109; 96 from the start held the echo alone. In the
/// near room three phrases of the 120 were held only before their onset: the previous phrase was still
/// being said as their answer began (the words alone do the same). The longer filter
/// costs ≈ 0.07 % of a core while the character speaks, nothing while it is quiet (AEC3 rests).
const FILTER_BLOCKS: usize = 32;

/// Blocks (4 ms, net: a block that fails the condition takes one back) in which the user's voice must
/// dominate the residual echo before AEC3's suppressor switches to its near-end state (AEC3's default:
/// 12, 48 ms): its near-end tuning ([`NEAREND_HF_MASK`]), and no cap on the gains above 2 kHz. Until it
/// switches, words said over an answer lose their first syllables with the echo. At 2 (with the mask)
/// words over an answer (`examples/talk_over_timing` in tomo-runtime) were held within 300 ms of their
/// onset 114 / 109 of 120 times in the near / far room (109 / 103 at 12; later than 300 ms: 1 / 3, was
/// 6 / 9), the echo alone held none of 3 × 20 answers, and on the device loop (3 runs of 20) the echo
/// came through at -67 to -74 dB (median over 2 s windows; -74 at 12 in the same sitting) with no answer
/// held. The per-block condition: AEC3's residual-echo estimate over 125 Hz-1.9 kHz (the linear filter's
/// echo estimate over its ERLE estimate, not bounded by [`ERLE_CAPS`]) under [`NEAREND_ENR`] of what the
/// linear filter leaves (the microphone's until the filter is usable), and that 30 times the noise
/// floor. An earlier try, 4 blocks with ENR 0.1, changed nothing measurable.
const NEAREND_TRIGGER_BLOCKS: i32 = 2;

/// The residual-echo estimate over 125 Hz-1.9 kHz, as a share of what the linear filter leaves, under
/// which a block counts towards the near-end state ([`NEAREND_TRIGGER_BLOCKS`]; AEC3's default 0.25): at
/// 0.5 the user's voice need only be twice the residual echo, so the suppressor lets go of it sooner in
/// double talk. Chosen together with [`ERLE_CAPS`] (the figures there). Alone, 0.5 changed nothing
/// measurable on the device loop (10 turns talked over), and 1.0 let its echo through at -57.5 dB
/// (median, -63 to -66 at 0.25).
const NEAREND_ENR: f32 = 0.5;

/// How much AEC3 may believe its linear filter removed (ERLE, linear power ratio) below / above 4 kHz
/// (AEC3's defaults 4 / 1.5). The suppressor's gains are computed against the filter's echo estimate
/// divided by the ERLE estimate, bounded by this (the near-end detector reads the unbounded one): with
/// the defaults, every band under 4 kHz is suppressed as if at least a quarter of the echo were left,
/// and where the user is as loud as the character (the device loop) the suppressor took the first
/// 200-400 ms of their words down 30-59 dB. With 8 under 4 kHz and [`NEAREND_ENR`] 0.5, words over the
/// loopback's echo (`examples/talk_over_timing`) were held within 300 ms of their onset 107 / 101 of 120
/// times (p90 266 / 352 ms; defaults 106 / 97, p90 298 / 378), and at the device (`tomo bench voice
/// --device --talk-over`, two runs of 20) 14 and 12 interruptions silenced the answer within 300 ms (15
/// of 30 in the defaults' runs); the echo alone held no answer offline (3 x 20) nor on the device loop
/// (2 x 20). Above 4 kHz the cap stays at AEC3's 1.5 (8 / 4: 109 / 103 offline, the device alike), only
/// because `tests/echo.rs`'s gate then fired on the far room's reverberation 0.37 s after its 8th
/// answer ended, as it does at 7 and 9-16 below 4 kHz: there the canceller keeps everything and Silero
/// reads 0.46-0.57 around the gate's 0.5 (0.43-0.55 at AEC3's defaults), so that test sits on a knife
/// edge at every setting and does not tell them apart. On the listener's own path (`talk_over_timing`)
/// 12 / 1.5 held the near room's echo in 1 of 20 answers and 16 / 8 the rooms' in 2 of 40.
const ERLE_CAPS: (f32, f32) = (8.0, 1.5);

/// The near-end tuning's mask from 1 kHz up (blended in from 625 Hz), as (transparent under, suppressing
/// fully from) the ratio of residual echo to what the linear filter leaves; AEC3's default (0.1, 0.3).
/// While the user's voice dominates, its consonants are what the VAD hears first.
const NEAREND_HF_MASK: (f32, f32) = (0.3, 0.5);

/// AEC3's defaults, with the linear output exported, a longer linear filter ([`FILTER_BLOCKS`]), more
/// trust in it ([`ERLE_CAPS`]) and a quicker, more transparent switch to the suppressor's near-end state
/// ([`NEAREND_TRIGGER_BLOCKS`], [`NEAREND_ENR`], [`NEAREND_HF_MASK`]).
fn aec3_config() -> EchoCanceller3Config {
    let mut config = EchoCanceller3Config::default();
    config.filter.export_linear_aec_output = true;
    let filter = &mut config.filter;
    filter.refined.length_blocks = FILTER_BLOCKS;
    filter.coarse.length_blocks = FILTER_BLOCKS;
    (config.erle.max_l, config.erle.max_h) = ERLE_CAPS;
    let suppressor = &mut config.suppressor;
    let nearend = &mut suppressor.dominant_nearend_detection;
    nearend.trigger_threshold = NEAREND_TRIGGER_BLOCKS;
    nearend.enr_threshold = NEAREND_ENR;
    let mask_hf = &mut suppressor.nearend_tuning.mask_hf;
    (mask_hf.enr_transparent, mask_hf.enr_suppress) = NEAREND_HF_MASK;
    config.validate();
    config
}

/// Cleans 16 kHz microphone audio of what the speakers play, in blocks of [`CHUNK`] samples: what comes
/// out is what went in, in order, minus the echo; while the character speaks a block is held until its
/// reference is known (see [`EchoConfig::reference_lead`]).
pub struct EchoCanceller {
    aec: BlockProcessor,
    output_kind: EchoOutput,
    render_block: Block,
    capture_block: Block,
    linear_block: Block,
    timeline: ReferenceTimeline,
    lead: i64,
    idle_after: i64,
    /// Capture samples not yet processed, the first at sample index `pending_index`.
    pending: Vec<f32>,
    pending_index: Option<i64>,
    output: VecDeque<f32>,
    /// One per block of `output` (and of what was returned since [`EchoCanceller::take_levels`]).
    levels: Vec<BlockLevel>,
    /// The linear filter's output of the blocks returned since [`EchoCanceller::take_voice`].
    voice: Vec<f32>,
    reference_chunk: Vec<f32>,
    /// Chunks that went through AEC3 and out (not passed through idle; not the idle ones handed to it
    /// late by [`EchoCanceller::feed_skipped_start`]).
    cancelled_chunks: u64,
    /// The cancelled chunks' energies since the last log, summed.
    recent: BlockLevel,
    /// Samples of sounding reference AEC3 must still hear before its output is let through (counted on
    /// the blocks that go out: what [`EchoCanceller::feed_skipped_start`] hands it late is not).
    warm_up_left: i64,
    /// Whether the microphone hears the speakers (headphones): decides between the suppressed output
    /// and the linear one.
    echo_path: EchoPathDetector,
    /// The last chunk passed through idle (nothing played for `idle_after`).
    was_idle: bool,
    /// What the canceller let through over the first half second after it resumed (logged).
    resumed: Option<ResumedLog>,
    /// The last blocks passed through idle, to hand AEC3 the start of an answer they skipped.
    idle_history: IdleHistory,
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
        let aec3 = aec3_config();
        let aec = BlockProcessor::new(&aec3, SAMPLE_RATE as usize, 1, 1);
        Self {
            aec,
            output_kind: config.output,
            render_block: Block::new(1, 1),
            capture_block: Block::new(1, 1),
            linear_block: Block::new(1, 1),
            timeline: ReferenceTimeline::new(reference),
            lead: samples(config.reference_lead),
            idle_after: samples(config.idle_after),
            pending: Vec::with_capacity(CHUNK * 4),
            pending_index: None,
            output: VecDeque::with_capacity(CHUNK * 16),
            levels: Vec::with_capacity(16),
            voice: Vec::with_capacity(CHUNK * 16),
            reference_chunk: vec![0.0; CHUNK],
            cancelled_chunks: 0,
            recent: BlockLevel::default(),
            warm_up_left: samples(config.warm_up),
            echo_path: EchoPathDetector::default(),
            was_idle: true,
            resumed: None,
            idle_history: IdleHistory::default(),
        }
    }

    /// The handle the playback side feeds.
    pub fn reference(&self) -> &RenderReference {
        self.timeline.reference()
    }

    /// Blocks (4 ms) that went through AEC3 so far.
    pub fn cancelled_chunks(&self) -> u64 {
        self.cancelled_chunks
    }

    /// AEC3's echo return loss (enhancement) in dB and the delay it found, in ms.
    pub fn metrics(&self) -> (f64, f64, i32) {
        let m = self.aec.get_metrics();
        (
            m.echo_return_loss,
            m.echo_return_loss_enhancement,
            m.delay_ms,
        )
    }

    /// Moves the level of every block returned by `process`/`process_at` since the last call, in order,
    /// to the end of `into`.
    pub fn take_levels(&mut self, into: &mut Vec<BlockLevel>) {
        into.append(&mut self.levels);
    }

    /// Moves the voice of every block returned by `process`/`process_at` since the last call to the end
    /// of `into`: the linear filter's output (the echo subtracted, the user's voice as the microphone had
    /// it), whatever [`EchoOutput`] the returned samples are. Detection wants the suppressed output,
    /// which holds the least of the character; recognition wants the user's words whole, which the
    /// suppressor attenuates while both talk (on the echo fixtures whisper misheard the first words of 4
    /// of 6 phrases spoken over an answer in the suppressed output, of 1 in the linear one).
    pub fn take_voice(&mut self, into: &mut Vec<f32>) {
        into.append(&mut self.voice);
    }

    /// Cleans `frame`, whose first sample was recorded at `recorded_at` (live: blocks whose reference is
    /// still to be pulled wait for it). Returns the cleaned samples ready so far.
    pub fn process(&mut self, frame: &[f32], recorded_at: Instant) -> Vec<f32> {
        let reference = self.timeline.reference();
        let index = reference.index_of(recorded_at);
        let now = reference.index_of(Instant::now());
        self.push(frame, index);
        self.run(Some(now))
    }

    /// Cleans `frame`, whose first sample was recorded at 16 kHz sample index `first_index` of the
    /// reference's clock, with the reference as it stands (offline: the caller has fed it). Returns the
    /// cleaned samples, as many as it was given when frames are whole blocks.
    pub fn process_at(&mut self, frame: &[f32], first_index: i64) -> Vec<f32> {
        self.push(frame, first_index);
        self.run(None)
    }

    fn push(&mut self, frame: &[f32], first_index: i64) {
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
    }

    /// Processes the pending blocks that are ready, in order; `now` (the reference clock's present) is
    /// `None` offline, where every block is.
    fn run(&mut self, now: Option<i64>) -> Vec<f32> {
        self.timeline.update();
        let Some(first) = self.pending_index else {
            return Vec::new();
        };
        let whole = self.pending.len() / CHUNK * CHUNK;
        let mut done = 0;
        while done < whole {
            let index = first + done as i64;
            if !self.ready(index, now) {
                break;
            }
            self.process_chunk(done, index);
            done += CHUNK;
        }
        self.pending.drain(..done);
        self.pending_index = Some(first + done as i64);
        self.output.drain(..).collect()
    }

    /// Whether the block at `index` can be cleaned now: nothing plays near it, or its reference is on
    /// the timeline, or playback paused or ended (nothing was pulled for longer than the device's
    /// bursts are apart).
    fn ready(&self, index: i64, now: Option<i64>) -> bool {
        let Some(now) = now else {
            return true;
        };
        let wanted = index + self.lead + CHUNK as i64;
        self.is_idle(index)
            || self.timeline.last_played().is_some_and(|end| end >= wanted)
            || self
                .timeline
                .last_pulled()
                .is_none_or(|end| now >= end + samples(CONTIGUOUS_TOLERANCE))
    }

    fn is_idle(&self, index: i64) -> bool {
        self.timeline
            .last_played()
            .is_none_or(|end| index - end > self.idle_after)
    }

    /// Hands AEC3 the block of capture at `index` with the reference at `index + lead`; its outputs are
    /// left in `capture_block` (suppressed) and `linear_block`.
    fn cancel_block(&mut self, capture: &[f32], index: i64) {
        self.timeline
            .read(index + self.lead, &mut self.reference_chunk);
        for (slot, &s) in self
            .render_block
            .view_mut(0, 0)
            .iter_mut()
            .zip(&self.reference_chunk)
        {
            *slot = s * SCALE;
        }
        for (slot, &s) in self.capture_block.view_mut(0, 0).iter_mut().zip(capture) {
            *slot = s * SCALE;
        }
        self.aec.buffer_render(&self.render_block);
        self.aec.process_capture(
            false,
            false,
            Some(&mut self.linear_block),
            &mut self.capture_block,
        );
    }

    /// The character starts again after a rest, at the capture block `index`: the blocks just before
    /// it went through idle, some of them while the reference of the answer's first samples was still
    /// on its way (it lands a few ms after it is pulled; an idle block does not wait for it), so AEC3
    /// never had that reference as its render. AEC3 is handed those blocks now, late, with the reference
    /// as it stands, from the first that meets a sound: what they came out as is already gone, but AEC3
    /// then has the whole answer as its render, and the echo of its first tens of ms, which reaches the
    /// microphone only after them, is cancelled. On the device loop (2026-12-07, a debug run of 12) the
    /// first 10-41 ms of an answer's reference (its leading silence included) were skipped so, and the
    /// echo's first 100 ms came through at -1 to -9 dB where more than 25 ms was (-34 to -50 dB where
    /// under 15 ms was); in five runs of 20 after, 4-44 ms of sounding reference was handed over late
    /// per answer.
    fn feed_skipped_start(&mut self, index: i64) {
        let Some((first, history)) = self.idle_history.take_before(index) else {
            return;
        };
        let mut fed = 0;
        for (k, block) in history.chunks_exact(CHUNK).enumerate() {
            let at = first + (k * CHUNK) as i64;
            if fed == 0 {
                self.timeline
                    .read(at + self.lead, &mut self.reference_chunk);
                if !sounding(&self.reference_chunk) {
                    continue;
                }
            }
            self.cancel_block(block, at);
            fed += 1;
        }
        if fed > 0 {
            tracing::debug!(
                fed_ms = fed * CHUNK * 1_000 / SAMPLE_RATE as usize,
                "echo canceller handed the answer's start it had passed through idle"
            );
        }
    }

    fn process_chunk(&mut self, offset: usize, index: i64) {
        let mut chunk = [0.0; CHUNK];
        chunk.copy_from_slice(&self.pending[offset..offset + CHUNK]);
        let idle = self.is_idle(index);
        if !idle && std::mem::take(&mut self.was_idle) {
            self.feed_skipped_start(index);
            self.resumed = Some(ResumedLog::default());
        }
        if idle {
            self.was_idle = true;
            self.idle_history.push(index, &chunk);
            self.output.extend(chunk);
            self.voice.extend_from_slice(&chunk);
            let level = BlockLevel {
                path: self.echo_path.path(),
                ..BlockLevel::untouched(&chunk)
            };
            self.echo_path.block(level.input, level.input, 0.0);
            self.levels.push(level);
            return;
        }
        let input = energy(&chunk);
        self.cancel_block(&chunk, index);
        let linear = energy(self.linear_block.view(0, 0)) / (SCALE * SCALE);
        self.echo_path
            .block(input, linear, energy(&self.reference_chunk));
        let path = self.echo_path.path();
        if self.warm_up_left > 0 && path == EchoPath::Heard {
            // The session's first answer: what the warm-up holds back is not what resuming leaks.
            self.resumed = None;
            if sounding(&self.reference_chunk) {
                self.warm_up_left -= CHUNK as i64;
            }
            self.output.extend([0.0; CHUNK]);
            self.voice.extend_from_slice(&[0.0; CHUNK]);
            self.levels.push(BlockLevel {
                input,
                output: 0.0,
                path,
            });
        } else {
            // With no echo at the microphone the suppressor has nothing to take but the user's voice.
            let output_kind = match path {
                EchoPath::Heard => self.output_kind,
                EchoPath::Absent => EchoOutput::Linear,
            };
            let cleaned = match output_kind {
                EchoOutput::Linear => self.linear_block.view(0, 0),
                EchoOutput::Suppressed => self.capture_block.view(0, 0),
            };
            self.output.extend(cleaned.iter().map(|&s| s / SCALE));
            self.voice
                .extend(self.linear_block.view(0, 0).iter().map(|&s| s / SCALE));
            let level = BlockLevel {
                input,
                output: energy(cleaned) / (SCALE * SCALE),
                path,
            };
            self.levels.push(level);
            self.recent.input += level.input;
            self.recent.output += level.output;
            if self.resumed.as_mut().is_some_and(|log| log.add(level)) {
                self.resumed = None;
            }
        }
        self.cancelled_chunks += 1;
        // Every 2 s of cancelling: how well it works (RUST_LOG=tomo_audio=debug). `kept_db` is what it
        // let through of the microphone over those 2 s: of the echo alone, on the device loop, -28 to -54
        // dB (median over a run) and -6 to -14 dB (p90); AEC3's `erle` estimate says less than that.
        if self.cancelled_chunks.is_multiple_of(500) {
            let (erl, erle, delay) = self.metrics();
            let kept_db = BlockLevel::kept_db(&[std::mem::take(&mut self.recent)]);
            tracing::debug!(erl, erle, delay_ms = delay, kept_db, "echo canceller");
        }
    }
}
