//! The mood score and its file. Decay is computed from wall-clock time (so it also happens while Tomo
//! is not running); the file is replaced atomically (write a temporary file, then rename).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why the mood file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum MoodError {
    #[error("mood file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("mood file {path} is not valid: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// A mood score 0-100 at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mood {
    pub score: f64,
    /// Unix ms of the last change or decay step.
    pub updated_ms: i64,
}

impl Mood {
    /// Reads `path`; a missing file gives `initial` at `now_ms`.
    pub fn load(path: &Path, initial: f64, now_ms: i64) -> Result<Self, MoodError> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let mut mood: Mood =
                    serde_json::from_str(&text).map_err(|source| MoodError::Parse {
                        path: path.to_owned(),
                        source,
                    })?;
                mood.score = clamp(mood.score);
                Ok(mood)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self {
                score: clamp(initial),
                updated_ms: now_ms,
            }),
            Err(source) => Err(MoodError::Io {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Writes `path` atomically.
    pub fn save(&self, path: &Path) -> Result<(), MoodError> {
        let io = |source| MoodError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent() {
            tomo_plugin_api::private_files::create_private_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|source| MoodError::Parse {
            path: path.to_owned(),
            source,
        })?;
        tomo_plugin_api::private_files::write_private_atomic(path, text.as_bytes()).map_err(io)
    }

    /// Moves the score towards `baseline` for the time since the last update: the distance halves every
    /// `half_life_s` (0 = no decay). A clock that went backwards decays nothing.
    pub fn decay(&mut self, now_ms: i64, baseline: f64, half_life_s: f64) {
        let elapsed_s = (now_ms - self.updated_ms).max(0) as f64 / 1000.0;
        if half_life_s > 0.0 && elapsed_s > 0.0 {
            let keep = 0.5_f64.powf(elapsed_s / half_life_s);
            self.score = clamp(baseline + (self.score - baseline) * keep);
        }
        self.updated_ms = self.updated_ms.max(now_ms);
    }

    /// Applies a `[mood:…]` tag or an emotion delta.
    pub fn apply(&mut self, value: f64, relative: bool) {
        self.score = clamp(if relative { self.score + value } else { value });
    }
}

fn clamp(score: f64) -> f64 {
    if score.is_finite() {
        score.clamp(0.0, 100.0)
    } else {
        50.0
    }
}
