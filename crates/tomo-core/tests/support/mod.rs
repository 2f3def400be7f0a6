//! Helpers shared by the integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod plugins;
pub mod session;
pub mod voice;
