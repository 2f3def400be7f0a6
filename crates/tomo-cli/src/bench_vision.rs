//! `tomo windows`: what the screen watcher could watch.
//! `tomo bench vision`: what the screen watcher costs — CPU at a capture rate on a window that does not
//! change, and OCR time per changed frame (whole frame and a strip), on this machine's real display.

use std::process::ExitCode;

use clap::Args;
use tomo_models::ModelStore;
use tomo_vision::OcrModels;
use tomo_vision::bench::{BenchConfig, run};

#[derive(Debug, Args)]
pub struct VisionBenchArgs {
    /// Title pattern of the window to measure on (default: the primary monitor).
    #[arg(long, short)]
    pub window: Option<String>,
    /// Captures per second while idle.
    #[arg(long, default_value_t = 1.0)]
    pub fps: f32,
    /// How long to watch the unchanged window, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub idle_seconds: f32,
    /// OCR runs per measurement.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
}

pub fn run_vision(args: VisionBenchArgs) -> anyhow::Result<ExitCode> {
    let store = ModelStore::from_env()?;
    let models = OcrModels::in_store(&store.root);
    if let Some(missing) = models.missing() {
        anyhow::bail!(
            "{} is not installed: run `tomo models install ppocr-v4` first",
            missing.display()
        );
    }
    let mut config = BenchConfig::new(models, args.window);
    config.fps = args.fps;
    config.idle_seconds = args.idle_seconds;
    config.repeats = args.repeats.max(1);
    let report = run(&config)?;
    println!("{report}");
    Ok(ExitCode::SUCCESS)
}

/// Prints the windows (title, application, size) and monitors the screen watcher can capture.
pub fn list_targets() -> anyhow::Result<ExitCode> {
    let windows = tomo_vision::list_windows()?;
    println!("windows:");
    for w in windows.iter().filter(|w| !w.title.trim().is_empty()) {
        let state = if w.minimized { "  (minimised)" } else { "" };
        println!(
            "  {:?}  {}  {}x{}{state}",
            w.title, w.app_name, w.width, w.height
        );
    }
    println!("monitors:");
    for m in tomo_vision::list_monitors()? {
        let primary = if m.primary { "  (primary)" } else { "" };
        println!("  {}  {}x{}{primary}", m.name, m.width, m.height);
    }
    Ok(ExitCode::SUCCESS)
}
