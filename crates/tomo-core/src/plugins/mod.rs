//! Plugins: manifests, built-in plugins, MCP tool servers, and the host that turns a profile's enabled
//! plugins into tools, hooks, sensors and schedulers.

pub mod builtin;
pub mod host;
pub mod mcp;
pub mod scheduler;
pub mod sensor;
