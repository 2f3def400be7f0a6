//! The downloader against a real local HTTP server: resume after a cut, checksum mismatch, 404.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The speech tests' helpers (a local HTTP server, flite speech), shared rather than copied.
#[path = "../../tomo-speech/tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::http::{Behaviour, serve};
use tomo_models::download::{Expected, part_path, sha256_hex};
use tomo_models::{DownloadError, Downloader};

fn body() -> Vec<u8> {
    // 3 MB of non-repeating bytes so an offset error shows up in the hash.
    (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

fn downloader() -> Downloader {
    let mut downloader = Downloader::new().unwrap();
    downloader.retry_delay = Duration::from_millis(10);
    downloader
}

#[test]
fn resumes_after_a_cut_connection_and_verifies() {
    let body = Arc::new(body());
    let server = serve(Behaviour {
        body: body.clone(),
        cut_first_after: Some(1_000_000),
    });
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("model.bin");
    let expected = Expected {
        sha256: Some(sha256_hex(&body)),
        size: Some(body.len() as u64),
    };
    let mut last = (0, None);
    downloader()
        .download(
            &format!("{}/file", server.base),
            &dest,
            &expected,
            &mut |done, total| last = (done, total),
        )
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), *body);
    assert!(!part_path(&dest).exists());
    assert_eq!(last, (body.len() as u64, Some(body.len() as u64)));
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests.len(), 2, "one cut request, one resumed request");
    assert!(
        requests[1]
            .to_ascii_lowercase()
            .contains("range: bytes=1000000-"),
        "{}",
        requests[1]
    );
}

#[test]
fn resumes_from_a_part_file_left_by_an_earlier_run() {
    let body = Arc::new(body());
    let server = serve(Behaviour {
        body: body.clone(),
        cut_first_after: None,
    });
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("model.bin");
    std::fs::write(part_path(&dest), &body[..123_456]).unwrap();
    let expected = Expected {
        sha256: Some(sha256_hex(&body)),
        size: None,
    };
    downloader()
        .download(
            &format!("{}/file", server.base),
            &dest,
            &expected,
            &mut |_, _| {},
        )
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), *body);
    assert!(
        server.requests.lock().unwrap()[0]
            .to_ascii_lowercase()
            .contains("range: bytes=123456-")
    );
}

#[test]
fn checksum_mismatch_is_an_error_and_leaves_nothing() {
    let server = serve(Behaviour {
        body: Arc::new(body()),
        cut_first_after: None,
    });
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("model.bin");
    let wrong = "0".repeat(64);
    let expected = Expected {
        sha256: Some(wrong.clone()),
        size: None,
    };
    let error = downloader()
        .download(
            &format!("{}/file", server.base),
            &dest,
            &expected,
            &mut |_, _| {},
        )
        .unwrap_err();
    match &error {
        DownloadError::Checksum {
            expected, actual, ..
        } => {
            assert_eq!(expected, &wrong);
            assert_eq!(actual.len(), 64);
        }
        other => panic!("expected a checksum error, got {other}"),
    }
    assert!(error.to_string().contains("/file"), "{error}");
    assert!(!dest.exists() && !part_path(&dest).exists());
}

#[test]
fn not_found_is_reported_without_retrying() {
    let server = serve(Behaviour {
        body: Arc::new(body()),
        cut_first_after: None,
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/missing.bin", server.base);
    let error = downloader()
        .download(
            &url,
            &dir.path().join("x"),
            &Expected::default(),
            &mut |_, _| {},
        )
        .unwrap_err();
    assert!(matches!(error, DownloadError::NotFound { .. }), "{error}");
    assert!(error.to_string().contains("missing.bin"), "{error}");
    assert_eq!(server.requests.lock().unwrap().len(), 1);
}
