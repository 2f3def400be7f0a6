//! Tomo's configuration files: character profiles (`profiles/*.toml`), plugin manifests
//! (`plugins/<id>/plugin.toml`), and the diagnostics both report (file, line, column, field).

pub mod diagnostic;
pub mod keys;
pub mod manifest;
pub mod profile;
