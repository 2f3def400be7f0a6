//! The profile's JSON Schema, generated from the Rust types so it cannot drift from what the loader
//! accepts. A copy is committed as `profiles/profile.schema.json` for editors (taplo / Even Better
//! TOML pick it up from the `#:schema` comment at the top of each profile).

use super::Profile;

/// JSON Schema (draft 2020-12) of a profile file.
pub fn profile_json_schema() -> serde_json::Value {
    schemars::schema_for!(Profile).to_value()
}
