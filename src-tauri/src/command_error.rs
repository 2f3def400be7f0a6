//! Why a webview command failed. The webview sees only the message: the error crosses IPC as a plain string
//! (`string` in the generated bindings), so the UI's contract is the text, as it was before the type.

use tomo_server::OpRefused;

use crate::autostart::AutostartError;
use crate::pet::{HitRegion, PetError};

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Refused(#[from] OpRefused),
    #[error("the session is not running (yet)")]
    NotRunning,
    #[error("the session has ended")]
    Ended,
    #[error("invalid hit region {0:?}")]
    InvalidHitRegion(HitRegion),
    #[error(transparent)]
    Pet(#[from] PetError),
    #[error(transparent)]
    Autostart(#[from] AutostartError),
}

impl serde::Serialize for CommandError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The bindings declare the error as `string`, which is what `Serialize` writes.
impl specta::Type for CommandError {
    fn definition(types: &mut specta::Types) -> specta::datatype::DataType {
        String::definition(types)
    }
}
