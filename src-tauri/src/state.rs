//! The app's shared state: the session's op channel and handle, the replay buffer, pet mode.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::mpsc;
use tomo_protocol::Op;
use tomo_runtime::{ListenFlags, RunningSession};

use crate::config::DesktopConfig;
use crate::pet::HitRegion;
use crate::replay::Replay;
use crate::resources::ProfileDirs;

/// Events kept for a reloading webview (same defaults as `tomo serve`).
const REPLAY_CAPACITY: usize = 10_000;
const REPLAY_MAX_BYTES: usize = 32 << 20;

pub struct AppState {
    pub replay: Arc<Replay>,
    /// Where `switch_profile` may load from and what `list_profiles` lists (bundled and the user's; see
    /// resources.rs).
    pub profiles: ProfileDirs,
    /// Mic mute and "character speaking" switches read by the in-process voice front end.
    pub listen: ListenFlags,
    pub config_dir: PathBuf,
    ops: Mutex<Option<mpsc::Sender<Op>>>,
    session: Mutex<Option<RunningSession>>,
    pet: Mutex<PetState>,
    /// Set once quitting started: the exit request that follows must not start a second shutdown.
    pub quitting: AtomicBool,
}

#[derive(Debug, Clone, Default)]
pub struct PetState {
    pub on: bool,
    /// The character's rectangle in the window, logical pixels; `None`: the whole window is solid.
    pub hit: Option<HitRegion>,
    pub config: DesktopConfig,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here is a plain assignment; a poisoned lock holds consistent data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppState {
    pub fn new(profiles: ProfileDirs, config_dir: PathBuf) -> Self {
        let config = DesktopConfig::load(&config_dir);
        Self {
            replay: Arc::new(Replay::new(REPLAY_CAPACITY, REPLAY_MAX_BYTES)),
            profiles,
            listen: ListenFlags::default(),
            config_dir,
            ops: Mutex::new(None),
            session: Mutex::new(None),
            pet: Mutex::new(PetState {
                config,
                ..PetState::default()
            }),
            quitting: AtomicBool::new(false),
        }
    }

    pub fn ops(&self) -> Option<mpsc::Sender<Op>> {
        lock(&self.ops).clone()
    }

    pub fn set_session(&self, session: RunningSession) {
        *lock(&self.ops) = Some(session.ops());
        *lock(&self.session) = Some(session);
    }

    /// Takes the session out for shutdown (closes our op sender so the session can end).
    pub fn take_session(&self) -> Option<RunningSession> {
        lock(&self.ops).take();
        lock(&self.session).take()
    }

    pub fn pet(&self) -> PetState {
        lock(&self.pet).clone()
    }

    pub fn update_pet<R>(&self, change: impl FnOnce(&mut PetState) -> R) -> R {
        change(&mut lock(&self.pet))
    }

    pub fn mic_muted(&self) -> bool {
        self.listen.muted.load(Ordering::SeqCst)
    }
}
