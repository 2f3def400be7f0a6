//! Tomo's engine: protocol, session coordinator, agent loop, token pipeline, hooks, plugins, profiles,
//! history. No audio, no UI, no Tauri: usable headless and from any front end.

pub mod agent;
pub mod data_lock;
pub mod history;
pub mod hooks;
pub mod llm;
pub mod pipeline;
pub mod plugins;
pub mod private_files;
pub mod session;
pub mod sink;
pub mod state;
pub mod tools;
