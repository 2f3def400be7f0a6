//! ONNX Runtime, loaded once per process from a shared library on disk.
//!
//! Several parts of Tomo run ONNX models (Silero VAD, the Piper voice, OCR). They all go through
//! [`ensure_runtime`], so the library is loaded exactly once, from the path the model store gives
//! (the PyPI `onnxruntime` wheel's `libonnxruntime.so`), and a missing library is a clear error instead of
//! ort's default attempt to download one.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use ort;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OnnxError {
    #[error("ONNX Runtime library not found at {0} (install it with `tomo models install`)")]
    Missing(PathBuf),
    #[error("cannot load ONNX Runtime from {path}: {message}")]
    Load { path: PathBuf, message: String },
    #[error("ONNX Runtime was already loaded from {loaded}, not {requested}")]
    Conflict { loaded: PathBuf, requested: PathBuf },
}

/// The library path and the environment. ort only keeps a weak reference to the environment, so it must
/// live here for as long as the process runs sessions.
static LOADED: OnceLock<Result<(PathBuf, ort::environment::Environment), OnnxError>> =
    OnceLock::new();

/// Loads the runtime from `library` on first call; later calls check they ask for the same library.
pub fn ensure_runtime(library: &Path) -> Result<(), OnnxError> {
    let outcome = LOADED.get_or_init(|| load(library));
    match outcome {
        Ok((loaded, _)) if loaded == library => Ok(()),
        Ok((loaded, _)) => Err(OnnxError::Conflict {
            loaded: loaded.clone(),
            requested: library.to_path_buf(),
        }),
        Err(error) => Err(error.clone()),
    }
}

/// The environment loaded by [`ensure_runtime`], needed to build sessions (`Session::builder(&env)`).
/// `None` until the runtime was loaded successfully.
pub fn environment() -> Option<ort::environment::Environment> {
    match LOADED.get() {
        Some(Ok((_, environment))) => Some(environment.clone()),
        _ => None,
    }
}

fn load(library: &Path) -> Result<(PathBuf, ort::environment::Environment), OnnxError> {
    if !library.is_file() {
        return Err(OnnxError::Missing(library.to_path_buf()));
    }
    let failed = |message: String| OnnxError::Load {
        path: library.to_path_buf(),
        message,
    };
    let environment = ort::init_from(library)
        .map_err(|e| failed(e.to_string()))?
        .with_name("tomo")
        .build()
        .map_err(|e| failed(e.to_string()))?;
    tracing::info!(library = %library.display(), "ONNX Runtime loaded");
    Ok((library.to_path_buf(), environment))
}
