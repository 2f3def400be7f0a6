//! Reads a PNG with PP-OCRv4 and prints each line with its box and score (a debugging aid).
//! Usage: `cargo run -p tomo-vision --example ocr_file -- image.png`

use std::path::PathBuf;

use tomo_vision::{OcrEngine, OcrModels, PpOcr};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: ocr_file IMAGE.png")?;
    let root = std::env::var_os("TOMO_MODELS_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("tomo").join("models")))
        .ok_or("no data directory for the model store")?;
    let image =
        image::load_from_memory_with_format(&std::fs::read(&path)?, image::ImageFormat::Png)?
            .to_rgb8();
    let mut ocr = PpOcr::new(&OcrModels::in_store(&root))?;
    for line in ocr.read(&image)? {
        println!("{:?} {:.2} {:?}", line.text, line.score, line.bbox);
    }
    Ok(())
}
