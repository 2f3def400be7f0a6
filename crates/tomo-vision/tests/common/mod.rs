//! Shared helpers: the model store, text images rendered with ImageMagick, character error rate.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use tomo_vision::OcrModels;

pub mod desktop;

pub use tomo_testkit::prereq::{models_dir, skip_or_fail};

/// The OCR models and ONNX Runtime, if installed.
pub fn ocr_models() -> Option<OcrModels> {
    let models = OcrModels::in_store(&models_dir());
    if let Some(missing) = models.missing() {
        skip_or_fail(&format!(
            "{} is missing (install the models with `tomo models install`)",
            missing.display()
        ));
        return None;
    }
    Some(models)
}

/// ImageMagick's `convert`. `/usr/bin/convert` first: a `convert` earlier in PATH may be something else.
pub fn convert_binary() -> Option<PathBuf> {
    let debian = PathBuf::from("/usr/bin/convert");
    let candidate = if debian.is_file() {
        debian
    } else {
        PathBuf::from("convert")
    };
    let ok = Command::new(&candidate)
        .arg("-version")
        .output()
        .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("ImageMagick"))
        .unwrap_or(false);
    if ok {
        Some(candidate)
    } else {
        skip_or_fail("ImageMagick `convert` is missing (Debian package imagemagick)");
        None
    }
}

/// A font file with CJK glyphs (Debian fonts-wqy-zenhei or fonts-noto-cjk), via fontconfig.
pub fn cjk_font() -> Option<PathBuf> {
    let out = Command::new("fc-list")
        .args([":lang=zh", "file"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fonts: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| l.split(':').next())
        .map(|p| PathBuf::from(p.trim()))
        .filter(|p| p.is_file())
        .collect();
    // Prefer the fonts named in the docs (stable rendering) over whatever else is installed.
    fonts.sort_by_key(|p| {
        let name = p.to_string_lossy().to_lowercase();
        !(name.contains("wqy-zenhei") || name.contains("notosanscjk"))
    });
    let font = fonts.into_iter().next();
    if font.is_none() {
        skip_or_fail("no font with Chinese glyphs (Debian package fonts-wqy-zenhei)");
    }
    font
}

/// Renders `lines` (black on white, one per row) into a PNG.
pub fn render_text(lines: &[&str], font: &Path, point_size: u32, out: &Path) -> bool {
    let Some(convert) = convert_binary() else {
        return false;
    };
    let status = Command::new(convert)
        .args(["-background", "white", "-fill", "black", "-font"])
        .arg(font)
        .args([
            "-pointsize",
            &point_size.to_string(),
            "-bordercolor",
            "white",
            "-border",
            "24",
        ])
        .arg(format!("label:{}", lines.join("\n")))
        .arg(out)
        .status()
        .expect("run convert");
    assert!(status.success(), "convert failed rendering {lines:?}");
    true
}

pub fn load_rgb(path: &Path) -> image::RgbImage {
    let bytes = std::fs::read(path).unwrap();
    image::load_from_memory_with_format(&bytes, image::ImageFormat::Png)
        .unwrap()
        .to_rgb8()
}

/// Character error rate of `hypothesis` against `reference`, whitespace ignored.
pub fn cer(reference: &str, hypothesis: &str) -> f64 {
    let r: Vec<char> = reference.chars().filter(|c| !c.is_whitespace()).collect();
    let h: Vec<char> = hypothesis.chars().filter(|c| !c.is_whitespace()).collect();
    let mut previous: Vec<usize> = (0..=h.len()).collect();
    for (i, rc) in r.iter().enumerate() {
        let mut current = vec![i + 1; h.len() + 1];
        for (j, hc) in h.iter().enumerate() {
            current[j + 1] = (previous[j] + usize::from(rc != hc))
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
        }
        previous = current;
    }
    previous[h.len()] as f64 / r.len().max(1) as f64
}
