//! One Tomo process per character data folder: two instances appending to the same history would hand
//! out the same turn ids. The lock is an OS file lock on `<folder>/.lock`, released when the process
//! ends however it ends (a crash leaves no stale lock). Within one process the lock is shared: switching
//! to the same character, or reloading it on another endpoint, opens the folder again while the old
//! character is still alive.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

const LOCK_FILE: &str = ".lock";

/// Held while a character's data folder is in use. Dropping the last handle in the process releases it.
#[derive(Debug)]
pub struct DataDirLock {
    dir: PathBuf,
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "{dir} is in use by another Tomo (a second app or `tomo chat` on the same character); close it first"
    )]
    InUse { dir: PathBuf },
    #[error("cannot lock {dir}: {source}")]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
}

fn held() -> &'static Mutex<HashMap<PathBuf, Weak<DataDirLock>>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, Weak<DataDirLock>>>> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

impl DataDirLock {
    /// Locks `dir` (which must exist) for this process, or shares the lock this process already holds.
    pub fn acquire(dir: &Path) -> Result<Arc<Self>, LockError> {
        let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let mut held = held()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        held.retain(|_, lock| lock.strong_count() > 0);
        if let Some(lock) = held.get(&key).and_then(Weak::upgrade) {
            return Ok(lock);
        }
        let io = |source| LockError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        let path = dir.join(LOCK_FILE);
        let file = tomo_plugin_api::private_files::open_private_append(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(LockError::InUse {
                    dir: dir.to_path_buf(),
                });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
        }
        let lock = Arc::new(Self {
            dir: key.clone(),
            _file: file,
        });
        held.insert(key, Arc::downgrade(&lock));
        Ok(lock)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// util-linux `flock -n`: a real second process asks for the same lock.
    fn other_process_can_lock(dir: &Path) -> bool {
        std::process::Command::new("flock")
            .args(["-n", "-E", "75"])
            .arg(dir.join(LOCK_FILE))
            .arg("true")
            .status()
            .expect("flock(1) from util-linux")
            .success()
    }

    #[test]
    fn another_process_is_kept_out_until_the_last_handle_goes() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataDirLock::acquire(dir.path()).unwrap();
        let second = DataDirLock::acquire(dir.path()).unwrap();
        assert!(Arc::ptr_eq(&first, &second), "one process shares its lock");
        assert!(!other_process_can_lock(dir.path()));
        drop(first);
        assert!(!other_process_can_lock(dir.path()));
        drop(second);
        assert!(other_process_can_lock(dir.path()));
    }

    #[test]
    fn a_folder_locked_by_another_process_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let other = tomo_testkit::ForeignLock::hold(&dir.path().join(LOCK_FILE)).unwrap();
        let refused = DataDirLock::acquire(dir.path());
        drop(other);
        assert!(
            matches!(refused, Err(LockError::InUse { .. })),
            "{refused:?}"
        );
        DataDirLock::acquire(dir.path()).expect("free once the other process ended");
    }
}
