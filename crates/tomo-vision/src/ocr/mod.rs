//! Offline OCR: an [`OcrEngine`] trait and PP-OCRv4 (detection + recognition ONNX models from the PyPI package
//! `rapidocr-onnxruntime`, run through ONNX Runtime loaded by `tomo-onnx`).

mod det;
mod rec;

use std::path::{Path, PathBuf};

use image::RgbImage;

use crate::Rect;

pub use det::{DetConfig, TextDetector};
pub use rec::TextRecognizer;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OcrError {
    #[error("OCR model not found at {0} (install it with `tomo models install`)")]
    ModelMissing(PathBuf),
    #[error(transparent)]
    Runtime(#[from] tomo_onnx::OnnxError),
    #[error("cannot load OCR model {path}: {message}")]
    Load { path: PathBuf, message: String },
    #[error("OCR model {path} is not what PP-OCRv4 looks like: {message}")]
    UnexpectedModel { path: PathBuf, message: String },
    #[error("OCR inference failed ({stage}): {message}")]
    Inference {
        stage: &'static str,
        message: String,
    },
}

/// One recognised line of text and where it is in the image that was read.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrLine {
    pub text: String,
    /// Mean probability of the decoded characters (0..1).
    pub score: f32,
    pub bbox: Rect,
}

/// Reads the text in an image, line by line, top to bottom.
pub trait OcrEngine: Send {
    fn read(&mut self, image: &RgbImage) -> Result<Vec<OcrLine>, OcrError>;
}

impl<T: OcrEngine + ?Sized> OcrEngine for Box<T> {
    fn read(&mut self, image: &RgbImage) -> Result<Vec<OcrLine>, OcrError> {
        (**self).read(image)
    }
}

/// Where the OCR models and ONNX Runtime live in the model store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OcrModels {
    pub det: PathBuf,
    pub rec: PathBuf,
    pub runtime: PathBuf,
}

/// Store paths (the manifest installs them there; see `models/manifest.toml`).
pub const DET_MODEL_PATH: &str = "ocr/ch_PP-OCRv4_det_infer.onnx";
pub const REC_MODEL_PATH: &str = "ocr/ch_PP-OCRv4_rec_infer.onnx";
pub const RUNTIME_PATH: &str = "runtime/libonnxruntime.so";

impl OcrModels {
    /// The files under a model store root.
    pub fn in_store(root: &Path) -> Self {
        Self {
            det: root.join(DET_MODEL_PATH),
            rec: root.join(REC_MODEL_PATH),
            runtime: root.join(RUNTIME_PATH),
        }
    }

    /// The first file that is not there, if any.
    pub fn missing(&self) -> Option<&Path> {
        [&self.det, &self.rec, &self.runtime]
            .into_iter()
            .find(|p| !p.is_file())
            .map(PathBuf::as_path)
    }
}

/// PP-OCRv4: DB text detection, then CRNN/SVTR recognition with CTC greedy decoding per detected line.
/// The Chinese model's dictionary (6 623 characters + ASCII) reads English and Chinese; there is no
/// angle classifier, because screen text is upright.
pub struct PpOcr {
    det: TextDetector,
    rec: TextRecognizer,
    /// Lines whose mean character probability is below this are dropped (noise, icons).
    pub min_score: f32,
    /// Each detected box grows by this fraction of its height on every side before recognition. The
    /// detector's boxes hug the glyphs; the recogniser was trained on looser crops and, on tight ones,
    /// drops the spaces between words ("HellofromTomo").
    pub crop_margin: f32,
}

impl PpOcr {
    pub fn new(models: &OcrModels) -> Result<Self, OcrError> {
        Self::with_config(models, DetConfig::default())
    }

    pub fn with_config(models: &OcrModels, det: DetConfig) -> Result<Self, OcrError> {
        for path in [&models.det, &models.rec] {
            if !path.is_file() {
                return Err(OcrError::ModelMissing(path.clone()));
            }
        }
        let environment = tomo_onnx::environment(&models.runtime)?;
        Ok(Self {
            det: TextDetector::new(&models.det, &environment, det)?,
            rec: TextRecognizer::new(&models.rec, &environment)?,
            min_score: 0.5,
            crop_margin: 0.15,
        })
    }
}

impl OcrEngine for PpOcr {
    fn read(&mut self, image: &RgbImage) -> Result<Vec<OcrLine>, OcrError> {
        let boxes = self.det.detect(image)?;
        let mut lines = Vec::with_capacity(boxes.len());
        for bbox in boxes {
            let m = (bbox.height as f32 * self.crop_margin).round() as u32;
            let bbox = Rect::new(
                bbox.x.saturating_sub(m),
                bbox.y.saturating_sub(m),
                bbox.width + 2 * m,
                bbox.height + 2 * m,
            )
            .clip(image.width(), image.height());
            let crop = image::imageops::crop_imm(image, bbox.x, bbox.y, bbox.width, bbox.height)
                .to_image();
            let (text, score) = self.rec.recognize(&crop)?;
            let text = text.trim().to_string();
            if text.is_empty() || score < self.min_score {
                tracing::trace!(%text, score, "OCR line dropped");
                continue;
            }
            lines.push(OcrLine { text, score, bbox });
        }
        Ok(merge_rows(lines))
    }
}

/// The detector sometimes splits one line of text at a wide space ("The Ice" | "Dragon fell"); pieces in
/// reading order that sit on the same row, close together, are one line for whoever reads the text.
pub(crate) fn merge_rows(lines: Vec<OcrLine>) -> Vec<OcrLine> {
    let mut merged: Vec<OcrLine> = Vec::with_capacity(lines.len());
    for line in lines {
        if let Some(last) = merged.last_mut() {
            let (a, b) = (last.bbox, line.bbox);
            let overlap = (a.y + a.height)
                .min(b.y + b.height)
                .saturating_sub(a.y.max(b.y));
            let same_row = overlap * 2 >= a.height.min(b.height);
            let gap = b.x.saturating_sub(a.x + a.width);
            let to_the_right = b.x + b.width > a.x + a.width;
            if same_row && to_the_right && gap <= 2 * a.height.max(b.height) {
                let cjk_join = last.text.chars().last().is_some_and(is_cjk)
                    && line.text.chars().next().is_some_and(is_cjk);
                if !cjk_join {
                    last.text.push(' ');
                }
                last.text.push_str(&line.text);
                last.score = last.score.min(line.score);
                let right = (a.x + a.width).max(b.x + b.width);
                let bottom = (a.y + a.height).max(b.y + b.height);
                let (x, y) = (a.x.min(b.x), a.y.min(b.y));
                last.bbox = Rect::new(x, y, right - x, bottom - y);
                continue;
            }
        }
        merged.push(line);
    }
    merged
}

/// Han, kana, hangul and CJK punctuation: written without spaces between them.
fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3000..=0x303F | 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF
        | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF)
}

pub(crate) fn session(
    path: &Path,
    environment: &tomo_onnx::ort::environment::Environment,
) -> Result<tomo_onnx::ort::session::Session, OcrError> {
    let failed = |message: String| OcrError::Load {
        path: path.to_path_buf(),
        message,
    };
    // Two threads: the machine is shared with ASR/TTS; OCR runs only on changed frames.
    tomo_onnx::session(environment, path, 2).map_err(failed)
}

/// `(x/255 - 0.5) / 0.5` per channel, laid out as NCHW: both PP-OCR models take this normalisation.
pub(crate) fn to_nchw(image: &RgbImage, width: usize, height: usize) -> Vec<f32> {
    let plane = width * height;
    let mut data = vec![0.0_f32; 3 * plane];
    for (x, y, pixel) in image.enumerate_pixels() {
        let (x, y) = (x as usize, y as usize);
        if x >= width || y >= height {
            continue;
        }
        for c in 0..3 {
            data[c * plane + y * width + x] = f32::from(pixel[c]) / 127.5 - 1.0;
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, x: u32, y: u32, width: u32, height: u32) -> OcrLine {
        OcrLine {
            text: text.to_owned(),
            score: 0.9,
            bbox: Rect::new(x, y, width, height),
        }
    }

    #[test]
    fn pieces_of_one_row_are_joined_and_other_rows_are_kept() {
        let merged = merge_rows(vec![
            line("Boss defeated", 10, 10, 150, 24),
            line("The Ice", 10, 50, 80, 24),
            line("Dragon fell", 120, 52, 120, 24),
            line("会议改到", 10, 90, 80, 24),
            line("下午三点", 95, 90, 80, 24),
            line("far away", 600, 90, 80, 24),
        ]);
        let texts: Vec<&str> = merged.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Boss defeated",
                "The Ice Dragon fell",
                "会议改到下午三点",
                "far away"
            ]
        );
        assert_eq!(merged[1].bbox, Rect::new(10, 50, 230, 26));
    }
}
