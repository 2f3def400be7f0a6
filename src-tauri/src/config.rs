//! What the desktop app remembers between runs (in the app config dir): pet mode and where the pet sat.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DesktopConfig {
    pub pet_mode: bool,
    /// Outer window position in pet mode, physical pixels.
    pub pet_position: Option<(i32, i32)>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub const FILE_NAME: &str = "desktop.json";

impl DesktopConfig {
    /// The saved config; defaults when there is none or it does not parse (logged: a broken file must not
    /// keep the app from starting).
    pub fn load(dir: &Path) -> Self {
        let path = dir.join(FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).unwrap_or_else(|error| {
                tracing::warn!(path = %path.display(), %error, "ignoring unreadable desktop config");
                Self::default()
            }),
            Err(_) => Self::default(),
        }
    }

    pub fn save(&self, dir: &Path) -> Result<(), ConfigError> {
        let path = dir.join(FILE_NAME);
        let write = |source| ConfigError::Write {
            path: path.clone(),
            source,
        };
        tomo_plugin_api::private_files::create_private_dir_all(dir).map_err(write)?;
        let text =
            serde_json::to_string_pretty(self).map_err(|e| write(std::io::Error::other(e)))?;
        tomo_plugin_api::private_files::write_private_atomic(&path, text.as_bytes()).map_err(write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_survives_a_broken_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(DesktopConfig::load(dir.path()), DesktopConfig::default());
        let config = DesktopConfig {
            pet_mode: true,
            pet_position: Some((120, -8)),
        };
        config.save(dir.path()).unwrap();
        assert_eq!(DesktopConfig::load(dir.path()), config);
        std::fs::write(dir.path().join(FILE_NAME), "{not json").unwrap();
        assert_eq!(DesktopConfig::load(dir.path()), DesktopConfig::default());
    }
}
