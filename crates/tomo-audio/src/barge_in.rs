//! When the user's voice should hold the character's answer: pure logic over per-frame speech
//! probabilities (the VAD's, after echo cancellation) and how much of each frame the echo canceller let
//! through. A click or a breath is too short to count; speech is a run long enough within a fraction of
//! a second, or a shorter run the VAD is sure of and the canceller let mostly through (the user's voice
//! clearly over the character's) while it is cancelling the answer; the character's own voice, however speech-like its residue after the
//! canceller, is the part the canceller removed nearly all of. The gate only holds the answer: the
//! words of the utterance decide whether it stops (tomo-core's `session::verdict`), so a cough or an
//! "mm-hm" that passes the gate costs a short gap, and the gate can decide early.

use std::time::Duration;

use crate::echo::{EchoPath, FrameEcho};
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
    /// A run of frames in a row this long that are each sure speech holds the answer before
    /// [`Self::min_speech`]. Longer than the segmenter's onset (64 ms): the listener announces a hold
    /// for an utterance the segmenter has opened.
    pub sure_speech: Duration,
    /// Sure speech: at or above this probability (never under [`Self::threshold`])...
    pub sure_threshold: f32,
    /// ...with at least this much let through by the canceller (never under
    /// [`Self::min_echo_kept_db`]).
    pub sure_echo_kept_db: f32,
    /// The sure run also needs the canceller to have shown, within [`Self::sure_cancelled_within`]
    /// before it, that it removes the character's voice (a frame with at most this much kept): at the
    /// start of an answer (or as it resumes after a hold) the canceller lets the first few hundred
    /// milliseconds of echo through at -7 to -14 dB, which the VAD calls sure speech (the device loop
    /// held 3 of 20 answers so), while words over an answer that is being cancelled follow frames it
    /// took down by 30 dB and more.
    pub sure_cancelled_db: f32,
    pub sure_cancelled_within: Duration,
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
            // Words said clearly over the answer hold it after 96 ms. On the echo fixtures'
            // placements (`examples/talk_over_timing` in tomo-runtime: six phrases over 20 answers six
            // times per room) this held 105 of 120 phrases within 300 ms of their onset in the near
            // room (89 with `min_speech` alone) and 86 in the far room (64), and none of the 3 × 20
            // answers of echo alone: there the surest three frames in a row that the canceller let
            // through at -20 dB or more reach 0.68, and at -30 dB 0.76 (0.8 and -30 dB held one).
            // 0.75 holds 2-4 more placements per scene within 300 ms than 0.85 did (108 / 110 in the
            // rooms, 109 / 109 with headphones: a soft first syllable rises through 0.7-0.8 a frame or
            // two before 0.85) and never the fixtures' echo alone. It waited for the device loop's echo
            // to be cancelled: while each answer's reference was placed by the clocks' estimate the
            // echo leaked at -7 to -12 dB kept and 0.75 held 1-3 answers per 20 for it (two holds at
            // 0.77 and 0.78); placed by the device's frame count, none in 3 × 20.
            sure_speech: Duration::from_millis(96),
            sure_threshold: 0.75,
            sure_echo_kept_db: -20.0,
            sure_cancelled_db: -25.0,
            sure_cancelled_within: Duration::from_millis(320),
        }
    }
}

/// Which of the gate's rules held the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldBy {
    /// [`BargeInConfig::min_speech`] of speech.
    Speech,
    /// A run of [`BargeInConfig::sure_speech`] the VAD is sure of, mostly let through, while the
    /// canceller is cancelling.
    SureSpeech,
}

/// The user started talking over the character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BargeIn {
    /// Start of the first speech frame of the run (stream time).
    pub onset: Duration,
    /// End of the frame that decided it (stream time).
    pub decided_at: Duration,
    /// The rule that held it (logged, so a hold on the character's own echo can be traced to its rule).
    pub by: HeldBy,
}

/// Counts speech frames, one [`BargeInGate::push`] per 32 ms VAD frame.
#[derive(Debug, Clone)]
pub struct BargeInGate {
    threshold: f32,
    min_echo_kept_db: f32,
    min_frames: u64,
    max_gap_frames: u64,
    sure_threshold: f32,
    sure_echo_kept_db: f32,
    sure_frames: u64,
    /// Frames in a row, up to this one, that count toward `sure_frames`.
    sure_run: u64,
    sure_cancelled_db: f32,
    sure_cancelled_frames: u64,
    /// Frames since the last one the canceller took down to `sure_cancelled_db` (`None`: none yet).
    since_cancelled: Option<u64>,
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
            sure_threshold: config.sure_threshold.max(config.threshold),
            sure_echo_kept_db: config.sure_echo_kept_db.max(config.min_echo_kept_db),
            sure_frames: frames(config.sure_speech).max(1),
            sure_run: 0,
            sure_cancelled_db: config.sure_cancelled_db,
            sure_cancelled_frames: frames(config.sure_cancelled_within),
            since_cancelled: None,
            frame: 0,
            run_start: None,
            speech_frames: 0,
            gap: 0,
            fired: false,
        }
    }

    /// The speech probability of the next frame and what the echo canceller did to it (how much it let
    /// through, whether the microphone hears the character at all). Returns the barge-in once, the
    /// moment enough speech has been heard; the same run of speech does not fire again.
    pub fn push(&mut self, probability: f32, echo: FrameEcho) -> Option<BargeIn> {
        let echo_kept_db = echo.kept_db;
        let index = self.frame;
        self.frame += 1;
        if probability >= self.sure_threshold && echo_kept_db >= self.sure_echo_kept_db {
            self.sure_run += 1;
        } else {
            self.sure_run = 0;
        }
        // With no echo at the microphone (headphones) there is no first echo to mistake for the user.
        let no_echo = echo.path == EchoPath::Absent;
        self.since_cancelled = if echo_kept_db <= self.sure_cancelled_db || no_echo {
            Some(0)
        } else {
            self.since_cancelled.map(|n| n + 1)
        };
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
        let cancelling = self
            .since_cancelled
            .is_some_and(|n| n <= self.sure_run + self.sure_cancelled_frames);
        let by = if self.speech_frames >= self.min_frames {
            HeldBy::Speech
        } else if self.sure_run >= self.sure_frames && cancelling {
            HeldBy::SureSpeech
        } else {
            return None;
        };
        if self.fired {
            return None;
        }
        self.fired = true;
        Some(BargeIn {
            onset: at(self.run_start.unwrap_or(index)),
            decided_at: at(index + 1),
            by,
        })
    }

    /// Starts over (the character started a new answer, or stopped): what the canceller did before
    /// does not say it cancels the new answer.
    pub fn reset(&mut self) {
        self.end_run();
        self.since_cancelled = None;
    }

    fn end_run(&mut self) {
        self.run_start = None;
        self.speech_frames = 0;
        self.sure_run = 0;
        self.gap = 0;
        self.fired = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame of which the canceller let `db` through, the echo heard.
    fn kept(db: f32) -> FrameEcho {
        FrameEcho {
            kept_db: db,
            path: EchoPath::Heard,
        }
    }

    /// Frames (probability, dB kept) pushed in turn; the indices of those that held the answer.
    fn held_at(gate: &mut BargeInGate, frames: &[(f32, f32)]) -> Vec<usize> {
        frames
            .iter()
            .enumerate()
            .filter_map(|(i, &(p, db))| gate.push(p, kept(db)).map(|_| i))
            .collect()
    }

    /// One cancelled frame, `uncancelled` frames of residue, then eight sure frames at -8 dB kept.
    fn sure_run_after(uncancelled: usize) -> Vec<(f32, f32)> {
        let mut frames = vec![(0.1, -35.0)];
        frames.extend(std::iter::repeat_n((0.1, -10.0), uncancelled));
        frames.extend([(0.95, -8.0); 8]);
        frames
    }

    fn feed(gate: &mut BargeInGate, probabilities: &[f32]) -> Vec<BargeIn> {
        probabilities
            .iter()
            .filter_map(|&p| gate.push(p, kept(0.0)))
            .collect()
    }

    #[test]
    fn speech_the_canceller_removed_nearly_all_of_is_the_echo() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        // Eight speech-like frames of which the canceller kept only -35 dB: the character's residue.
        let fired: Vec<_> = (0..8)
            .filter_map(|_| gate.push(0.95, kept(-35.0)))
            .collect();
        assert!(fired.is_empty());
        // The same frames with the user's voice in them (-8 dB kept) interrupt.
        let fired: Vec<_> = (0..8).filter_map(|_| gate.push(0.95, kept(-8.0))).collect();
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

    #[test]
    fn clear_words_hold_after_three_sure_frames() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        let fired: Vec<_> = [
            (0.1, -40.0),
            (0.9, -6.0),
            (0.95, -4.0),
            (0.9, -8.0),
            (0.9, -8.0),
        ]
        .into_iter()
        .filter_map(|(p, db)| gate.push(p, kept(db)))
        .collect();
        assert_eq!(
            fired,
            [BargeIn {
                onset: FRAME_DURATION,
                decided_at: FRAME_DURATION * 4,
                by: HeldBy::SureSpeech,
            }]
        );
    }

    #[test]
    fn before_the_canceller_has_taken_the_echo_down_sure_frames_wait_for_the_full_run() {
        // The start of an answer: nothing cancelled yet, the echo comes through at -8 dB.
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        assert_eq!(held_at(&mut gate, &[(0.95, -8.0); 8]), [5]);
        // Cancelled frames more than 320 ms before the run do not count either.
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        assert_eq!(held_at(&mut gate, &sure_run_after(11)), [17]);
        // 320 ms (ten frames) between the cancelled frame and the run still count.
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        assert_eq!(held_at(&mut gate, &sure_run_after(10)), [13]);
    }

    #[test]
    fn a_reset_forgets_what_the_canceller_did_for_the_last_answer() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        gate.push(0.1, kept(-35.0));
        gate.reset();
        assert_eq!(held_at(&mut gate, &[(0.95, -8.0); 8]), [5]);
    }

    #[test]
    fn sure_frames_must_be_in_a_row_and_mostly_kept_by_the_canceller() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        gate.push(0.1, kept(-35.0));
        // A less sure frame breaks the run: five speech frames, under the six of `min_speech`.
        assert!(feed(&mut gate, &[0.9, 0.9, 0.7, 0.9, 0.9, 0.1, 0.1]).is_empty());
        // Sure to the VAD but mostly removed by the canceller (-25 dB kept): the full six frames.
        assert_eq!(held_at(&mut gate, &[(0.95, -25.0); 8]), [5]);
    }

    #[test]
    fn with_no_echo_at_the_microphone_sure_frames_hold_from_the_start_of_an_answer() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        let no_echo = FrameEcho {
            kept_db: 0.0,
            path: EchoPath::Absent,
        };
        let fired: Vec<_> = (0..8).filter_map(|_| gate.push(0.95, no_echo)).collect();
        assert_eq!(fired.len(), 1);
        assert_eq!(fired[0].decided_at, FRAME_DURATION * 3);
        assert_eq!(fired[0].by, HeldBy::SureSpeech);
    }

    #[test]
    fn a_hold_says_which_rule_made_it() {
        let mut gate = BargeInGate::new(&BargeInConfig::default());
        gate.push(0.1, kept(-35.0));
        // Sure to the VAD but mostly removed by the canceller: only the full minimum of speech holds.
        let held: Vec<_> = (0..8)
            .filter_map(|_| gate.push(0.95, kept(-25.0)))
            .map(|held| held.by)
            .collect();
        assert_eq!(held, [HeldBy::Speech]);
    }
}
