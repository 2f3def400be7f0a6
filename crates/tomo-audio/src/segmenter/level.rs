//! Frame levels: what is too quiet to ask the VAD about, and what is far enough under an utterance's
//! words to be its pause whatever the VAD says.

fn rms(frame: &[f32]) -> f32 {
    (frame.iter().map(|s| s * s).sum::<f32>() / frame.len().max(1) as f32).sqrt()
}

/// RMS below which a frame cannot hold speech: -60 dBFS, under a quiet room's microphone floor and far
/// above the digital silence of an idle or muted device.
pub const QUIET_RMS: f32 = 0.001;

pub(super) fn is_quiet(frame: &[f32]) -> bool {
    rms(frame) < QUIET_RMS
}

/// Inside an utterance, a frame under this level (dBFS) and [`HUSHED_BELOW_PEAK_DB`] under the
/// utterance's loudest speech frame is silence whatever the VAD says ("hushed"). Silero's probability
/// trails the voice: on the device benchmark's questions it stays at 0.97-1.00 for one or two frames
/// after the last sound (those frames at -46 to -64 dBFS, the words at -14 to -17) and falls under the
/// release threshold 86-118 ms after it, so the pause was offered, and the turn's clock started, that
/// late. The absolute level keeps a speaker's soft syllables speech (words at -5 dBFS, a tail at -40).
const HUSHED_DBFS: f32 = -45.0;
const HUSHED_BELOW_PEAK_DB: f32 = 30.0;

/// Hushed frames in a row before the utterance is offered on their strength alone: a single one is as
/// likely the closure of a stop consonant mid-word (-47 dBFS in "Tell me something nice about cats.").
pub(super) const HUSHED_FRAMES_TO_OFFER: u64 = 2;

pub(super) fn level_db(frame: &[f32]) -> f32 {
    20.0 * rms(frame).max(1e-9).log10()
}

/// How loud an utterance's speech is: the loudest frame the VAD called speech (a knock or a cough
/// before the words, which the VAD does not call speech, must not make a quiet speaker's words
/// "hushed").
#[derive(Debug, Clone, Copy)]
pub(super) struct Loudness {
    peak_db: f32,
}

impl Default for Loudness {
    /// Nothing heard yet: nothing is hushed.
    fn default() -> Self {
        Self {
            peak_db: f32::NEG_INFINITY,
        }
    }
}

impl Loudness {
    /// Notes a frame the VAD called speech, at `level` ([`level_db`]).
    pub(super) fn heard(&mut self, level: f32) {
        self.peak_db = self.peak_db.max(level);
    }

    /// Whether a frame at `level` is far under the speech heard so far.
    pub(super) fn hushes(&self, level: f32) -> bool {
        level < HUSHED_DBFS && level < self.peak_db - HUSHED_BELOW_PEAK_DB
    }
}
