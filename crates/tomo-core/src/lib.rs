//! Tomo's engine: the session coordinator (one turn at a time, the user always wins), the token
//! pipeline (sentences, actions, display and spoken text), the plugin host, and history. No audio, no
//! UI, no HTTP, no plugin by name: the front end hands it a language-model connector and plugin
//! factories (see `tomo-runtime`).

pub mod confirmed_tool;
pub mod data_lock;
pub mod history;
pub mod pipeline;
pub mod plugin_host;
pub mod session;
pub mod sink;
pub mod state;
