//! Deciding that the user has finished their turn: a semantic end-of-turn model behind a trait
//! ([`EndOfTurn`], implemented by [`SmartTurn`]), and the silences the segmenter waits for around it
//! ([`TurnConfig`]).

pub mod features;
pub mod smart_turn;

use std::path::PathBuf;
use std::time::Duration;

pub use smart_turn::SmartTurn;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TurnError {
    #[error("end-of-turn model not found at {0} (install it with `tomo models install`)")]
    ModelMissing(PathBuf),
    #[error(transparent)]
    Runtime(#[from] tomo_onnx::OnnxError),
    #[error("cannot load end-of-turn model {path}: {message}")]
    Load { path: PathBuf, message: String },
    #[error("end-of-turn model {path} does not look like Smart Turn v3: {message}")]
    UnexpectedModel { path: PathBuf, message: String },
    #[error("end-of-turn inference failed: {0}")]
    Inference(String),
}

/// Whether the speaker has finished, judged from how the utterance sounds (words, intonation), not only
/// from the silence after it.
pub trait EndOfTurn {
    /// Probability in `[0, 1]` that the speaker is done, given the utterance so far: 16 kHz mono from
    /// a little before its first word up to now (the pause included).
    fn probability_done(&mut self, utterance: &[f32]) -> Result<f32, TurnError>;
}

impl<T: EndOfTurn + ?Sized> EndOfTurn for &mut T {
    fn probability_done(&mut self, utterance: &[f32]) -> Result<f32, TurnError> {
        (**self).probability_done(utterance)
    }
}

impl<T: EndOfTurn + ?Sized> EndOfTurn for Box<T> {
    fn probability_done(&mut self, utterance: &[f32]) -> Result<f32, TurnError> {
        (**self).probability_done(utterance)
    }
}

/// When the segmenter asks the end-of-turn model and how long it waits when the answer is "not done".
/// Without a model (or when it fails) the segmenter's fixed `hangover` ends the turn instead.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnConfig {
    /// Silence after the last speech frame before the model is asked.
    pub min_silence: Duration,
    /// The turn ends after this much silence whatever the model says.
    pub max_silence: Duration,
    /// While the silence lasts and the model said "not done", ask again this often (`None`: once per
    /// pause). A later look hears more of the pause, which is itself a sign of being done.
    pub recheck: Option<Duration>,
    /// Probability at or above which the speaker counts as done.
    pub threshold: f32,
}

/// Chosen on the paused-speech set (`scripts/make-turn-set.py`, `examples/turn_eval.rs`): Smart Turn tells
/// finished from unfinished synthesized speech only weakly (at 0.5 it calls 38 % of mid-sentence pauses
/// "done"), so only a confident "done" ends the turn early, once, and "not done" waited up to 0.9 s: a third
/// of the fixed 600 ms hangover's early cuts (10 of 60 paused sentences against 30), and half of the
/// finished utterances end after ~300 ms. The longest wait sets the slow turns' latency: 1 s cut the same
/// 10 of 60 (the set's pauses are 0.3-0.9 s, and the VAD hears the first ~0.1 s of a pause as speech) with
/// p90 1090 ms against 994 ms; 0.8 s cut 23 of 60, 0.7 s 25.
///
/// Since frames far under the words count as silence even while the VAD still trails them (the
/// segmenter's hushed frames), the silence counts from ≈ 60 ms sooner: asked at 200 ms the model then
/// hears less of the pause and says "not done" to most finished utterances (complete p50 864 ms), so
/// it is asked at 288 ms (9 frames) and gives up at 960 ms: 11 of 60 early cuts against 12 before,
/// finished utterances ending p50 298 ms / p90 960 ms after the last word against 306 / 996 (at 288 /
/// 900: 13 of 60, 298 / 928). `cargo run --release -p tomo-audio --example turn_eval -- <set> --min 288
/// --max 960 --threshold 90` prints these figures (the fixed 600 ms hangover: still 30 of 60).
impl Default for TurnConfig {
    fn default() -> Self {
        Self {
            min_silence: Duration::from_millis(288),
            max_silence: Duration::from_millis(960),
            recheck: None,
            threshold: 0.9,
        }
    }
}

/// Why an utterance ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TurnEnd {
    /// The fixed hangover of silence elapsed (no end-of-turn model, or it failed).
    Hangover,
    /// The end-of-turn model said the speaker is done.
    ModelDone { probability: f32 },
    /// The model kept saying "not done" until the maximum silence.
    MaxSilence,
    /// The segment reached its maximum length and was cut; the utterance goes on.
    MaxLength,
    /// Push-to-talk was released.
    Released,
    /// The stream ended.
    Flushed,
    /// Not an end: the speaker paused (a [`crate::SegmenterEvent::Pause`] snapshot).
    Paused,
}
