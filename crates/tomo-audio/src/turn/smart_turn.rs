//! Smart Turn v3 (pipecat's semantic end-of-turn model, ONNX): the last 8 s of the utterance as
//! Whisper-style log-mel features in, the probability that the speaker has finished out.

use std::path::{Path, PathBuf};

use tomo_onnx::ort;
use tomo_onnx::ort::session::Session;
use tomo_onnx::ort::value::Tensor;

use super::features::{FRAMES, LogMelExtractor, MEL_BANDS};
use super::{EndOfTurn, TurnError};

/// How many threads one inference may use. Two halve the ~80 ms of one on the 2-core machine; the
/// model runs once per pause, when nothing else of the turn is running yet.
const DEFAULT_THREADS: usize = 2;

pub struct SmartTurn {
    session: Session,
    extractor: LogMelExtractor,
    input_name: String,
    output_name: String,
}

impl std::fmt::Debug for SmartTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmartTurn")
            .field("input", &self.input_name)
            .field("output", &self.output_name)
            .finish_non_exhaustive()
    }
}

impl SmartTurn {
    /// Loads ONNX Runtime from `runtime` (once per process) and the model from `model`.
    pub fn new(model: &Path, runtime: &Path) -> Result<Self, TurnError> {
        Self::with_threads(model, runtime, DEFAULT_THREADS)
    }

    pub fn with_threads(model: &Path, runtime: &Path, threads: usize) -> Result<Self, TurnError> {
        if !model.is_file() {
            return Err(TurnError::ModelMissing(model.to_path_buf()));
        }
        let environment = tomo_onnx::environment(runtime)?;
        let load_failed = |message: String| TurnError::Load {
            path: model.to_path_buf(),
            message,
        };
        // The model runs about once per pause.
        let session = tomo_onnx::session(&environment, model, threads).map_err(load_failed)?;
        let unexpected = |message: String| TurnError::UnexpectedModel {
            path: model.to_path_buf(),
            message,
        };
        let [input] = session.inputs() else {
            return Err(unexpected(format!(
                "expected one input, got {}",
                session.inputs().len()
            )));
        };
        let shape: Vec<i64> = input
            .dtype()
            .tensor_shape()
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        if shape.len() != 3 || shape[1] != MEL_BANDS as i64 || shape[2] != FRAMES as i64 {
            return Err(unexpected(format!(
                "input `{}` has shape {shape:?}, expected [batch, {MEL_BANDS}, {FRAMES}]",
                input.name()
            )));
        }
        let [output] = session.outputs() else {
            return Err(unexpected(format!(
                "expected one output, got {}",
                session.outputs().len()
            )));
        };
        let (input_name, output_name) = (input.name().to_string(), output.name().to_string());
        tracing::debug!(model = %model.display(), threads, "Smart Turn loaded");
        Ok(Self {
            session,
            extractor: LogMelExtractor::new(),
            input_name,
            output_name,
        })
    }

    /// The model's probability for already computed features (`MEL_BANDS × FRAMES`, band-major).
    pub fn probability_for_features(&mut self, features: Vec<f32>) -> Result<f32, TurnError> {
        let failed = |e: ort::Error| TurnError::Inference(e.to_string());
        let input = Tensor::from_array((vec![1_i64, MEL_BANDS as i64, FRAMES as i64], features))
            .map_err(failed)?;
        let outputs = self
            .session
            .run(ort::inputs![self.input_name.as_str() => input])
            .map_err(failed)?;
        let (_, values) = outputs[self.output_name.as_str()]
            .try_extract_tensor::<f32>()
            .map_err(failed)?;
        let probability = values.first().copied().ok_or_else(|| {
            TurnError::Inference(format!("output `{}` is empty", self.output_name))
        })?;
        // The exported graph ends in a sigmoid (its output is named `logits` all the same).
        if !(0.0..=1.0).contains(&probability) {
            return Err(TurnError::Inference(format!(
                "output {probability} is not a probability"
            )));
        }
        Ok(probability)
    }

    /// Features exactly as the model sees them for `utterance` (for tests against the reference).
    pub fn features(&mut self, utterance: &[f32]) -> Vec<f32> {
        self.extractor.extract(utterance)
    }
}

impl EndOfTurn for SmartTurn {
    fn probability_done(&mut self, utterance: &[f32]) -> Result<f32, TurnError> {
        let features = self.extractor.extract(utterance);
        self.probability_for_features(features)
    }
}

/// Where the model lives in the store, relative to its root.
pub const MODEL_PATH: &str = "turn/smart-turn-v3.2-cpu.onnx";

/// The model's path under a model store root.
pub fn model_path(models_root: &Path) -> PathBuf {
    models_root.join(MODEL_PATH)
}
