//! Voice activity detection: a per-frame speech probability behind a trait, and Silero VAD v5/v6 via ort.

use std::path::{Path, PathBuf};

use tomo_onnx::ort;
use tomo_onnx::ort::session::Session;
use tomo_onnx::ort::value::Tensor;

use crate::{FRAME_SAMPLES, SAMPLE_RATE};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VadError {
    #[error("VAD model not found at {0} (install it with `tomo models install`)")]
    ModelMissing(PathBuf),
    #[error(transparent)]
    Runtime(#[from] tomo_onnx::OnnxError),
    #[error("cannot load VAD model {path}: {message}")]
    Load { path: PathBuf, message: String },
    #[error("VAD model {path} does not look like Silero v5/v6: {message}")]
    UnexpectedModel { path: PathBuf, message: String },
    #[error("VAD frames must be {expected} samples at 16 kHz, got {got}")]
    FrameLength { expected: usize, got: usize },
    #[error("VAD inference failed: {0}")]
    Inference(String),
}

/// Probability that a frame of [`FRAME_SAMPLES`] 16 kHz mono samples contains speech.
pub trait VoiceActivity {
    fn speech_probability(&mut self, frame: &[f32]) -> Result<f32, VadError>;
    /// Returns to the state silence leaves the model in (between unrelated streams, after skipped or
    /// muted frames).
    fn reset(&mut self);
}

impl<T: VoiceActivity + ?Sized> VoiceActivity for &mut T {
    fn speech_probability(&mut self, frame: &[f32]) -> Result<f32, VadError> {
        (**self).speech_probability(frame)
    }
    fn reset(&mut self) {
        (**self).reset();
    }
}

impl<T: VoiceActivity + ?Sized> VoiceActivity for Box<T> {
    fn speech_probability(&mut self, frame: &[f32]) -> Result<f32, VadError> {
        (**self).speech_probability(frame)
    }
    fn reset(&mut self) {
        (**self).reset();
    }
}

/// Silero keeps the last 64 samples of the previous window and expects them prepended to the next
/// one (as its own Python wrapper does for v5 and v6 at 16 kHz): the model input is 64 + 512 samples.
const CONTEXT_SAMPLES: usize = 64;

/// Frames of silence the model is run on when it loads (0.5 s), to learn the state it resets to.
/// Streaming, Silero's state at the start of speech is the one silence left it in; the listener
/// skips the model over quiet frames (idle CPU) and resets it after them, and the all-zero state it
/// reset to before heard a soft first syllable (the first three frames of "Actually") at 0.07-0.32
/// where the rested state hears 0.27-0.77. Words said with no answer playing (tomo-runtime
/// `examples/talk_over_timing`, 240 placements) are now all held within 300 ms of their onset or
/// before it (17 were later); with headphones 9 late or never held instead of 16, over a cancelled
/// answer 15 late instead of 19. The cost: the model is as quick on the character's echo when the
/// canceller leaks it (the device loop held two answers of 140, both a session's second answer, where
/// AEC3's filter started over; none of 220 before). That restart was the playback's doing (the first
/// clip's start played too fast: `playback/clip.rs`, `QUEUE_RATE`); without it, none of 120.
const REST_FRAMES: usize = 16;

/// Silero VAD (v5/v6 ONNX: inputs `input` [1, 576], `state` [2, 1, 128], `sr` int64; outputs the
/// probability and the next state).
pub struct SileroVad {
    session: Session,
    /// Recurrent state, shape `state_shape`, fed back every frame.
    state: Vec<f32>,
    state_shape: Vec<i64>,
    context: [f32; CONTEXT_SAMPLES],
    input: Vec<f32>,
    prob_output: String,
    state_output: String,
    /// The state after [`REST_FRAMES`] of silence: what [`VoiceActivity::reset`] restores.
    rested: Vec<f32>,
}

impl SileroVad {
    /// Loads ONNX Runtime from `runtime` (once per process) and the Silero model from `model`.
    pub fn new(model: &Path, runtime: &Path) -> Result<Self, VadError> {
        if !model.is_file() {
            return Err(VadError::ModelMissing(model.to_path_buf()));
        }
        let environment = tomo_onnx::environment(runtime)?;
        let load_failed = |message: String| VadError::Load {
            path: model.to_path_buf(),
            message,
        };
        // One thread: a 32 ms frame takes well under a millisecond, and the other threads are busy
        // with ASR/TTS; more threads only add wake-up latency.
        let session = tomo_onnx::session(&environment, model, 1).map_err(load_failed)?;
        let unexpected = |message: String| VadError::UnexpectedModel {
            path: model.to_path_buf(),
            message,
        };
        let names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for wanted in ["input", "state", "sr"] {
            if !names.contains(&wanted) {
                return Err(unexpected(format!(
                    "no input named `{wanted}` (inputs: {names:?})"
                )));
            }
        }
        let state_shape: Vec<i64> = session
            .inputs()
            .iter()
            .find(|i| i.name() == "state")
            .and_then(|i| i.dtype().tensor_shape())
            .map(|shape| shape.iter().map(|&d| if d < 0 { 1 } else { d }).collect())
            .ok_or_else(|| unexpected("input `state` is not a tensor".into()))?;
        let outputs: Vec<String> = session
            .outputs()
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        let [prob_output, state_output] = outputs.as_slice() else {
            return Err(unexpected(format!(
                "expected 2 outputs (probability, state), got {outputs:?}"
            )));
        };
        let (prob_output, state_output) = (prob_output.clone(), state_output.clone());
        let state_len = state_shape.iter().product::<i64>().max(0) as usize;
        tracing::debug!(model = %model.display(), ?state_shape, "Silero VAD loaded");
        let mut vad = Self {
            session,
            state: vec![0.0; state_len],
            state_shape,
            context: [0.0; CONTEXT_SAMPLES],
            input: Vec::with_capacity(CONTEXT_SAMPLES + FRAME_SAMPLES),
            prob_output,
            state_output,
            rested: Vec::new(),
        };
        for _ in 0..REST_FRAMES {
            vad.speech_probability(&[0.0; FRAME_SAMPLES])?;
        }
        vad.rested = vad.state.clone();
        Ok(vad)
    }
}

impl VoiceActivity for SileroVad {
    fn speech_probability(&mut self, frame: &[f32]) -> Result<f32, VadError> {
        if frame.len() != FRAME_SAMPLES {
            return Err(VadError::FrameLength {
                expected: FRAME_SAMPLES,
                got: frame.len(),
            });
        }
        let failed = |e: ort::Error| VadError::Inference(e.to_string());
        self.input.clear();
        self.input.extend_from_slice(&self.context);
        self.input.extend_from_slice(frame);
        let input = Tensor::from_array((vec![1_i64, self.input.len() as i64], self.input.clone()))
            .map_err(failed)?;
        let state =
            Tensor::from_array((self.state_shape.clone(), self.state.clone())).map_err(failed)?;
        let sr = Tensor::from_array((Vec::<i64>::new(), vec![i64::from(SAMPLE_RATE)]))
            .map_err(failed)?;
        let outputs = self
            .session
            .run(ort::inputs!["input" => input, "state" => state, "sr" => sr])
            .map_err(failed)?;
        let (_, prob) = outputs[self.prob_output.as_str()]
            .try_extract_tensor::<f32>()
            .map_err(failed)?;
        let probability = prob.first().copied().ok_or_else(|| {
            VadError::Inference(format!("output `{}` is empty", self.prob_output))
        })?;
        let (_, next_state) = outputs[self.state_output.as_str()]
            .try_extract_tensor::<f32>()
            .map_err(failed)?;
        if next_state.len() != self.state.len() {
            return Err(VadError::Inference(format!(
                "state output has {} values, expected {}",
                next_state.len(),
                self.state.len()
            )));
        }
        self.state.copy_from_slice(next_state);
        self.context
            .copy_from_slice(&frame[FRAME_SAMPLES - CONTEXT_SAMPLES..]);
        Ok(probability)
    }

    fn reset(&mut self) {
        self.state.copy_from_slice(&self.rested);
        self.context = [0.0; CONTEXT_SAMPLES];
    }
}
