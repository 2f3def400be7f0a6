//! Frame difference: is this frame worth reading, and which part of it changed?
//!
//! Each frame is shrunk to a small greyscale thumbnail (`cells_across` wide, height by aspect ratio); each
//! thumbnail pixel is the mean brightness of one cell of the frame. A cell changed when its brightness moved
//! by more than `cell_threshold` since the last frame that was sent to OCR (not since the previous capture:
//! a slow fade still adds up to a change).

use image::imageops::FilterType;
use image::{GrayImage, RgbaImage};

use crate::Rect;

#[derive(Debug, Clone, PartialEq)]
pub struct DiffConfig {
    pub cells_across: u32,
    /// Brightness change (0..255) of a cell that counts as a change; below it is noise (cursor blink
    /// antialiasing, compression).
    pub cell_threshold: u8,
    /// Cells added around the changed cells' bounding box, so the OCR crop holds whole glyphs.
    pub pad_cells: u32,
    /// Widen the region to the whole width of the frame: a line whose middle changed is read whole,
    /// instead of as word fragments cut at the region's edge.
    pub full_width: bool,
}

impl Default for DiffConfig {
    fn default() -> Self {
        Self {
            cells_across: 64,
            cell_threshold: 6,
            pad_cells: 1,
            full_width: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffDecision {
    /// Nothing changed since the last frame sent to OCR.
    Unchanged,
    /// Read this region of the frame.
    Changed(Rect),
    /// First frame (or a new size/target, or a forced capture): read all of it.
    Whole(Rect),
}

#[derive(Debug, Clone)]
pub struct FrameDiff {
    config: DiffConfig,
    reference: Option<(u32, u32, GrayImage)>,
}

impl FrameDiff {
    pub fn new(config: DiffConfig) -> Self {
        Self {
            config,
            reference: None,
        }
    }

    /// Forget the reference: the next frame is read whole (the target changed).
    pub fn reset(&mut self) {
        self.reference = None;
    }

    /// Compares `frame` with the reference. When the answer is not `Unchanged` the frame becomes the new
    /// reference (it is what OCR will read). `force` reads the whole frame even if nothing changed.
    pub fn check(&mut self, frame: &RgbaImage, force: bool) -> DiffDecision {
        let (width, height) = frame.dimensions();
        let whole = Rect::new(0, 0, width, height);
        if width == 0 || height == 0 {
            return DiffDecision::Unchanged;
        }
        let thumb = thumbnail(frame, self.config.cells_across);
        let decision = match &self.reference {
            Some((w, h, _)) if force && *w == width && *h == height => DiffDecision::Whole(whole),
            Some((w, h, reference)) if *w == width && *h == height => {
                match changed_cells(reference, &thumb, self.config.cell_threshold) {
                    None => DiffDecision::Unchanged,
                    Some(cells) => DiffDecision::Changed(self.cells_to_pixels(
                        cells,
                        thumb.dimensions(),
                        (width, height),
                    )),
                }
            }
            _ => DiffDecision::Whole(whole),
        };
        if decision != DiffDecision::Unchanged {
            self.reference = Some((width, height, thumb));
        }
        decision
    }

    fn cells_to_pixels(&self, cells: Rect, thumb: (u32, u32), frame: (u32, u32)) -> Rect {
        let pad = self.config.pad_cells;
        let (tw, th) = thumb;
        let (fw, fh) = frame;
        let x0 = cells.x.saturating_sub(pad);
        let y0 = cells.y.saturating_sub(pad);
        let x1 = (cells.x + cells.width + pad).min(tw);
        let y1 = (cells.y + cells.height + pad).min(th);
        // Cell edges in frame pixels, rounded outward.
        let px = |c: u32, total_cells: u32, total_px: u32| {
            (u64::from(c) * u64::from(total_px) / u64::from(total_cells.max(1))) as u32
        };
        let px_up = |c: u32, total_cells: u32, total_px: u32| {
            (u64::from(c) * u64::from(total_px)).div_ceil(u64::from(total_cells.max(1))) as u32
        };
        let (left, right) = if self.config.full_width {
            (0, fw)
        } else {
            (px(x0, tw, fw), px_up(x1, tw, fw))
        };
        let top = px(y0, th, fh);
        let bottom = px_up(y1, th, fh);
        Rect::new(left, top, right - left, bottom - top).clip(fw, fh)
    }
}

pub(crate) fn thumbnail(frame: &RgbaImage, cells_across: u32) -> GrayImage {
    let (width, height) = frame.dimensions();
    let tw = cells_across.clamp(1, width);
    let th =
        ((u64::from(height) * u64::from(tw)).div_ceil(u64::from(width)) as u32).clamp(1, height);
    let grey = image::imageops::grayscale(frame);
    // Triangle filtering averages every source pixel into its cell, so a one-character change moves the
    // cell's mean instead of being skipped by point sampling.
    image::imageops::resize(&grey, tw, th, FilterType::Triangle)
}

/// Bounding box (in cells) of the cells that differ by more than `threshold`, or `None`.
pub(crate) fn changed_cells(a: &GrayImage, b: &GrayImage, threshold: u8) -> Option<Rect> {
    if a.dimensions() != b.dimensions() {
        let (w, h) = b.dimensions();
        return Some(Rect::new(0, 0, w, h));
    }
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    for (x, y, pb) in b.enumerate_pixels() {
        let pa = a.get_pixel(x, y);
        if pa[0].abs_diff(pb[0]) > threshold {
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
    }
    (x0 != u32::MAX).then(|| Rect::new(x0, y0, x1 - x0 + 1, y1 - y0 + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Rgba;

    fn blank(w: u32, h: u32) -> RgbaImage {
        RgbaImage::from_pixel(w, h, Rgba([255, 255, 255, 255]))
    }

    fn draw_block(img: &mut RgbaImage, x: u32, y: u32, w: u32, h: u32) {
        for yy in y..y + h {
            for xx in x..x + w {
                img.put_pixel(xx, yy, Rgba([0, 0, 0, 255]));
            }
        }
    }

    #[test]
    fn first_frame_is_whole_then_unchanged_then_forced() {
        let mut diff = FrameDiff::new(DiffConfig::default());
        let frame = blank(640, 480);
        assert_eq!(
            diff.check(&frame, false),
            DiffDecision::Whole(Rect::new(0, 0, 640, 480))
        );
        assert_eq!(diff.check(&frame, false), DiffDecision::Unchanged);
        assert_eq!(
            diff.check(&frame, true),
            DiffDecision::Whole(Rect::new(0, 0, 640, 480))
        );
        diff.reset();
        assert!(matches!(diff.check(&frame, false), DiffDecision::Whole(_)));
    }

    #[test]
    fn a_small_change_gives_a_padded_region_around_it() {
        let config = DiffConfig {
            full_width: false,
            ..DiffConfig::default()
        };
        let mut diff = FrameDiff::new(config);
        let mut frame = blank(640, 480);
        diff.check(&frame, false);
        // A "word" of 60×14 px at (300, 200): 10 px cells → cells 30..36 × 20..21.
        draw_block(&mut frame, 300, 200, 60, 14);
        let DiffDecision::Changed(region) = diff.check(&frame, false) else {
            panic!("expected a change");
        };
        assert!(region.x <= 300 && region.y <= 200, "{region:?}");
        assert!(
            region.x + region.width >= 360 && region.y + region.height >= 214,
            "{region:?}"
        );
        // Padded by about a cell, not the whole frame.
        assert!(region.x >= 270 && region.width <= 120, "{region:?}");
        assert!(region.y >= 170 && region.height <= 60, "{region:?}");
        // The changed frame is the new reference.
        assert_eq!(diff.check(&frame, false), DiffDecision::Unchanged);
    }

    #[test]
    fn full_width_regions_span_the_frame_and_noise_is_ignored() {
        let mut diff = FrameDiff::new(DiffConfig::default());
        let mut frame = blank(640, 480);
        diff.check(&frame, false);
        // One pixel a little darker: under the threshold once averaged into its cell.
        frame.put_pixel(10, 10, Rgba([200, 200, 200, 255]));
        assert_eq!(diff.check(&frame, false), DiffDecision::Unchanged);
        draw_block(&mut frame, 500, 400, 30, 12);
        let DiffDecision::Changed(region) = diff.check(&frame, false) else {
            panic!("expected a change");
        };
        assert_eq!((region.x, region.width), (0, 640));
        assert!(
            region.y <= 400 && region.y + region.height >= 412,
            "{region:?}"
        );
    }

    #[test]
    fn a_resized_window_is_read_whole() {
        let mut diff = FrameDiff::new(DiffConfig::default());
        diff.check(&blank(640, 480), false);
        assert_eq!(
            diff.check(&blank(800, 600), false),
            DiffDecision::Whole(Rect::new(0, 0, 800, 600))
        );
    }
}
