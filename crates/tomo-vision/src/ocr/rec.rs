//! Line recognition: a 48-pixel-high crop → per-timestep character probabilities → CTC greedy decoding.

use std::path::Path;

use image::RgbImage;
use image::imageops::FilterType;
use tomo_onnx::ort;
use tomo_onnx::ort::session::Session;
use tomo_onnx::ort::value::Tensor;

use super::{OcrError, session, to_nchw};

const HEIGHT: u32 = 48;
/// PaddleOCR pads every line to at least this width (ratio 320/48); narrower inputs read worse.
const MIN_WIDTH: u32 = 320;
/// A very long line is squeezed to this width rather than fed as a huge tensor.
const MAX_WIDTH: u32 = 3200;

pub struct TextRecognizer {
    session: Session,
    /// Index 0 is the CTC blank; the model's dictionary follows, then a space (PaddleOCR's `use_space_char`).
    charset: Vec<String>,
}

impl TextRecognizer {
    pub fn new(path: &Path, environment: &ort::environment::Environment) -> Result<Self, OcrError> {
        let session = session(path, environment)?;
        let unexpected = |message: String| OcrError::UnexpectedModel {
            path: path.to_path_buf(),
            message,
        };
        let characters = session
            .metadata()
            .map_err(|e| unexpected(e.to_string()))?
            .custom("character")
            .ok_or_else(|| unexpected("no `character` list in the model metadata".into()))?;
        let charset = charset_from_metadata(&characters);
        tracing::debug!(model = %path.display(), classes = charset.len(), "OCR recogniser loaded");
        Ok(Self { session, charset })
    }

    /// The text of one line and its mean character probability.
    pub fn recognize(&mut self, crop: &RgbImage) -> Result<(String, f32), OcrError> {
        let (w, h) = crop.dimensions();
        if w == 0 || h == 0 {
            return Ok((String::new(), 0.0));
        }
        let scaled_w = ((w as f32 * HEIGHT as f32 / h as f32).ceil() as u32).clamp(1, MAX_WIDTH);
        let resized = image::imageops::resize(crop, scaled_w, HEIGHT, FilterType::Triangle);
        let width = scaled_w.max(MIN_WIDTH);
        // Padding stays 0.0 after normalisation (mid grey), as in PaddleOCR's `resize_norm_img`.
        let input = to_nchw(&resized, width as usize, HEIGHT as usize);
        let failed = |e: ort::Error| OcrError::Inference {
            stage: "recognition",
            message: e.to_string(),
        };
        let tensor =
            Tensor::from_array((vec![1_i64, 3, i64::from(HEIGHT), i64::from(width)], input))
                .map_err(failed)?;
        let outputs = self.session.run(ort::inputs![tensor]).map_err(failed)?;
        let (shape, probs) = outputs[0].try_extract_tensor::<f32>().map_err(failed)?;
        let classes = shape.last().copied().unwrap_or(0).max(0) as usize;
        if classes == 0 || classes != self.charset.len() {
            return Err(OcrError::Inference {
                stage: "recognition",
                message: format!(
                    "output shape {shape:?} does not match the dictionary ({} classes)",
                    self.charset.len()
                ),
            });
        }
        Ok(ctc_greedy(probs, classes, &self.charset))
    }
}

pub(crate) fn charset_from_metadata(characters: &str) -> Vec<String> {
    let mut charset = vec![String::new()];
    charset.extend(
        characters
            .split('\n')
            .map(|c| c.trim_end_matches('\r'))
            .filter(|c| !c.is_empty())
            .map(str::to_string),
    );
    charset.push(" ".into());
    charset
}

/// Best class per timestep; repeats collapse, blanks (class 0) separate them and are dropped.
pub(crate) fn ctc_greedy(probs: &[f32], classes: usize, charset: &[String]) -> (String, f32) {
    let mut text = String::new();
    let mut score_sum = 0.0_f32;
    let mut kept = 0_usize;
    let mut previous = 0_usize;
    for step in probs.chunks_exact(classes) {
        let (best, p) = step
            .iter()
            .copied()
            .enumerate()
            .fold(
                (0, f32::MIN),
                |acc, (i, p)| if p > acc.1 { (i, p) } else { acc },
            );
        if best != 0
            && best != previous
            && let Some(c) = charset.get(best)
        {
            text.push_str(c);
            score_sum += p;
            kept += 1;
        }
        previous = best;
    }
    let score = if kept == 0 {
        0.0
    } else {
        score_sum / kept as f32
    };
    (text, score)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctc_collapses_repeats_and_drops_blanks() {
        let charset = charset_from_metadata("a\nb\n");
        assert_eq!(charset, ["", "a", "b", " "]);
        let one_hot = |i: usize| {
            let mut v = vec![0.0_f32; 4];
            v[i] = 1.0;
            v
        };
        // a a _ a b b _ ' ' b  →  "aab b"
        let steps: Vec<f32> = [1, 1, 0, 1, 2, 2, 0, 3, 2]
            .into_iter()
            .flat_map(one_hot)
            .collect();
        let (text, score) = ctc_greedy(&steps, 4, &charset);
        assert_eq!(text, "aab b");
        assert!((score - 1.0).abs() < 1e-6);
    }
}
