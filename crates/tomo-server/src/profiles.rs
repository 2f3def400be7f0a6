//! The profiles directory: what `/api/profiles` lists and the only place `switch_profile` may load from.
//! A client must not make the server read arbitrary files (`../../etc/passwd` would come back in an error
//! message), so every path is resolved and checked against the directory.

use std::path::{Path, PathBuf};

use serde::Serialize;
use tomo_config::profile::load_profile;

/// One switchable character.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProfileInfo {
    /// File name inside the profiles directory; what a client sends back in `switch_profile`.
    pub file: String,
    pub name: String,
    pub agent_id: String,
    pub live2d_model: Option<String>,
    /// Emotion tag → expression/motion id: the UI needs it to act out `[joy]`-style actions.
    pub emotion_map: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    #[error("profile switching is disabled: the server has no profiles directory")]
    NoDirectory,
    #[error("profile `{0}` is not a .toml file inside the profiles directory")]
    Outside(String),
    #[error("profile `{path}` not found in the profiles directory: {source}")]
    Missing {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Resolves a client's `switch_profile` path (relative to `dir`, or absolute) to a canonical path inside
/// `dir`. Symlinks are followed before the check, so a link pointing outside is refused too.
pub fn resolve(dir: Option<&Path>, requested: &str) -> Result<PathBuf, SwitchError> {
    let dir = dir.ok_or(SwitchError::NoDirectory)?;
    let dir = dir.canonicalize().map_err(|source| SwitchError::Missing {
        path: dir.display().to_string(),
        source,
    })?;
    let candidate = dir.join(requested);
    let resolved = candidate
        .canonicalize()
        .map_err(|source| SwitchError::Missing {
            path: requested.to_owned(),
            source,
        })?;
    let is_toml = resolved.extension().is_some_and(|e| e == "toml");
    if !resolved.starts_with(&dir) || !is_toml || !resolved.is_file() {
        return Err(SwitchError::Outside(requested.to_owned()));
    }
    Ok(resolved)
}

/// Every profile in `dir` that loads, sorted by file name. Broken ones are logged and left out: the
/// switcher should offer only characters that can start.
pub fn list(dir: &Path) -> Vec<ProfileInfo> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            tracing::warn!(dir = %dir.display(), %error, "cannot list profiles");
            return Vec::new();
        }
    };
    let mut found: Vec<ProfileInfo> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml") && path.is_file())
        .filter_map(|path| match load_profile(&path) {
            Ok(loaded) => Some(ProfileInfo {
                file: path.file_name()?.to_string_lossy().into_owned(),
                name: loaded.profile.character.name,
                agent_id: loaded.profile.character.agent_id,
                live2d_model: loaded.profile.live2d.model,
                emotion_map: loaded.profile.live2d.emotion_map,
            }),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "profile not listed");
                None
            }
        })
        .collect();
    found.sort_by(|a, b| a.file.cmp(&b.file));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_toml_files_inside_the_directory_resolve() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("profiles");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("a.toml"), "").unwrap();
        std::fs::write(dir.join("notes.txt"), "").unwrap();
        std::fs::write(root.path().join("outside.toml"), "").unwrap();

        let ok = resolve(Some(&dir), "a.toml").unwrap();
        assert_eq!(ok, dir.canonicalize().unwrap().join("a.toml"));
        assert!(
            resolve(Some(&dir), ok.to_str().unwrap()).is_ok(),
            "absolute inside"
        );
        for bad in [
            "../outside.toml",
            "notes.txt",
            "missing.toml",
            "/etc/passwd",
            ".",
        ] {
            assert!(resolve(Some(&dir), bad).is_err(), "{bad}");
        }
        assert!(matches!(
            resolve(None, "a.toml"),
            Err(SwitchError::NoDirectory)
        ));
    }
}
