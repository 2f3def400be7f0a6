//! What the canceller keeps of the moment it resumes (a new answer after a rest): the blocks it passed
//! through idle just before, to hand AEC3 an answer's start it skipped, and what it let through over
//! the first half second (logged).

use std::collections::VecDeque;

use super::canceller::{BlockLevel, CHUNK};

/// Idle blocks kept: more than the reference of an answer's start can be late by (the tap's block and
/// resampler chunk, the device's burst, the capture frame: up to 44 ms on the device loop).
const KEPT_BLOCKS: usize = 40;

/// The last [`KEPT_BLOCKS`] capture blocks that went through idle, in order and contiguous.
#[derive(Debug, Default)]
pub(super) struct IdleHistory {
    samples: VecDeque<f32>,
    /// Index just past the last sample kept.
    end: i64,
}

impl IdleHistory {
    pub(super) fn push(&mut self, index: i64, block: &[f32]) {
        if index != self.end {
            self.samples.clear();
        }
        self.samples.extend(block);
        let over = self.samples.len().saturating_sub(KEPT_BLOCKS * CHUNK);
        self.samples.drain(..over);
        self.end = index + block.len() as i64;
    }

    /// The blocks kept, when they end right where the block at `index` begins: the index of their first
    /// sample and the samples. Empties the history either way.
    pub(super) fn take_before(&mut self, index: i64) -> Option<(i64, Vec<f32>)> {
        let samples: Vec<f32> = std::mem::take(&mut self.samples).into();
        (index == self.end && !samples.is_empty()).then(|| (index - samples.len() as i64, samples))
    }
}

/// The first [`ResumedLog::WINDOWS`] windows of 100 ms after AEC3 resumed (a new answer after a pause):
/// how much it let through of the microphone in each, logged at debug once they are full
/// (`RUST_LOG=tomo_audio::echo=debug`). On the device loop (2026-12-06, 19 answers) the first window
/// kept 0 to -29 dB of a microphone at -21 to -29 dBFS (half of them -7 dB or more), the third to
/// fifth -54 to -86 dB: the echo of an answer's first 100 ms leaked. The cause (2026-12-07): the
/// reference of the answer's first ms had not landed when the capture blocks that meet it went through
/// idle (see `EchoCanceller::feed_skipped_start`); since they are handed to AEC3 late, the first
/// window keeps -42 to -69 dB (93 of 95 answers).
#[derive(Debug, Default)]
pub(super) struct ResumedLog {
    chunks: usize,
    windows: [BlockLevel; ResumedLog::WINDOWS],
}

impl ResumedLog {
    const WINDOWS: usize = 5;
    /// 100 ms in chunks of 4 ms.
    const WINDOW_CHUNKS: usize = 25;

    /// Adds a cancelled chunk; true once the windows are full (and logged).
    pub(super) fn add(&mut self, level: BlockLevel) -> bool {
        let window = &mut self.windows[self.chunks / Self::WINDOW_CHUNKS];
        window.input += level.input;
        window.output += level.output;
        self.chunks += 1;
        if self.chunks < Self::WINDOWS * Self::WINDOW_CHUNKS {
            return false;
        }
        let kept_db = self.windows.map(|w| BlockLevel::kept_db(&[w]).round());
        let mic_dbfs = self.windows.map(|w| {
            let mean = w.input / (Self::WINDOW_CHUNKS * CHUNK) as f32;
            (10.0 * (mean + 1e-12).log10()).round()
        });
        tracing::debug!(
            ?kept_db,
            ?mic_dbfs,
            "echo canceller resumed: kept per 100 ms"
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(value: f32) -> [f32; CHUNK] {
        [value; CHUNK]
    }

    #[test]
    fn keeps_the_last_contiguous_blocks_before_the_resume() {
        let mut history = IdleHistory::default();
        for k in 0..(KEPT_BLOCKS + 5) {
            history.push((k * CHUNK) as i64, &block(k as f32));
        }
        let resume = ((KEPT_BLOCKS + 5) * CHUNK) as i64;
        let (first, samples) = history.take_before(resume).unwrap();
        assert_eq!(first, (5 * CHUNK) as i64);
        assert_eq!(samples.len(), KEPT_BLOCKS * CHUNK);
        assert_eq!(samples[0], 5.0);
        assert_eq!(samples[samples.len() - 1], (KEPT_BLOCKS + 4) as f32);
        assert!(history.take_before(resume).is_none(), "taken once");
    }

    #[test]
    fn a_jump_in_the_capture_starts_the_history_over_and_a_gap_before_the_resume_gives_nothing() {
        let mut history = IdleHistory::default();
        history.push(0, &block(1.0));
        history.push(10_000, &block(2.0));
        history.push(10_000 + CHUNK as i64, &block(3.0));
        let (first, samples) = history.take_before(10_000 + 2 * CHUNK as i64).unwrap();
        assert_eq!((first, samples.len()), (10_000, 2 * CHUNK));
        history.push(0, &block(1.0));
        assert!(history.take_before(5 * CHUNK as i64).is_none());
    }
}
