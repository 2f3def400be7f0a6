//! ONNX Runtime, loaded once per process from a shared library on disk.
//!
//! Several parts of Tomo run ONNX models (Silero VAD, the Piper voice, OCR). They all go through
//! [`ensure_runtime`], so the library is loaded exactly once, from the path the model store gives
//! (the PyPI `onnxruntime` wheel's `libonnxruntime.so`), and a missing library is a clear error instead of
//! ort's default attempt to download one.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
/// live here for as long as the process runs sessions. Only a successful load is remembered: a library that
/// was missing can be installed (`tomo models install`) and loaded later by the same process.
static LOADED: Mutex<Option<(PathBuf, ort::environment::Environment)>> = Mutex::new(None);

/// Loads the runtime from `library` on first call; later calls check they ask for the same library.
pub fn ensure_runtime(library: &Path) -> Result<(), OnnxError> {
    environment(library).map(|_| ())
}

/// The process's ONNX Runtime environment, loading the runtime from `library` first if needed. ort 2.0.0-rc.15
/// builds sessions from an explicit environment (`Session::builder(&env)`), and only one may exist.
pub fn environment(library: &Path) -> Result<ort::environment::Environment, OnnxError> {
    let mut loaded = LOADED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match loaded.as_ref() {
        Some((path, environment)) if path == library => Ok(environment.clone()),
        Some((path, _)) => Err(OnnxError::Conflict {
            loaded: path.clone(),
            requested: library.to_path_buf(),
        }),
        None => {
            let (path, environment) = load(library)?;
            *loaded = Some((path, environment.clone()));
            Ok(environment)
        }
    }
}

/// A session for `model` with Tomo's thread policy: `threads` for its operators (at least one), one for
/// running them, and none of them spinning once a run is done. ONNX Runtime's threads spin by default,
/// and every model here runs in bursts beside others on two cores: a sentence synthesized while one
/// plays, a pause judged while whisper works, a screenshot read while the character speaks. Spinning
/// took the cores the capture, the echo canceller and the VAD need then (Piper: 7.2 s of CPU for 30
/// syntheses against 6.0 s, in the same 4.1 s). Returns ort's message on failure; callers add the path.
pub fn session(
    environment: &ort::environment::Environment,
    model: &Path,
    threads: usize,
) -> Result<ort::session::Session, String> {
    let failed = |e: ort::Error<ort::session::builder::SessionBuilder>| e.to_string();
    ort::session::Session::builder(environment)
        .map_err(|e| e.to_string())?
        .with_intra_threads(threads.max(1))
        .map_err(failed)?
        .with_inter_threads(1)
        .map_err(failed)?
        .with_intra_op_spinning(false)
        .map_err(failed)?
        .with_inter_op_spinning(false)
        .map_err(failed)?
        .commit_from_file(model)
        .map_err(|e| e.to_string())
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
