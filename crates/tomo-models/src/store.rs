//! Where models live on disk and whether they are intact.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use crate::ModelError;
use crate::manifest::{FileSpec, Manifest, ModelEntry};

/// Sidecar suffix: `<file>.verified` caches "sha256 size mtime" so an up-to-date store is checked in
/// microseconds instead of re-hashing hundreds of megabytes on every start.
const VERIFIED_SUFFIX: &str = ".verified";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelStatus {
    Installed,
    Missing,
    /// Present but with the wrong size or hash (truncated download, edited file, older version).
    Corrupt,
}

impl std::fmt::Display for ModelStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Installed => "installed",
            Self::Missing => "missing",
            Self::Corrupt => "corrupt",
        })
    }
}

/// One row of `list()`.
#[derive(Debug, Clone)]
pub struct StoreEntry {
    pub name: String,
    pub status: ModelStatus,
    pub path: PathBuf,
    /// Sum of the final files' sizes from the manifest.
    pub size: u64,
    pub default: bool,
}

#[derive(Debug, Clone)]
pub struct ModelStore {
    pub root: PathBuf,
    pub manifest: Manifest,
}

impl ModelStore {
    pub fn new(root: impl Into<PathBuf>, manifest: Manifest) -> Self {
        Self {
            root: root.into(),
            manifest,
        }
    }

    /// `$TOMO_MODELS_DIR`, else `<data dir>/tomo/models`, with the built-in manifest.
    pub fn from_env() -> Result<Self, ModelError> {
        Ok(Self::new(Self::default_root(), Manifest::builtin()?))
    }

    pub fn default_root() -> PathBuf {
        match std::env::var_os("TOMO_MODELS_DIR") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => dirs::data_dir()
                .unwrap_or_else(|| PathBuf::from("."))
                .join("tomo")
                .join("models"),
        }
    }

    pub fn entry(&self, name: &str) -> Result<&ModelEntry, ModelError> {
        self.manifest
            .get(name)
            .ok_or_else(|| ModelError::UnknownModel(name.to_string()))
    }

    /// The model's main file (its first `[[model.file]]`), whether or not it is installed.
    pub fn path(&self, name: &str) -> Result<PathBuf, ModelError> {
        let entry = self.entry(name)?;
        let first = entry
            .files
            .first()
            .map(|f| f.path.as_str())
            .unwrap_or_default();
        Ok(self.file_path(first))
    }

    pub fn file_path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// Installed only if every file is present with the manifest's size and hash.
    pub fn status(&self, name: &str) -> Result<ModelStatus, ModelError> {
        let entry = self.entry(name)?;
        let mut overall = ModelStatus::Installed;
        for file in &entry.files {
            match self.file_status(file)? {
                ModelStatus::Corrupt => return Ok(ModelStatus::Corrupt),
                ModelStatus::Missing => overall = ModelStatus::Missing,
                ModelStatus::Installed => {}
            }
        }
        Ok(overall)
    }

    pub fn list(&self) -> Result<Vec<StoreEntry>, ModelError> {
        self.manifest
            .models
            .iter()
            .map(|model| {
                Ok(StoreEntry {
                    name: model.name.clone(),
                    status: self.status(&model.name)?,
                    path: self.path(&model.name)?,
                    size: model.files.iter().map(|f| f.size).sum(),
                    default: model.default,
                })
            })
            .collect()
    }

    pub(crate) fn file_status(&self, file: &FileSpec) -> Result<ModelStatus, ModelError> {
        let path = self.file_path(&file.path);
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(ModelStatus::Missing);
            }
            Err(source) => return Err(ModelError::Io { path, source }),
        };
        // A file from the canonical URL (`tomo models download`) may differ from the one built from packages.
        let accepted = |hash: &str| hash == file.sha256 || file.url_sha256.as_deref() == Some(hash);
        if meta.len() != file.size && file.url_sha256.is_none() {
            return Ok(ModelStatus::Corrupt);
        }
        let stamp = stamp(&meta);
        if read_sidecar(&path).is_some_and(|(hash, size, mtime)| {
            accepted(&hash) && size == meta.len() && mtime == stamp
        }) {
            return Ok(ModelStatus::Installed);
        }
        let actual = sha256_file(&path)?;
        if accepted(&actual) {
            write_sidecar(&path, &actual, meta.len(), stamp);
            Ok(ModelStatus::Installed)
        } else {
            Ok(ModelStatus::Corrupt)
        }
    }

    /// Records a file the installer just verified, so the next status check is instant.
    pub(crate) fn mark_verified(&self, path: &Path, sha256: &str) {
        if let Ok(meta) = fs::metadata(path) {
            write_sidecar(path, sha256, meta.len(), stamp(&meta));
        }
    }
}

fn stamp(meta: &fs::Metadata) -> u128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

fn sidecar(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(VERIFIED_SUFFIX);
    PathBuf::from(name)
}

fn read_sidecar(path: &Path) -> Option<(String, u64, u128)> {
    let text = fs::read_to_string(sidecar(path)).ok()?;
    let mut parts = text.split_whitespace();
    let hash = parts.next()?.to_string();
    let size = parts.next()?.parse().ok()?;
    let mtime = parts.next()?.parse().ok()?;
    Some((hash, size, mtime))
}

fn write_sidecar(path: &Path, hash: &str, size: u64, mtime: u128) {
    // Only a cache: failing to write it costs a re-hash next time, nothing more.
    if let Err(error) = fs::write(sidecar(path), format!("{hash} {size} {mtime}\n")) {
        tracing::debug!(path = %path.display(), %error, "cannot write the verified-hash cache");
    }
}

pub(crate) fn sha256_file(path: &Path) -> Result<String, ModelError> {
    let io = |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).map_err(io)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
