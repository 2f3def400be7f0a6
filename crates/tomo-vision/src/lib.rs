//! Tomo's eyes: find a window (or a monitor), capture it, notice what changed, read the changed part with
//! offline OCR, and report only text that is new.
//!
//! - [`target`]: list windows and monitors, pick one by title pattern, capture it (xcap).
//! - [`diff`]: small greyscale thumbnails compared cell by cell → the changed region, or nothing.
//! - [`ocr`]: the [`OcrEngine`] trait and PP-OCRv4 through ONNX Runtime ([`PpOcr`]).
//! - [`dedup`]: a short memory of lines already seen so flicker and repeats are not reported twice.
//! - [`watcher`]: capture thread → bounded queue → OCR thread → [`WatchOutput`]s.
//! - [`bench`]: CPU use of the watcher on a static window and OCR time per changed frame.

pub mod bench;
pub mod dedup;
pub mod diff;
pub mod occlusion;
pub mod ocr;
pub mod plugin;
mod queue;
pub mod target;
pub mod watcher;
#[cfg(target_os = "linux")]
mod x11_titles;

pub use dedup::LineMemory;
pub use diff::{DiffConfig, DiffDecision, FrameDiff};
pub use ocr::{OcrEngine, OcrError, OcrLine, OcrModels, PpOcr};
pub use plugin::{ScreenWatchConfig, ScreenWatchFactory};
pub use target::{MonitorInfo, TargetError, TitlePattern, WindowInfo, list_monitors, list_windows};
pub use watcher::{
    Observation, ScreenWatcher, WatchConfig, WatchError, WatchHandle, WatchOutput, WatchStats,
    WatchStatus,
};

/// An axis-aligned rectangle in pixels, relative to the captured image's top-left corner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

impl Rect {
    pub const fn new(x: u32, y: u32, width: u32, height: u32) -> Self {
        Self {
            x,
            y,
            width,
            height,
        }
    }

    /// This rectangle clipped to `width`×`height` (empty if it lies outside).
    pub fn clip(self, width: u32, height: u32) -> Self {
        let x = self.x.min(width);
        let y = self.y.min(height);
        let right = self.x.saturating_add(self.width).min(width);
        let bottom = self.y.saturating_add(self.height).min(height);
        Self::new(x, y, right - x, bottom - y)
    }

    pub fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0
    }

    /// Shifted by `(dx, dy)`: a rectangle of a crop, back in the coordinates of the whole image.
    pub fn offset(self, dx: u32, dy: u32) -> Self {
        Self::new(self.x + dx, self.y + dy, self.width, self.height)
    }
}
