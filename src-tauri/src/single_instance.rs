//! One running app per data folder: a second launch (a second click in the launcher, the autostart entry
//! after a manual start) brings the first window forward instead of starting a second session on the same
//! history.
//!
//! A Unix socket named after the data folder, in `$XDG_RUNTIME_DIR` (else the temp folder), readable only by
//! its owner. The first instance listens on it; a later one connects, says `show`, and exits. A socket left
//! by a crashed instance refuses connections: it is replaced. No D-Bus, no network: it works the same under
//! Xvfb, on a desktop without a session bus, and offline.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

const SHOW: &str = "show";

/// The socket this process serves, for [`release`] (the app exits without running destructors).
static OWNED: OnceLock<PathBuf> = OnceLock::new();

/// The result of [`claim`].
pub enum Claim {
    /// This is the only instance: serve [`Instance::serve`] once the window exists.
    First(Instance),
    /// Another instance runs and was asked to show its window.
    AlreadyRunning { socket: PathBuf },
}

/// The first instance's socket (removed when dropped).
pub struct Instance {
    listener: UnixListener,
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot set up the single-instance socket {path}: {source}")]
pub struct ClaimError {
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

/// Where the socket of the instance using `data_root` lives.
pub fn socket_path(data_root: &Path) -> PathBuf {
    let dir = dirs::runtime_dir().unwrap_or_else(std::env::temp_dir);
    // The same folder named two ways (relative, symlinked) is one history.
    let canonical = data_root
        .canonicalize()
        .unwrap_or_else(|_| data_root.to_path_buf());
    dir.join(format!(
        "tomo-desktop-{:016x}.sock",
        fnv1a(canonical.as_os_str().as_encoded_bytes())
    ))
}

/// Becomes the first instance, or tells the running one to show itself.
pub fn claim(data_root: &Path) -> Result<Claim, ClaimError> {
    claim_at(socket_path(data_root))
}

fn claim_at(path: PathBuf) -> Result<Claim, ClaimError> {
    let fail = |source| ClaimError {
        path: path.clone(),
        source,
    };
    // Twice: the first try may find a stale socket, removed before the second.
    for _ in 0..2 {
        match UnixListener::bind(&path) {
            Ok(listener) => {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .map_err(fail)?;
                let _ = OWNED.set(path.clone());
                return Ok(Claim::First(Instance { listener, path }));
            }
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
                if ask_to_show(&path).is_ok() {
                    return Ok(Claim::AlreadyRunning { socket: path });
                }
                // Nobody answers: a crashed instance's socket.
                tracing::info!(path = %path.display(), "replacing a stale single-instance socket");
                std::fs::remove_file(&path).map_err(fail)?;
            }
            Err(error) => return Err(fail(error)),
        }
    }
    Err(fail(std::io::Error::other(
        "another instance keeps taking the socket",
    )))
}

fn ask_to_show(path: &Path) -> std::io::Result<()> {
    let mut stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    writeln!(stream, "{SHOW}")?;
    // Wait for the answer: the first instance handled it (or is gone, which the caller cannot tell apart
    // from a slow one; either way this launch must not start a second session).
    let mut answer = String::new();
    BufReader::new(&stream).read_line(&mut answer)?;
    Ok(())
}

impl Instance {
    /// Answers later launches on a thread of its own, calling `on_show` for each.
    pub fn serve(self, on_show: impl Fn() + Send + 'static) {
        let spawned = std::thread::Builder::new()
            .name("single-instance".into())
            .spawn(move || {
                for stream in self.listener.incoming() {
                    match stream {
                        Ok(stream) => handle(stream, &on_show),
                        Err(error) => tracing::warn!(%error, "single-instance socket"),
                    }
                }
                drop(self);
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot answer later launches");
        }
    }
}

fn handle(mut stream: UnixStream, on_show: &impl Fn()) {
    let mut line = String::new();
    if stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .is_err()
        || BufReader::new(&stream).read_line(&mut line).is_err()
    {
        return;
    }
    if line.trim() == SHOW {
        tracing::info!("a second launch: bringing the window forward");
        // Answer first: the second launch may exit while the window comes forward.
        let _ = writeln!(stream, "ok");
        on_show();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Removes this process's socket (on quit: the serving thread never ends on its own).
pub fn release() {
    if let Some(path) = OWNED.get() {
        let _ = std::fs::remove_file(path);
    }
}

/// Shows, restores and focuses the main window (the second launch's request).
pub fn bring_forward(app: &tauri::AppHandle) {
    let Ok(window) = crate::pet::main_window(app) else {
        return;
    };
    for (what, result) in [
        ("show", window.show()),
        ("unminimize", window.unminimize()),
        ("focus", window.set_focus()),
    ] {
        if let Err(error) = result {
            tracing::warn!(%error, "cannot {what} the window");
        }
    }
}

/// FNV-1a, 64 bits: stable across builds and Rust versions (two versions of the app must agree on the name).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::mpsc;

    use super::*;

    #[test]
    fn a_second_claim_asks_the_first_to_show_itself() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.sock");
        let Claim::First(first) = claim_at(path.clone()).unwrap() else {
            panic!("the first claim must win");
        };
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "only its owner may connect");
        let (shown, was_shown) = mpsc::channel();
        first.serve(move || shown.send(()).unwrap());
        assert!(matches!(
            claim_at(path.clone()).unwrap(),
            Claim::AlreadyRunning { .. }
        ));
        was_shown.recv_timeout(Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn a_crashed_instances_socket_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.sock");
        // A bound socket nobody listens on any more (its listener closed without removing the file).
        drop(UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        assert!(matches!(claim_at(path.clone()).unwrap(), Claim::First(_)));
    }

    #[test]
    fn the_socket_goes_with_the_instance() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.sock");
        let claim = claim_at(path.clone()).unwrap();
        assert!(path.exists());
        drop(claim);
        assert!(!path.exists());
    }

    #[test]
    fn one_data_folder_one_name() {
        let dir = tempfile::tempdir().unwrap();
        let a = socket_path(dir.path());
        assert_eq!(a, socket_path(&dir.path().join(".")));
        assert_ne!(a, socket_path(&dir.path().join("other")));
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    }
}
