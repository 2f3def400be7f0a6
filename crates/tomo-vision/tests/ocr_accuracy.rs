//! PP-OCRv4 through ONNX Runtime on text rendered here with ImageMagick: English and Chinese.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use tomo_vision::{OcrEngine, PpOcr};

fn latin_font() -> PathBuf {
    // DejaVu ships with fontconfig on Debian; fall back to the CJK font, which has Latin glyphs too.
    let dejavu = PathBuf::from("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf");
    if dejavu.is_file() {
        dejavu
    } else {
        common::cjk_font().unwrap_or_default()
    }
}

fn read(lines: &[&str], font: &std::path::Path, point_size: u32) -> Option<Vec<String>> {
    let models = common::ocr_models()?;
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("text.png");
    if !common::render_text(lines, font, point_size, &png) {
        return None;
    }
    let image = common::load_rgb(&png);
    let mut ocr = PpOcr::new(&models).unwrap();
    let read: Vec<String> = ocr
        .read(&image)
        .unwrap()
        .into_iter()
        .map(|l| l.text)
        .collect();
    eprintln!("read {read:?}");
    Some(read)
}

#[test]
fn reads_english_lines_in_order() {
    let expected = [
        "The quick brown fox jumps over the lazy dog",
        "Meeting moved to 3:45 PM on Friday",
        "Error 404: file not found",
    ];
    let Some(read) = read(&expected, &latin_font(), 22) else {
        return;
    };
    assert_eq!(
        read.len(),
        expected.len(),
        "one OCR line per text line: {read:?}"
    );
    for (want, got) in expected.iter().zip(&read) {
        let rate = common::cer(want, got);
        assert!(rate <= 0.05, "CER {rate:.3} for {want:?} → {got:?}");
        // Words stay apart: the text goes to a language model, and "filenotfound" reads badly.
        let words = |s: &str| s.split_whitespace().count();
        assert!(
            words(got) + 1 >= words(want),
            "spaces lost: {want:?} → {got:?}"
        );
    }
}

#[test]
fn reads_chinese_and_mixed_lines() {
    let Some(font) = common::cjk_font() else {
        return;
    };
    let expected = [
        "今天天气很好，我们去公园散步",
        "会议改到下午三点",
        "Tomo 正在学习中文",
    ];
    let Some(read) = read(&expected, &font, 24) else {
        return;
    };
    let joined_expected: String = expected.concat();
    let joined_read: String = read.concat();
    let rate = common::cer(&joined_expected, &joined_read);
    assert!(rate <= 0.1, "CER {rate:.3}: {read:?}");
    assert_eq!(read.len(), expected.len(), "{read:?}");
}

#[test]
fn small_ui_text_is_read() {
    // 11 pt ≈ the size of a menu or chat line on screen.
    let expected = ["Saved 3 files to Documents"];
    let Some(read) = read(&expected, &latin_font(), 11) else {
        return;
    };
    let rate = common::cer(expected[0], &read.concat());
    assert!(rate <= 0.1, "CER {rate:.3}: {read:?}");
}

#[test]
fn a_blank_image_has_no_text() {
    let Some(models) = common::ocr_models() else {
        return;
    };
    let mut ocr = PpOcr::new(&models).unwrap();
    let blank = image::RgbImage::from_pixel(300, 120, image::Rgb([255, 255, 255]));
    assert!(ocr.read(&blank).unwrap().is_empty());
}
