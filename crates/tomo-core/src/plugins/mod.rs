//! Plugins: manifests, built-in plugins, MCP tool servers, and the host that turns a profile's enabled
//! plugins into tools and hooks.

pub mod builtin;
pub mod host;
pub mod manifest;
pub mod mcp;
