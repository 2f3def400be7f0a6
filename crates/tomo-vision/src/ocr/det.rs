//! DB text detection: probability map → threshold → connected components → expanded boxes.
//!
//! Screen text is axis-aligned, so each component becomes its bounding rectangle (no rotated boxes or
//! polygon clipping); the rectangle is grown by the DB "unclip" distance `area * ratio / perimeter`, which
//! undoes the shrinking the model was trained with.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use image::RgbImage;
use image::imageops::FilterType;
use tomo_onnx::ort;
use tomo_onnx::ort::session::Session;
use tomo_onnx::ort::value::Tensor;

use super::{OcrError, session, to_nchw};
use crate::Rect;

#[derive(Debug, Clone, PartialEq)]
pub struct DetConfig {
    /// Images whose short side is smaller are scaled up to it (the model was trained on ~736 px inputs;
    /// small UI text at native size is found less reliably).
    pub min_side: u32,
    /// The long side is never scaled beyond this (bounds the cost of a big window).
    pub max_side: u32,
    /// Probability threshold of the text map.
    pub thresh: f32,
    /// Mean probability inside a box below which the box is dropped.
    pub box_thresh: f32,
    pub unclip_ratio: f32,
}

impl Default for DetConfig {
    fn default() -> Self {
        Self {
            min_side: 736,
            max_side: 1600,
            thresh: 0.3,
            box_thresh: 0.5,
            unclip_ratio: 1.6,
        }
    }
}

pub struct TextDetector {
    session: Session,
    path: PathBuf,
    config: DetConfig,
}

impl TextDetector {
    pub fn new(
        path: &Path,
        environment: &ort::environment::Environment,
        config: DetConfig,
    ) -> Result<Self, OcrError> {
        let session = session(path, environment)?;
        if session.inputs().len() != 1 || session.outputs().is_empty() {
            return Err(OcrError::UnexpectedModel {
                path: path.to_path_buf(),
                message: format!(
                    "expected 1 input and 1 output, got {} and {}",
                    session.inputs().len(),
                    session.outputs().len()
                ),
            });
        }
        Ok(Self {
            session,
            path: path.to_path_buf(),
            config,
        })
    }

    /// Text line boxes in `image` coordinates, sorted top to bottom, then left to right.
    pub fn detect(&mut self, image: &RgbImage) -> Result<Vec<Rect>, OcrError> {
        let (width, height) = image.dimensions();
        if width < 4 || height < 4 {
            return Ok(Vec::new());
        }
        let (rw, rh) = scaled_size(width, height, &self.config);
        let resized = image::imageops::resize(image, rw, rh, FilterType::Triangle);
        let input = to_nchw(&resized, rw as usize, rh as usize);
        let failed = |e: ort::Error| OcrError::Inference {
            stage: "detection",
            message: e.to_string(),
        };
        let tensor = Tensor::from_array((vec![1_i64, 3, i64::from(rh), i64::from(rw)], input))
            .map_err(failed)?;
        let outputs = self.session.run(ort::inputs![tensor]).map_err(failed)?;
        let (shape, prob) = outputs[0].try_extract_tensor::<f32>().map_err(failed)?;
        let expected = rw as usize * rh as usize;
        if prob.len() != expected {
            return Err(OcrError::UnexpectedModel {
                path: self.path.clone(),
                message: format!("probability map has shape {shape:?}, expected {rh}×{rw}"),
            });
        }
        let boxes = boxes_from_map(prob, rw, rh, &self.config);
        let (sx, sy) = (width as f32 / rw as f32, height as f32 / rh as f32);
        let mut scaled: Vec<Rect> = boxes
            .into_iter()
            .filter_map(|b| {
                let x0 = (b.x as f32 * sx).floor() as u32;
                let y0 = (b.y as f32 * sy).floor() as u32;
                let x1 = (((b.x + b.width) as f32) * sx).ceil().min(width as f32) as u32;
                let y1 = (((b.y + b.height) as f32) * sy).ceil().min(height as f32) as u32;
                (x1 > x0 + 3 && y1 > y0 + 3).then(|| Rect::new(x0, y0, x1 - x0, y1 - y0))
            })
            .collect();
        sort_reading_order(&mut scaled);
        Ok(scaled)
    }
}

/// Multiples of 32 (the network downsamples 32×), short side up to `min_side` unless that pushes the long
/// side past `max_side`.
pub(crate) fn scaled_size(width: u32, height: u32, config: &DetConfig) -> (u32, u32) {
    let (short, long) = (width.min(height) as f32, width.max(height) as f32);
    let mut ratio = if short < config.min_side as f32 {
        config.min_side as f32 / short
    } else {
        1.0
    };
    if long * ratio > config.max_side as f32 {
        ratio = config.max_side as f32 / long;
    }
    let round32 = |v: f32| ((v / 32.0).round() as u32).max(1) * 32;
    (
        round32(width as f32 * ratio),
        round32(height as f32 * ratio),
    )
}

/// Connected components (8-neighbour) of `prob > thresh` after a 2×2 dilation, as unclipped rectangles in
/// map coordinates.
pub(crate) fn boxes_from_map(
    prob: &[f32],
    width: u32,
    height: u32,
    config: &DetConfig,
) -> Vec<Rect> {
    let (w, h) = (width as usize, height as usize);
    let mut mask = vec![false; w * h];
    for y in 0..h {
        for x in 0..w {
            // Dilation with a 2×2 kernel anchored top-left, as DB's reference post-processing does: it
            // joins characters split by one-pixel gaps.
            let on = |xx: usize, yy: usize| prob[yy * w + xx] > config.thresh;
            mask[y * w + x] = on(x, y)
                || (x > 0 && on(x - 1, y))
                || (y > 0 && on(x, y - 1))
                || (x > 0 && y > 0 && on(x - 1, y - 1));
        }
    }
    let mut seen = vec![false; w * h];
    let mut boxes = Vec::new();
    let mut queue = VecDeque::new();
    for start in 0..w * h {
        if !mask[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        queue.push_back(start);
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        while let Some(i) = queue.pop_front() {
            let (x, y) = (i % w, i / w);
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
            for dy in -1_i64..=1 {
                for dx in -1_i64..=1 {
                    let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                    if nx < 0 || ny < 0 || nx >= w as i64 || ny >= h as i64 {
                        continue;
                    }
                    let j = ny as usize * w + nx as usize;
                    if mask[j] && !seen[j] {
                        seen[j] = true;
                        queue.push_back(j);
                    }
                }
            }
        }
        let (bw, bh) = (x1 - x0 + 1, y1 - y0 + 1);
        if bw.min(bh) < 3 {
            continue;
        }
        let mut sum = 0.0_f32;
        for y in y0..=y1 {
            sum += prob[y * w + x0..=y * w + x1].iter().sum::<f32>();
        }
        if sum / ((bw * bh) as f32) < config.box_thresh {
            continue;
        }
        let distance = (bw * bh) as f32 * config.unclip_ratio / (2 * (bw + bh)) as f32;
        let grow = distance.round() as usize;
        let (ux0, uy0) = (x0.saturating_sub(grow), y0.saturating_sub(grow));
        let (ux1, uy1) = ((x1 + grow).min(w - 1), (y1 + grow).min(h - 1));
        let (uw, uh) = (ux1 - ux0 + 1, uy1 - uy0 + 1);
        if uw.min(uh) < 5 {
            continue;
        }
        boxes.push(Rect::new(ux0 as u32, uy0 as u32, uw as u32, uh as u32));
    }
    boxes
}

/// Top to bottom; boxes whose tops are within half a line of each other count as one row, left to right.
pub(crate) fn sort_reading_order(boxes: &mut [Rect]) {
    boxes.sort_by_key(|b| (b.y, b.x));
    for i in 1..boxes.len() {
        let mut j = i;
        while j > 0 {
            let (a, b) = (boxes[j - 1], boxes[j]);
            let same_row = b.y.abs_diff(a.y) < a.height.min(b.height) / 2;
            if same_row && b.x < a.x {
                boxes.swap(j - 1, j);
                j -= 1;
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_multiples_of_32_and_capped() {
        let config = DetConfig::default();
        let (w, h) = scaled_size(400, 100, &config);
        assert_eq!((w % 32, h % 32), (0, 0));
        assert!(w <= 1600 && h >= 384, "{w}×{h}");
        let (w, h) = scaled_size(3840, 2160, &config);
        assert!(
            w <= 1600 && h <= 1600 && w % 32 == 0 && h % 32 == 0,
            "{w}×{h}"
        );
    }

    #[test]
    fn two_blobs_become_two_grown_boxes() {
        let (w, h) = (64_u32, 32_u32);
        let mut prob = vec![0.0_f32; (w * h) as usize];
        for y in 10..16 {
            for x in 5..25 {
                prob[(y * w + x) as usize] = 0.9;
            }
            for x in 40..60 {
                prob[(y * w + x) as usize] = 0.9;
            }
        }
        let mut boxes = boxes_from_map(&prob, w, h, &DetConfig::default());
        sort_reading_order(&mut boxes);
        assert_eq!(boxes.len(), 2, "{boxes:?}");
        assert!(boxes[0].x < 5 && boxes[0].y < 10 && boxes[0].x + boxes[0].width > 25);
        assert!(boxes[1].x > 25);
    }

    #[test]
    fn faint_blobs_are_dropped() {
        let (w, h) = (32_u32, 32_u32);
        let mut prob = vec![0.0_f32; (w * h) as usize];
        for y in 10..20 {
            for x in 5..25 {
                prob[(y * w + x) as usize] = 0.35;
            }
        }
        assert!(boxes_from_map(&prob, w, h, &DetConfig::default()).is_empty());
    }
}
