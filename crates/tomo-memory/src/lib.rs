//! Long-term memory for Tomo characters.
