//! Benchmark (not a test): what watching costs. `tomo bench vision` prints [`run`]'s report.
//!
//! 1. OCR time per changed frame: the target is captured once and read whole, then as a band of a quarter
//!    of its height (a typical changed region with `full_width` diff regions), `repeats` times each.
//! 2. CPU use of the watcher on a static window at `fps`: after the first read, process CPU time
//!    (user + system, from `/proc/self/stat`) over `idle_seconds` of wall time.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use image::RgbImage;

use crate::Rect;
use crate::ocr::{OcrEngine, OcrModels, PpOcr};
use crate::target::{self, TitlePattern};
use crate::watcher::{ScreenWatcher, WatchConfig, WatchError, WatchStats};

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub models: OcrModels,
    /// Window to use; `None` uses the primary monitor.
    pub window_title: Option<String>,
    pub fps: f32,
    pub idle_seconds: f32,
    pub repeats: usize,
}

impl BenchConfig {
    pub fn new(models: OcrModels, window_title: Option<String>) -> Self {
        Self {
            models,
            window_title,
            fps: 1.0,
            idle_seconds: 10.0,
            repeats: 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    pub target: String,
    pub frame: (u32, u32),
    pub lines_read: usize,
    pub ocr_whole_frame_ms: f64,
    pub ocr_band_ms: f64,
    pub idle_fps: f32,
    pub idle_seconds: f64,
    /// CPU time / wall time over the idle window, in percent of one core.
    pub idle_cpu_percent: f64,
    pub idle_stats: WatchStats,
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "target: {} ({}×{})",
            self.target, self.frame.0, self.frame.1
        )?;
        writeln!(
            f,
            "OCR whole frame: {:.0} ms ({} lines); quarter-height band: {:.0} ms",
            self.ocr_whole_frame_ms, self.lines_read, self.ocr_band_ms
        )?;
        write!(
            f,
            "watcher at {} fps on a static target: {:.1}% CPU over {:.1} s ({} captures, {} unchanged, {} OCR runs)",
            self.idle_fps,
            self.idle_cpu_percent,
            self.idle_seconds,
            self.idle_stats.captures,
            self.idle_stats.unchanged,
            self.idle_stats.ocr_runs
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Watch(#[from] WatchError),
    #[error("benchmark target: {0}")]
    Target(String),
    #[error("cannot read CPU time from {path}: {message}")]
    CpuTime { path: PathBuf, message: String },
}

pub fn run(config: &BenchConfig) -> Result<BenchReport, BenchError> {
    let (frame, target) = capture_once(config.window_title.as_deref())?;
    let mut engine = PpOcr::new(&config.models).map_err(WatchError::from)?;
    let repeats = config.repeats.max(1);
    let band = Rect::new(0, 0, frame.width(), (frame.height() / 4).max(1));
    let band_image =
        image::imageops::crop_imm(&frame, band.x, band.y, band.width, band.height).to_image();
    // One untimed pass: the first run of an ONNX session allocates and plans.
    let lines_read = engine.read(&frame).map_err(WatchError::from)?.len();
    let time = |engine: &mut PpOcr, image: &RgbImage| -> Result<f64, BenchError> {
        let start = Instant::now();
        for _ in 0..repeats {
            engine.read(image).map_err(WatchError::from)?;
        }
        Ok(start.elapsed().as_secs_f64() * 1000.0 / repeats as f64)
    };
    let ocr_whole_frame_ms = time(&mut engine, &frame)?;
    let ocr_band_ms = time(&mut engine, &band_image)?;
    drop(engine);

    let watch = WatchConfig {
        window_title: config.window_title.clone(),
        monitor_fallback: config.window_title.is_none(),
        fps: config.fps,
        // No forced read during the measurement: this measures the cost of watching, not of reading.
        force_every_s: 3600.0,
        ..WatchConfig::default()
    };
    let (handle, _outputs) = ScreenWatcher::start(watch, &config.models)?;
    let warmup = Instant::now();
    while handle.stats().ocr_runs == 0 && warmup.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = handle.stats();
    let cpu_start = cpu_seconds()?;
    let wall = Instant::now();
    std::thread::sleep(Duration::from_secs_f32(config.idle_seconds.max(1.0)));
    let cpu = cpu_seconds()? - cpu_start;
    let idle_seconds = wall.elapsed().as_secs_f64();
    let after = handle.stop();
    Ok(BenchReport {
        target,
        frame: frame.dimensions(),
        lines_read,
        ocr_whole_frame_ms,
        ocr_band_ms,
        idle_fps: config.fps,
        idle_seconds,
        idle_cpu_percent: 100.0 * cpu / idle_seconds,
        idle_stats: WatchStats {
            captures: after.captures - before.captures,
            unchanged: after.unchanged - before.unchanged,
            forced: after.forced - before.forced,
            queued: after.queued - before.queued,
            dropped: after.dropped - before.dropped,
            ocr_runs: after.ocr_runs - before.ocr_runs,
            ocr_failures: after.ocr_failures - before.ocr_failures,
            observations: after.observations - before.observations,
        },
    })
}

fn capture_once(window_title: Option<&str>) -> Result<(RgbImage, String), BenchError> {
    let failed = |e: target::TargetError| BenchError::Target(e.to_string());
    let (rgba, name) = match window_title {
        Some(title) => {
            let pattern = TitlePattern::parse(title).map_err(failed)?;
            let (window, info) = target::find_window(&pattern)
                .map_err(failed)?
                .ok_or_else(|| BenchError::Target(format!("no window title matches `{title}`")))?;
            (
                target::capture_window(&window, &info).map_err(failed)?,
                info.title,
            )
        }
        None => {
            let (image, info) = target::capture_primary_monitor().map_err(failed)?;
            (image, format!("monitor {}", info.name))
        }
    };
    let rgb = RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        let p = rgba.get_pixel(x, y);
        image::Rgb([p[0], p[1], p[2]])
    });
    Ok((rgb, name))
}

/// User + system CPU time of this process. Fields 14 and 15 of `/proc/self/stat` are in clock ticks,
/// which are 100 per second on every Linux we run on (USER_HZ).
fn cpu_seconds() -> Result<f64, BenchError> {
    let path = PathBuf::from("/proc/self/stat");
    let failed = |message: String| BenchError::CpuTime {
        path: path.clone(),
        message,
    };
    let stat = std::fs::read_to_string(&path).map_err(|e| failed(e.to_string()))?;
    // The command name (field 2) may contain spaces; fields after the closing parenthesis are plain.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| failed("no `)` after the command name".into()))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| -> Result<f64, BenchError> {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| failed(format!("field {} is missing or not a number", i + 3)))
    };
    // After `)`, index 0 is field 3 (state): utime is field 14 → index 11, stime → 12.
    Ok((tick(11)? + tick(12)?) / 100.0)
}
