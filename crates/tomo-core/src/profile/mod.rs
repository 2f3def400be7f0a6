//! Character profiles (`profiles/*.toml`).
