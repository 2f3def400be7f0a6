//! The typed events the backend sends the webview. Their names come from tauri-specta (the generated
//! bindings listen by type), never from strings written by hand.

use serde::{Deserialize, Serialize};
use tomo_protocol::EventEnvelope;

/// Every session event, exactly the JSON `tomo serve` sends over its WebSocket.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct SessionEvent(pub EventEnvelope);

/// Pet mode changed (from the tray, or the UI's own button): the UI restyles for it.
#[derive(Debug, Clone, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct PetModeChanged {
    pub on: bool,
}
