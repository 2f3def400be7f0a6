//! Built-in plugins: `time`, `web_fetch`, `diary`.
