//! Whether the microphone hears the speakers at all: with headphones on (or the speakers muted) the
//! character can play loud while the microphone stays at its noise floor. AEC3 finds that out only
//! after about 6 s of loud playback without convergence (its transparent mode, not configurable in
//! sonora 0.2.0); until then its suppressor takes the user's voice down to -60..-80 dB along with the
//! echo that is not there, so the first answers of a session could not be talked over with headphones.
//! This tells it from the levels alone within the first half second: the microphone's energy while the
//! character has been loud for a while, against its floor while the character has been quiet.

/// Blocks of 64 samples (4 ms) per window: the levels are judged per 100 ms.
const WINDOW_BLOCKS: usize = 25;
/// A window of the reference at or above this mean square (-45 dBFS RMS) is the character talking.
const LOUD_REFERENCE: f32 = 3.2e-5;
/// The reference must have been loud for this many windows up to the judged one (300 ms), so that an
/// echo delayed by up to 200 ms (device, sound server, Bluetooth) lands in the judged window.
const LOUD_WINDOWS: usize = 3;
/// A window of the reference under this mean square (-70 dBFS RMS) is the character quiet.
const SILENT_REFERENCE: f32 = 1e-7;
/// The floor is learnt from windows whose reference was silent for this many windows up to them (500
/// ms): the echo of the last sound has died down (a room's reverberation: RT60 0.25-0.5 s).
const SILENT_WINDOWS: usize = 5;
/// A microphone window within this much of the floor (dB) heard nothing but the room.
const MARGIN_DB: f32 = 6.0;
/// Judged windows at the floor, with no louder one between them, before the echo is taken as absent
/// (with [`LOUD_WINDOWS`]: about 0.4 s into the first answer). It must be decided before the user
/// starts talking over the answer: their voice keeps the microphone above its floor, which cannot be
/// told from echo, and the suppressor takes them down until they pause. With five windows (0.7 s) the
/// fixtures' phrases said from 0.6 s into a session's first answer with headphones on
/// (`examples/talk_over_timing` in tomo-runtime) were held 0.6-1.2 s after their onset or never, 7 of
/// 12; with two, all within 300 ms of their onset or before it. An echo heard at all is far over the
/// floor within the first window its reference reaches: the rooms of the fixtures (-20 to -30 dBFS
/// against floors of -55 to -90) and the device loop never pass for headphones. An echo up to about
/// 300 ms late (Bluetooth speakers: 100-300 ms) still reaches the second judged window; a later one is
/// taken for absent until the linear filter, which keeps adapting, removes it ([`CANCELLED_DB`]).
const QUIET_WINDOWS: u32 = 2;
/// While the echo is taken as absent, a window where the linear filter removes this much (dB) of a
/// microphone louder than the floor is the echo back (headphones unplugged): the user's voice over
/// the answer passes the linear filter whole.
const CANCELLED_DB: f32 = 10.0;
/// The floor follows the lowest window it is learnt from and rises this much per such window (0.5 dB/s),
/// so a noise that starts later (a fan) is learnt.
const FLOOR_RISE: f32 = 1.011_579;
/// Digital silence (a sound server's monitor, a gated headset): -90 dBFS counts as the floor.
const MIN_FLOOR: f32 = 1e-9;

/// What the canceller assumes about the microphone and the speakers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EchoPath {
    /// The microphone hears the speakers (or may: what is assumed until shown otherwise): the echo is
    /// cancelled and the rest suppressed.
    #[default]
    Heard,
    /// The character has been loud while the microphone stayed at its floor: nothing to suppress, the
    /// user's voice goes on whole (the linear filter keeps adapting, in case the echo comes back).
    Absent,
}

/// The power ratio of `db` decibels.
fn from_db(db: f32) -> f32 {
    10f32.powf(db / 10.0)
}

/// Energies of one window being summed.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    mic: f32,
    linear: f32,
    reference: f32,
    blocks: usize,
}

impl Window {
    fn add(&mut self, mic: f32, linear: f32, reference: f32) -> Option<Window> {
        self.mic += mic;
        self.linear += linear;
        self.reference += reference;
        self.blocks += 1;
        (self.blocks == WINDOW_BLOCKS).then(|| std::mem::take(self))
    }

    /// Mean squares per sample of (microphone, linear output, reference).
    fn means(&self) -> (f32, f32, f32) {
        let n = (self.blocks * super::CHUNK).max(1) as f32;
        (self.mic / n, self.linear / n, self.reference / n)
    }
}

/// Decides the [`EchoPath`] from the energies of every 4 ms block (sums of squares, samples in ±1).
#[derive(Debug, Clone, Default)]
pub struct EchoPathDetector {
    path: EchoPath,
    /// The microphone's mean square while the character is quiet (`None` until learnt).
    floor: Option<f32>,
    window: Window,
    /// Windows in a row, up to the last, whose reference was loud.
    loud_reference: usize,
    /// Windows in a row, up to the last, whose reference was silent.
    silent_reference: usize,
    quiet: u32,
}

impl EchoPathDetector {
    pub fn path(&self) -> EchoPath {
        self.path
    }

    /// A block: the microphone's, the linear filter's output's and the reference's energies (nothing
    /// played: the reference's is 0 and the output is the microphone).
    pub fn block(&mut self, mic: f32, linear: f32, reference: f32) {
        let Some(window) = self.window.add(mic, linear, reference) else {
            return;
        };
        let (mic, linear, reference) = window.means();
        let count = |run: usize, on: bool| if on { run + 1 } else { 0 };
        self.loud_reference = count(self.loud_reference, reference >= LOUD_REFERENCE);
        self.silent_reference = count(self.silent_reference, reference < SILENT_REFERENCE);
        if self.silent_reference >= SILENT_WINDOWS {
            let risen = self.floor.map_or(mic, |floor| floor * FLOOR_RISE);
            self.floor = Some(risen.min(mic));
            return;
        }
        let Some(floor) = self.floor else {
            return;
        };
        let above_floor = mic > floor.max(MIN_FLOOR) * from_db(MARGIN_DB);
        let judged = self.loud_reference >= LOUD_WINDOWS;
        match self.path {
            EchoPath::Heard if above_floor => self.quiet = 0,
            EchoPath::Heard if judged => {
                self.quiet += 1;
                if self.quiet >= QUIET_WINDOWS {
                    self.path = EchoPath::Absent;
                    tracing::info!(
                        floor_dbfs = 10.0 * floor.max(MIN_FLOOR).log10(),
                        "the microphone does not hear the character (headphones?): echo suppression off"
                    );
                }
            }
            EchoPath::Absent if judged && above_floor && linear * from_db(CANCELLED_DB) <= mic => {
                self.path = EchoPath::Heard;
                self.quiet = 0;
                tracing::info!("the microphone hears the character again: echo suppression on");
            }
            EchoPath::Heard | EchoPath::Absent => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::echo::CHUNK;

    /// Block energy of a signal at `dbfs` RMS.
    fn block(dbfs: f32) -> f32 {
        from_db(dbfs) * CHUNK as f32
    }

    const FLOOR_DBFS: f32 = -60.0;

    fn listened(detector: &mut EchoPathDetector, windows: usize) {
        for _ in 0..windows * WINDOW_BLOCKS {
            detector.block(block(FLOOR_DBFS), block(FLOOR_DBFS), 0.0);
        }
    }

    /// Plays `windows` windows of a -20 dBFS reference with the microphone at `mic` dBFS and the linear
    /// output at `linear` dBFS; the window after which the path was first `want`.
    fn play(
        detector: &mut EchoPathDetector,
        windows: usize,
        mic: f32,
        linear: f32,
        want: EchoPath,
    ) -> Option<usize> {
        let mut first = None;
        for w in 0..windows {
            for _ in 0..WINDOW_BLOCKS {
                detector.block(block(mic), block(linear), block(-20.0));
            }
            if detector.path() == want && first.is_none() {
                first = Some(w);
            }
        }
        first
    }

    #[test]
    fn a_microphone_at_its_floor_while_the_character_is_loud_hears_no_echo() {
        let mut detector = EchoPathDetector::default();
        listened(&mut detector, 10);
        let first = play(&mut detector, 20, -59.0, -59.0, EchoPath::Absent);
        // Three windows of loud reference to judge the first, QUIET_WINDOWS judged at the floor.
        assert_eq!(first, Some(LOUD_WINDOWS + QUIET_WINDOWS as usize - 2));
    }

    /// Bluetooth speakers: the echo reaches the microphone a quarter of a second after the character
    /// turns loud (at 400 ms it would be taken for absent).
    #[test]
    fn an_echo_a_quarter_second_late_is_not_taken_for_headphones() {
        const LATE_MS: usize = 250;
        let mut detector = EchoPathDetector::default();
        listened(&mut detector, 10);
        for k in 0..20 * WINDOW_BLOCKS {
            let mic = if k * 4 < LATE_MS { FLOOR_DBFS } else { -30.0 };
            detector.block(block(mic), block(mic), block(-20.0));
            assert_eq!(detector.path(), EchoPath::Heard, "block {k}");
        }
    }

    #[test]
    fn an_echo_above_the_floor_keeps_the_suppressor() {
        let mut detector = EchoPathDetector::default();
        listened(&mut detector, 10);
        // A quiet echo, 8 dB over the floor, cancelled or not.
        assert_eq!(
            play(&mut detector, 200, -52.0, -52.0, EchoPath::Absent),
            None
        );
        assert_eq!(
            play(&mut detector, 200, -52.0, -80.0, EchoPath::Absent),
            None
        );
    }

    #[test]
    fn nothing_is_decided_before_the_floor_is_known() {
        let mut detector = EchoPathDetector::default();
        assert_eq!(
            play(&mut detector, 50, -90.0, -90.0, EchoPath::Absent),
            None
        );
    }

    #[test]
    fn the_user_talking_as_the_answer_starts_delays_the_decision() {
        let mut detector = EchoPathDetector::default();
        listened(&mut detector, 10);
        assert_eq!(play(&mut detector, 6, -30.0, -30.0, EchoPath::Absent), None);
        let first = play(&mut detector, 10, -60.0, -60.0, EchoPath::Absent);
        assert_eq!(first, Some(QUIET_WINDOWS as usize - 1));
    }

    #[test]
    fn the_echo_coming_back_turns_the_suppressor_on_but_the_users_voice_does_not() {
        let mut detector = EchoPathDetector::default();
        listened(&mut detector, 10);
        assert!(play(&mut detector, 10, -60.0, -60.0, EchoPath::Absent).is_some());
        // The user talks over the answer: the linear filter lets it through.
        assert_eq!(play(&mut detector, 20, -25.0, -26.0, EchoPath::Heard), None);
        // Headphones unplugged: the echo, which the linear filter learns to remove.
        assert_eq!(
            play(&mut detector, 3, -30.0, -45.0, EchoPath::Heard),
            Some(0)
        );
    }

    #[test]
    fn a_noise_that_starts_later_raises_the_floor() {
        let mut detector = EchoPathDetector::default();
        listened(&mut detector, 10);
        for _ in 0..200 * WINDOW_BLOCKS {
            detector.block(block(-50.0), block(-50.0), 0.0);
        }
        assert!(play(&mut detector, 10, -49.0, -49.0, EchoPath::Absent).is_some());
    }

    #[test]
    fn pauses_in_the_answer_are_not_judged() {
        let mut detector = EchoPathDetector::default();
        listened(&mut detector, 10);
        // Loud reference for two windows at a time, then a pause: never judged.
        for _ in 0..30 {
            for (windows, reference) in [(2, -20.0), (1, -80.0)] {
                for _ in 0..windows * WINDOW_BLOCKS {
                    detector.block(block(-60.0), block(-60.0), block(reference));
                }
            }
        }
        assert_eq!(detector.path(), EchoPath::Heard);
    }
}
