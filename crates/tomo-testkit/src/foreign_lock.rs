//! Another process holding a file lock, for tests of "one process per data folder": util-linux
//! `flock -o` holds the lock itself while a shell waits on its stdin, so dropping the guard (which kills
//! `flock` and closes the shell's stdin) releases it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A lock held by a separate process until dropped.
#[derive(Debug)]
pub struct ForeignLock {
    child: Child,
}

impl ForeignLock {
    /// Locks `path` from another process and waits until it holds the lock.
    pub fn hold(path: &Path) -> std::io::Result<Self> {
        let ready = path.with_extension("held");
        let child = Command::new("flock")
            .arg("-o")
            .arg(path)
            .arg("sh")
            .arg("-c")
            .arg(format!("touch '{}'; read _", ready.display()))
            .stdin(Stdio::piped())
            .spawn()?;
        let guard = Self { child };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ready.exists() {
            if Instant::now() > deadline {
                return Err(std::io::Error::other("flock(1) did not take the lock"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(guard)
    }
}

impl Drop for ForeignLock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
