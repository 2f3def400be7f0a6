//! Sensor plugins: things that watch the world next to the conversation (the screen watcher) and report
//! [`Observation`]s. The session runs every sensor of the character as one task, from the character's start
//! until its profile is switched away or the session shuts down.
//!
//! Contract for implementors (e.g. an adapter around tomo-vision):
//! - `run` is called once, with the plugin's own configuration already applied at construction. The sensor
//!   starts in whatever state its config says (watching the configured target, or stopped).
//! - [`SensorCommand::Start`] (re)starts watching; `target: Some(..)` replaces the configured target (the
//!   user picked a window in the UI). [`SensorCommand::Stop`] stops watching (the one-click stop): no
//!   capture at all until the next `Start`. [`SensorCommand::ListTargets`] asks what could be watched;
//!   answer with [`SensorOutput::Targets`] (sensors without a choice answer with an empty list).
//! - Report every state change as [`SensorOutput::Status`] (the UI shows a watching indicator from it) and
//!   what was noticed as [`SensorOutput::Observation`]. Problems (window gone, permission denied) are a
//!   `Waiting`/`Error` status, never a panic.
//! - Return promptly once `cancel` fires. Sending on `out` fails only when the session is gone: stop then.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use tomo_protocol::{Observation, SensorState, SensorTarget};

/// What the session (the user, through `set_sensor`) asks a sensor to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SensorCommand {
    Start { target: Option<String> },
    Stop,
    ListTargets,
}

/// What a sensor reports.
#[derive(Debug, Clone, PartialEq)]
pub enum SensorOutput {
    Observation(Observation),
    Status(SensorState),
    Targets(Vec<SensorTarget>),
}

/// A sensor plugin. See the module docs for the contract.
pub trait Sensor: Send + Sync {
    fn run(
        self: Arc<Self>,
        commands: mpsc::Receiver<SensorCommand>,
        out: mpsc::Sender<SensorOutput>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ()>;
}

impl std::fmt::Debug for dyn Sensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sensor")
    }
}
