//! When the user's voice should hold the character's answer: pure logic over per-frame speech
//! probabilities (the VAD's, after echo cancellation) and how much of each frame the echo canceller let
//! through. A click or a breath is too short to count; speech is a run long enough within a fraction of
//! a second; the character's own voice, however speech-like its residue after the canceller, is the part
//! the canceller removed nearly all of. The gate only holds the answer: the words of the utterance
//! decide whether it stops (tomo-core's `session::verdict`), so a cough or an "mm-hm" that passes the
//! gate costs a short gap, and the gate can decide early.

use std::time::Duration;

use crate::segmenter::FRAME_DURATION;

#[derive(Debug, Clone, PartialEq)]
pub struct BargeInConfig {
    /// A frame counts as speech at or above this probability.
    pub threshold: f32,
    /// Speech (frames at or above the threshold) needed before the answer is held.
    pub min_speech: Duration,
    /// A gap of at most this much inside the speech does not restart the count; a longer one does.
    /// Short: "mm-hm" is two short hums with a gap between them.
    pub max_gap: Duration,
    /// A frame counts as speech only when the echo canceller let at least this much of the microphone's
    /// energy through (dB). What is left of the character's voice comes out 30 dB and more under what the
    /// microphone heard; the user's voice over it much less. On the echo fixtures (simulated rooms, 20
    /// answers each) this removed the one false barge-in per room and delayed no phrase's detection
    /// but one (by a frame).
    pub min_echo_kept_db: f32,
}

impl Default for BargeInConfig {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            // Shorter decides sooner, and the words still decide what a hold becomes, but every hold
            // is a gap in the answer: at 160 ms the far room's echo alone was held once in 20 answers
            // (tests/echo.rs), at 128 ms both rooms' were; 128 ms held the near room's phrases 64 ms
            // sooner (tomo-runtime tests/talk_over_echo.rs).
            min_speech: Duration::from_millis(190),
            max_gap: Duration::from_millis(32),
            min_echo_kept_db: -30.0,
        }
    }
}

/// The user started talking over the character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BargeIn {
    /// Start of the first speech frame of the run (stream time).
    pub onset: Duration,
    /// End of the frame that decided it (stream time).
    pub decided_at: Duration,
}

/// Counts speech frames, one [`BargeInGate::push`] per 32 ms VAD frame.
#[derive(Debug, Clone)]
pub struct BargeInGate {
    threshold: f32,
    min_echo_kept_db: f32,
    min_frames: u64,
    max_gap_frames: u64,
    frame: u64,
    run_start: Option<u64>,
    speech_frames: u64,
    gap: u64,
    fired: bool,
}

fn frames(duration: Duration) -> u64 {
    duration.as_micros().div_ceil(FRAME_DURATION.as_micros()) as u64
}

fn at(frame: u64) -> Duration {
    FRAME_DURATION * frame as u32
}

impl BargeInGate {
    pub fn new(config: &BargeInConfig) -> Self {
        Self {
            threshold: config.threshold,
            min_echo_kept_db: config.min_echo_kept_db,
            min_frames: frames(config.min_speech).max(1),
            max_gap_frames: frames(config.max_gap),
            frame: 0,
            run_start: None,
            speech_frames: 0,
            gap: 0,
            fired: false,
        }
    }

    /// The speech probability of the next frame and how much of it the echo canceller let through
    /// (dB, 0 when it was not cancelling). Returns the barge-in once, the moment enough speech has been
    /// heard; the same run of speech does not fire again.
    pub fn push(&mut self, probability: f32, echo_kept_db: f32) -> Option<BargeIn> {
        let index = self.frame;
        self.frame += 1;
        if probability >= self.threshold && echo_kept_db >= self.min_echo_kept_db {
            self.run_start.get_or_insert(index);
            self.speech_frames += 1;
            self.gap = 0;
        } else if self.run_start.is_some() {
            self.gap += 1;
            if self.gap > self.max_gap_frames {
                self.end_run();
            }
            return None;
        }
        if self.fired || self.speech_frames < self.min_frames {
            return None;
        }
        self.fired = true;
        Some(BargeIn {
            onset: at(self.run_start.unwrap_or(index)),
            decided_at: at(index + 1),
        })
    }

    /// Starts over (the character started a new answer, or stopped).
    pub fn reset(&mut self) {
        self.end_run();
    }

    fn end_run(&mut self) {
        self.run_start = None;
        self.speech_frames = 0;
        self.gap = 0;
        self.fired = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(gate: &mut BargeInGate, probabilities: &[f32]) -> Vec<BargeIn> {
        probabilities
            .iter()
            .filter_map(|&p| gate.push(p, 0.0))
            .collect()
    }

    #[test]
    fn speech_the_canceller_removed_nearly_all_of_is_the_echo() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        // Eight speech-like frames of which the canceller kept only -35 dB: the character's residue.
        let fired: Vec<_> = (0..8).filter_map(|_| gate.push(0.95, -35.0)).collect();
        assert!(fired.is_empty());
        // The same frames with the user's voice in them (-8 dB kept) interrupt.
        let fired: Vec<_> = (0..8).filter_map(|_| gate.push(0.95, -8.0)).collect();
        assert_eq!(fired.len(), 1);
    }

    #[test]
    fn a_click_and_a_short_burst_do_not_interrupt() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        // A 1-frame click, then a 4-frame (128 ms) burst.
        let fired = feed(
            &mut gate,
            &[0.1, 0.9, 0.1, 0.1, 0.8, 0.9, 0.9, 0.7, 0.1, 0.1],
        );
        assert!(fired.is_empty());
    }

    #[test]
    fn two_short_hums_apart_do_not_add_up() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        let fired = feed(
            &mut gate,
            &[0.9, 0.9, 0.9, 0.1, 0.1, 0.9, 0.9, 0.9, 0.1, 0.1],
        );
        assert!(fired.is_empty());
    }

    #[test]
    fn words_interrupt_once_with_their_onset() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        let mut script = vec![0.1; 3];
        script.extend([0.9, 0.9, 0.9, 0.2, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]);
        let fired = feed(&mut gate, &script);
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert_eq!(fired[0].onset, FRAME_DURATION * 3);
        // Six speech frames (one gap frame tolerated): decided at the end of frame 9.
        assert_eq!(fired[0].decided_at, FRAME_DURATION * 10);
        // Silence ends the run; new words fire again.
        feed(&mut gate, &[0.1, 0.1, 0.1]);
        assert_eq!(feed(&mut gate, &[0.9; 6]).len(), 1);
    }
}
