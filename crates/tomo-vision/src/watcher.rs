//! The screen watcher: a capture thread at `fps` → frame diff → bounded queue (drop oldest) → OCR thread →
//! [`WatchOutput`]s on a channel.
//!
//! Nothing here panics or gives up on a missing, minimised or uncapturable window: the capture thread
//! reports `WaitingForWindow` with the reason and tries again on the next tick.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use image::{RgbImage, RgbaImage};

use crate::Rect;
use crate::dedup::LineMemory;
use crate::diff::{DiffConfig, DiffDecision, FrameDiff};
use crate::occlusion;
use crate::ocr::{OcrEngine, OcrError, OcrModels, PpOcr};
use crate::queue::DropOldest;
use crate::target::{self, TargetError, TitlePattern};

#[derive(Debug, Clone, PartialEq)]
pub struct WatchConfig {
    /// Title pattern of the window to watch (`/regex/` or a case-insensitive substring).
    pub window_title: Option<String>,
    /// Captures per second.
    pub fps: f32,
    /// Read the whole window at least this often even when the diff sees no change (catches changes
    /// below the diff threshold; repeats are filtered by the line memory anyway).
    pub force_every_s: f32,
    /// Watch the primary monitor when no window matches (or none is configured). Off by default: the user
    /// chose a window, and reading their whole screen is a bigger ask.
    pub monitor_fallback: bool,
    /// Languages to read. PP-OCRv4's Chinese model reads `en` and `zh` together; others are refused.
    pub languages: Vec<String>,
    /// Frames waiting for OCR; when full the oldest is dropped (counted in [`WatchStats::dropped`]).
    pub queue_capacity: usize,
    pub diff: DiffConfig,
    /// How long a reported line is remembered (and so not reported again) after it was last seen.
    pub memory_ttl_s: u64,
}

impl Default for WatchConfig {
    fn default() -> Self {
        Self {
            window_title: None,
            fps: 1.0,
            force_every_s: 30.0,
            monitor_fallback: false,
            languages: vec!["en".into(), "zh".into()],
            queue_capacity: 2,
            diff: DiffConfig::default(),
            memory_ttl_s: 600,
        }
    }
}

pub const SUPPORTED_LANGUAGES: [&str; 2] = ["en", "zh"];

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WatchError {
    #[error("invalid watcher config field `{field}`: {message}")]
    Config {
        field: &'static str,
        message: String,
    },
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Ocr(#[from] OcrError),
    #[error("cannot start the {name} thread: {message}")]
    Thread { name: &'static str, message: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchStatus {
    /// Capturing `window` (its title, or `monitor <name>` with the monitor fallback).
    Watching {
        window: String,
    },
    /// No capture possible right now (no matching window, minimised, capture refused); retrying.
    WaitingForWindow {
        reason: String,
    },
    Stopped,
}

/// New text seen on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// Capture time, ms since the Unix epoch.
    pub at_ms: u64,
    /// The window's title (or `monitor <name>`).
    pub window: String,
    /// Only the lines not seen recently, top to bottom, one per line.
    pub text: String,
    /// Where those lines are, in window coordinates.
    pub region: Rect,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchOutput {
    Status(WatchStatus),
    Observation(Observation),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WatchStats {
    pub captures: u64,
    pub unchanged: u64,
    pub forced: u64,
    pub queued: u64,
    /// Frames dropped because OCR was behind (oldest first).
    pub dropped: u64,
    pub ocr_runs: u64,
    pub ocr_failures: u64,
    pub observations: u64,
}

#[derive(Default)]
struct Counters {
    captures: AtomicU64,
    unchanged: AtomicU64,
    forced: AtomicU64,
    queued: AtomicU64,
    ocr_runs: AtomicU64,
    ocr_failures: AtomicU64,
    observations: AtomicU64,
}

struct Shared {
    stop: AtomicBool,
    pattern: Mutex<Option<TitlePattern>>,
    /// Bumped by `retarget`, so the capture thread starts over with a whole-frame read.
    generation: AtomicU64,
    counters: Counters,
    queue: DropOldest<Job>,
}

struct Job {
    at_ms: u64,
    window: String,
    region: Rect,
    image: RgbImage,
}

pub struct ScreenWatcher;

impl ScreenWatcher {
    /// Loads PP-OCRv4 from `models` and starts watching.
    pub fn start(
        config: WatchConfig,
        models: &OcrModels,
    ) -> Result<(WatchHandle, Receiver<WatchOutput>), WatchError> {
        validate(&config)?;
        let engine = PpOcr::new(models)?;
        Self::start_with_engine(config, Box::new(engine))
    }

    /// Starts watching with any OCR engine.
    pub fn start_with_engine(
        config: WatchConfig,
        engine: Box<dyn OcrEngine>,
    ) -> Result<(WatchHandle, Receiver<WatchOutput>), WatchError> {
        validate(&config)?;
        let pattern = config
            .window_title
            .as_deref()
            .map(TitlePattern::parse)
            .transpose()?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            pattern: Mutex::new(pattern),
            generation: AtomicU64::new(0),
            counters: Counters::default(),
            queue: DropOldest::new(config.queue_capacity),
        });
        let (tx, rx) = channel();
        let spawn_failed = |name: &'static str| {
            move |e: std::io::Error| WatchError::Thread {
                name,
                message: e.to_string(),
            }
        };
        let ocr = {
            let (shared, tx) = (Arc::clone(&shared), tx.clone());
            let memory = LineMemory::new(config.memory_ttl_s.saturating_mul(1000), 1024);
            std::thread::Builder::new()
                .name("tomo-vision-ocr".into())
                .spawn(move || ocr_loop(&shared, engine, memory, &tx))
                .map_err(spawn_failed("OCR"))?
        };
        let capture = {
            let (for_thread, tx) = (Arc::clone(&shared), tx.clone());
            std::thread::Builder::new()
                .name("tomo-vision-capture".into())
                .spawn(move || capture_loop(&for_thread, &config, &tx))
                .map_err(|e| {
                    shared.queue.close();
                    spawn_failed("capture")(e)
                })?
        };
        let handle = WatchHandle {
            shared,
            threads: vec![capture, ocr],
            tx,
        };
        Ok((handle, rx))
    }
}

/// A forced re-read at most once a day is "never" in practice; bigger numbers overflow a `Duration`.
const MAX_FORCE_EVERY_S: f32 = 86_400.0;

pub(crate) fn validate(config: &WatchConfig) -> Result<(), WatchError> {
    if !(config.fps.is_finite() && config.fps > 0.0 && config.fps <= 30.0) {
        return Err(WatchError::Config {
            field: "fps",
            message: format!("{} is not in (0, 30]", config.fps),
        });
    }
    if !(config.force_every_s.is_finite()
        && config.force_every_s > 0.0
        && config.force_every_s <= MAX_FORCE_EVERY_S)
    {
        return Err(WatchError::Config {
            field: "force_every_s",
            message: format!(
                "{} must be a positive number of seconds up to a day",
                config.force_every_s
            ),
        });
    }
    if let Some(language) = config
        .languages
        .iter()
        .find(|l| !SUPPORTED_LANGUAGES.contains(&l.as_str()))
    {
        return Err(WatchError::Config {
            field: "languages",
            message: format!("`{language}` is not supported (supported: en, zh)"),
        });
    }
    if config.window_title.is_none() && !config.monitor_fallback {
        return Err(WatchError::Config {
            field: "window_title",
            message: "no window to watch: set a title pattern or enable monitor_fallback".into(),
        });
    }
    Ok(())
}

/// Controls a running watcher. Dropping it stops the watcher.
pub struct WatchHandle {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    tx: Sender<WatchOutput>,
}

impl WatchHandle {
    /// Watch another window from the next capture on (its first frame is read whole).
    pub fn retarget(&self, window_title: &str) -> Result<(), WatchError> {
        let pattern = TitlePattern::parse(window_title)?;
        *self
            .shared
            .pattern
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(pattern);
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    pub fn stats(&self) -> WatchStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        WatchStats {
            captures: get(&c.captures),
            unchanged: get(&c.unchanged),
            forced: get(&c.forced),
            queued: get(&c.queued),
            dropped: self.shared.queue.dropped(),
            ocr_runs: get(&c.ocr_runs),
            ocr_failures: get(&c.ocr_failures),
            observations: get(&c.observations),
        }
    }

    /// Stops both threads (waits for an OCR pass in progress), then sends `Stopped`.
    pub fn stop(mut self) -> WatchStats {
        self.shutdown();
        self.stats()
    }

    fn shutdown(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.queue.close();
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                tracing::error!("a screen watcher thread panicked");
            }
        }
        let _ = self.tx.send(WatchOutput::Status(WatchStatus::Stopped));
    }
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What was captured this tick: the frame, a name for it, and an identity (a new identity = read whole).
type Captured = (RgbaImage, String, (bool, u32));

/// Why nothing was captured this tick; the watcher reports it as `WaitingForWindow { reason }`.
#[derive(Debug, thiserror::Error)]
enum NoCapture {
    #[error("window `{0}` is minimised")]
    Minimised(String),
    #[error("no window title matches {0}")]
    NoMatch(String),
    #[error("no window title configured")]
    NoPattern,
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("{reason}; monitor fallback failed: {fallback}")]
    FallbackFailed {
        reason: Box<NoCapture>,
        fallback: TargetError,
    },
}

fn capture_target(shared: &Shared, config: &WatchConfig) -> Result<Captured, NoCapture> {
    let pattern = shared
        .pattern
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let window = match &pattern {
        Some(pattern) => match target::find_window(pattern) {
            Ok(Some((_, info))) if info.minimized => Err(NoCapture::Minimised(info.title)),
            Ok(Some((window, info))) => target::capture_window(&window, &info)
                .map(|mut image| {
                    blank_what_covers(&mut image, &info);
                    (image, info.title.clone(), (false, info.id))
                })
                .map_err(NoCapture::from),
            Ok(None) => Err(NoCapture::NoMatch(pattern.to_string())),
            Err(e) => Err(e.into()),
        },
        None => Err(NoCapture::NoPattern),
    };
    match window {
        Err(reason) if config.monitor_fallback => target::capture_primary_monitor()
            .map(|(image, info)| (image, format!("monitor {}", info.name), (true, info.id)))
            .map_err(|fallback| NoCapture::FallbackFailed {
                reason: Box::new(reason),
                fallback,
            }),
        other => other,
    }
}

/// Only the chosen window is read: without a compositor, parts of the capture covered by other windows show
/// those windows, so they are blanked (see [`occlusion`]).
fn blank_what_covers(image: &mut RgbaImage, info: &target::WindowInfo) {
    let Some(covers) = occlusion::covering_windows(info.id) else {
        return;
    };
    let area = occlusion::ScreenRect {
        x: info.x,
        y: info.y,
        width: info.width,
        height: info.height,
    };
    let blanked = occlusion::blank_covered(image, area, &covers);
    if blanked > 0 {
        tracing::debug!(blanked, window = %info.title, "blanked what covers the watched window");
    }
}

fn capture_loop(shared: &Shared, config: &WatchConfig, tx: &Sender<WatchOutput>) {
    // `validate` bounds both; the fallbacks only keep a config built in code from panicking.
    let period = Duration::try_from_secs_f32(1.0 / config.fps).unwrap_or(Duration::from_secs(1));
    let force_every =
        Duration::try_from_secs_f32(config.force_every_s).unwrap_or(Duration::from_secs(30));
    let mut diff = FrameDiff::new(config.diff.clone());
    let mut identity = None;
    let mut status: Option<WatchStatus> = None;
    let mut generation = shared.generation.load(Ordering::SeqCst);
    let mut last_read = Instant::now();
    let send_status = |new: WatchStatus, status: &mut Option<WatchStatus>| {
        if status.as_ref() != Some(&new) {
            tracing::info!(?new, "screen watcher status");
            let _ = tx.send(WatchOutput::Status(new.clone()));
            *status = Some(new);
        }
    };
    let mut next_tick = Instant::now();
    while !shared.stop.load(Ordering::SeqCst) {
        let current = shared.generation.load(Ordering::SeqCst);
        if current != generation {
            generation = current;
            identity = None;
        }
        match capture_target(shared, config) {
            Err(reason) => {
                identity = None;
                let reason = reason.to_string();
                send_status(WatchStatus::WaitingForWindow { reason }, &mut status);
            }
            Ok((frame, window, id)) => {
                shared.counters.captures.fetch_add(1, Ordering::Relaxed);
                if identity != Some(id) {
                    identity = Some(id);
                    diff.reset();
                }
                send_status(
                    WatchStatus::Watching {
                        window: window.clone(),
                    },
                    &mut status,
                );
                let force = last_read.elapsed() >= force_every;
                match diff.check(&frame, force) {
                    DiffDecision::Unchanged => {
                        shared.counters.unchanged.fetch_add(1, Ordering::Relaxed);
                    }
                    DiffDecision::Changed(region) | DiffDecision::Whole(region) => {
                        if force {
                            shared.counters.forced.fetch_add(1, Ordering::Relaxed);
                        }
                        last_read = Instant::now();
                        shared.counters.queued.fetch_add(1, Ordering::Relaxed);
                        let job = Job {
                            at_ms: now_ms(),
                            window,
                            region,
                            image: crop_rgb(&frame, region),
                        };
                        if shared.queue.push(job) {
                            tracing::debug!("OCR is behind: dropped the oldest queued frame");
                        }
                    }
                }
            }
        }
        next_tick += period;
        let now = Instant::now();
        if next_tick < now {
            // Capture took longer than a period: do not try to catch up with a burst.
            next_tick = now;
        }
        // Sleep in short steps so `stop` is prompt even at low fps.
        while !shared.stop.load(Ordering::SeqCst) {
            let left = next_tick.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
}

fn crop_rgb(frame: &RgbaImage, region: Rect) -> RgbImage {
    let region = region.clip(frame.width(), frame.height());
    RgbImage::from_fn(region.width, region.height, |x, y| {
        let p = frame.get_pixel(region.x + x, region.y + y);
        image::Rgb([p[0], p[1], p[2]])
    })
}

fn ocr_loop(
    shared: &Shared,
    mut engine: Box<dyn OcrEngine>,
    mut memory: LineMemory,
    tx: &Sender<WatchOutput>,
) {
    while let Some(job) = shared.queue.pop() {
        let lines = match engine.read(&job.image) {
            Ok(lines) => lines,
            Err(error) => {
                shared.counters.ocr_failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%error, window = %job.window, "OCR failed on a frame");
                continue;
            }
        };
        shared.counters.ocr_runs.fetch_add(1, Ordering::Relaxed);
        let mut fresh_lines = Vec::new();
        let mut region: Option<(u32, u32, u32, u32)> = None;
        for line in &lines {
            let fresh = memory.filter_new([line.text.as_str()], job.at_ms);
            if fresh.is_empty() {
                continue;
            }
            fresh_lines.extend(fresh);
            let b = line.bbox.offset(job.region.x, job.region.y);
            let (x0, y0, x1, y1) = region.unwrap_or((u32::MAX, u32::MAX, 0, 0));
            region = Some((
                x0.min(b.x),
                y0.min(b.y),
                x1.max(b.x + b.width),
                y1.max(b.y + b.height),
            ));
        }
        let Some((x0, y0, x1, y1)) = region else {
            continue;
        };
        shared.counters.observations.fetch_add(1, Ordering::Relaxed);
        let observation = Observation {
            at_ms: job.at_ms,
            window: job.window,
            text: fresh_lines.join("\n"),
            region: Rect::new(x0, y0, x1 - x0, y1 - y0),
        };
        tracing::debug!(text = %observation.text, "new text on screen");
        if tx.send(WatchOutput::Observation(observation)).is_err() {
            // Nobody listens any more; the handle's stop/drop ends the capture thread.
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_validated_with_the_field_named() {
        let ok = WatchConfig {
            window_title: Some("x".into()),
            ..WatchConfig::default()
        };
        assert!(validate(&ok).is_ok());
        for (config, field) in [
            (
                WatchConfig {
                    fps: 0.0,
                    ..ok.clone()
                },
                "fps",
            ),
            (
                WatchConfig {
                    force_every_s: -1.0,
                    ..ok.clone()
                },
                "force_every_s",
            ),
            (
                WatchConfig {
                    force_every_s: 1e20,
                    ..ok.clone()
                },
                "force_every_s",
            ),
            (
                WatchConfig {
                    languages: vec!["fr".into()],
                    ..ok.clone()
                },
                "languages",
            ),
            (
                WatchConfig {
                    window_title: None,
                    ..ok.clone()
                },
                "window_title",
            ),
        ] {
            match validate(&config) {
                Err(WatchError::Config { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }
}
