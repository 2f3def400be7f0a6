//! Prints [`tomo_vision::bench::run`]'s report (what `tomo bench vision` will show).
//! Usage: `cargo run --release -p tomo-vision --example vision_bench -- [window title] [idle seconds]`
//! (no title: the primary monitor). Under no display: `scripts/xvfb-run.sh cargo run ...`.

use std::path::PathBuf;

use tomo_vision::OcrModels;
use tomo_vision::bench::{BenchConfig, run};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let title = args.next().filter(|t| !t.is_empty());
    let root = std::env::var_os("TOMO_MODELS_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("tomo").join("models")))
        .ok_or("no data directory for the model store")?;
    let mut config = BenchConfig::new(OcrModels::in_store(&root), title);
    if let Some(seconds) = args.next() {
        config.idle_seconds = seconds.parse()?;
    }
    println!("{}", run(&config)?);
    Ok(())
}
