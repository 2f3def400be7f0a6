//! Loading `plugin.toml` files and discovering the plugins in a directory.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use super::{McpServerConfig, PluginKind, PluginManifest, ToolLimits};
use crate::diagnostic::{Diagnostic, DisplayList, Doc, Severity, Target};
use crate::profile::is_valid_id;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read plugin manifest {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Every problem found, errors and warnings, sorted by position.
    #[error("{}", DisplayList(.0))]
    Invalid(Vec<Diagnostic>),
}

/// The file layout, for the JSON Schema and for "did you mean" on unknown keys. Loading deserializes
/// the tables one by one (to report every problem), then builds a [`PluginManifest`].
#[derive(Deserialize, JsonSchema)]
#[schemars(title = "Tomo plugin manifest")]
#[allow(dead_code)] // Only its schema is used; the sections are deserialized individually.
struct ManifestFile {
    plugin: PluginSection,
    #[serde(default)]
    tool: Option<ToolLimits>,
    #[serde(default)]
    mcp: Option<McpServerConfig>,
    /// Default configuration; a profile's `[plugins.<id>]` table overrides it key by key.
    #[serde(default)]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    config: toml::Table,
}

#[derive(Deserialize, JsonSchema)]
struct PluginSection {
    /// Must equal the plugin's folder name.
    #[schemars(regex(pattern = crate::profile::ID_PATTERN))]
    id: String,
    #[serde(rename = "type")]
    kind: PluginKind,
    /// One line shown in the UI and `tomo plugins list`.
    #[schemars(length(min = 1))]
    description: String,
}

/// JSON Schema (draft 2020-12) of a `plugin.toml`.
pub fn plugin_manifest_json_schema() -> serde_json::Value {
    schemars::schema_for!(ManifestFile).to_value()
}

/// Reads and parses one `plugin.toml`. Warnings (unknown keys) are logged, not returned; use
/// [`discover_plugins`] or [`parse_manifest`] to get them.
pub fn load_manifest(path: &Path) -> Result<PluginManifest, ManifestError> {
    let text = crate::diagnostic::read_config_file(path).map_err(|source| ManifestError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let (manifest, warnings) = parse(&text, path, None).map_err(ManifestError::Invalid)?;
    for w in warnings {
        tracing::warn!("{w}");
    }
    Ok(manifest)
}

/// Parses manifest text; `path` is recorded as [`PluginManifest::source`] and used in diagnostics.
/// Returns the manifest and its warnings, or every problem found.
pub fn parse_manifest(
    text: &str,
    path: &Path,
) -> Result<(PluginManifest, Vec<Diagnostic>), ManifestError> {
    parse(text, path, None).map_err(ManifestError::Invalid)
}

/// Every `<dir>/*/plugin.toml`, sorted by folder name. A broken manifest is reported and skipped;
/// the others still load. The manifest `id` must equal its folder name (profiles refer to plugins by
/// id, and the host finds their files by folder). Folders without a `plugin.toml` are skipped
/// silently (they may hold shared assets).
///
/// Diagnostics include the warnings of manifests that loaded. A problem with `dir` itself has
/// `file == dir`.
pub fn discover_plugins(dir: &Path) -> (Vec<PluginManifest>, Vec<Diagnostic>) {
    let mut manifests = Vec::new();
    let mut diagnostics = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            let message = format!("cannot read plugin directory: {e}");
            diagnostics.push(Diagnostic::unlocated(Severity::Error, dir, "", message));
            return (manifests, diagnostics);
        }
    };
    let mut folders: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();

    for folder in folders {
        let path = folder.join("plugin.toml");
        if !path.is_file() {
            tracing::debug!("{}: no plugin.toml, skipped", folder.display());
            continue;
        }
        let Some(name) = folder.file_name().and_then(|n| n.to_str()) else {
            let message = "plugin folder name is not valid UTF-8";
            diagnostics.push(Diagnostic::unlocated(Severity::Error, &path, "", message));
            continue;
        };
        let text = match crate::diagnostic::read_config_file(&path) {
            Ok(text) => text,
            Err(e) => {
                let message = format!("cannot read plugin manifest: {e}");
                diagnostics.push(Diagnostic::unlocated(Severity::Error, &path, "", message));
                continue;
            }
        };
        match parse(&text, &path, Some(name)) {
            Ok((manifest, warnings)) => {
                diagnostics.extend(warnings);
                manifests.push(manifest);
            }
            Err(errors) => diagnostics.extend(errors),
        }
    }
    (manifests, diagnostics)
}

/// `folder`: when given, the manifest id must equal it.
fn parse(
    text: &str,
    path: &Path,
    folder: Option<&str>,
) -> Result<(PluginManifest, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut doc = Doc::parse(text, path, plugin_manifest_json_schema())?;
    doc.check_top_level_keys();
    let plugin = doc.section::<PluginSection>("plugin");
    let tool = doc.section::<ToolLimits>("tool");
    let mcp = match doc.get(&["mcp"]) {
        Some(_) => doc.section::<McpServerConfig>("mcp").value.map(Some),
        None => Some(None),
    };
    let config = doc.section::<toml::Table>("config");

    // The id is read from the document, not from `plugin.value`: it is checked even when another
    // field of `[plugin]` (e.g. an unknown `type`) stopped deserialization.
    let id = doc
        .get(&["plugin", "id"])
        .and_then(|v| v.get_ref().as_str())
        .map(str::to_owned);
    if let Some(id) = id {
        if !is_valid_id(&id) || id == "enabled" {
            let message = format!(
                "`{id}` is not a valid plugin id: use 1 to 64 lowercase letters, digits, `_` or \
                 `-`, starting with a letter or digit (`enabled` is reserved)"
            );
            doc.report(Severity::Error, &["plugin", "id"], Target::Value, message);
        } else if let Some(folder) = folder
            && id != folder
        {
            let message = format!(
                "id `{id}` does not match the plugin's folder name `{folder}`; rename one so they \
                 are equal"
            );
            doc.report(Severity::Error, &["plugin", "id"], Target::Value, message);
        }
    }
    if let Some(p) = &plugin.value
        && plugin.ok("plugin.description")
        && p.description.trim().is_empty()
    {
        let path = ["plugin", "description"];
        doc.report(Severity::Error, &path, Target::Value, "must not be empty");
    }
    if let Some(t) = &tool.value
        && tool.ok("tool.timeout_secs")
        && !(t.timeout_secs.is_finite() && t.timeout_secs > 0.0)
    {
        let message = format!(
            "must be a positive number of seconds, found {}",
            t.timeout_secs
        );
        doc.report(
            Severity::Error,
            &["tool", "timeout_secs"],
            Target::Value,
            message,
        );
    }
    if let Some(t) = &tool.value
        && tool.ok("tool.max_output_bytes")
        && t.max_output_bytes == 0
    {
        let path = ["tool", "max_output_bytes"];
        doc.report(Severity::Error, &path, Target::Value, "must be at least 1");
    }
    if let Some(Some(m)) = &mcp {
        for (i, name) in m.pass_env.iter().enumerate() {
            if !crate::keys::is_env_name(name) {
                let index = i.to_string();
                let path = ["mcp", "pass_env", index.as_str()];
                let message = format!(
                    "expected the name of an environment variable (letters, digits and `_`), found `{name}`"
                );
                doc.report(Severity::Error, &path, Target::Value, message);
            }
        }
        if m.command.trim().is_empty() {
            doc.report(
                Severity::Error,
                &["mcp", "command"],
                Target::Value,
                "must not be empty",
            );
        }
        let secs = m.startup_timeout_secs;
        if !(secs.is_finite() && secs > 0.0) {
            let message = format!("must be a positive number of seconds, found {secs}");
            let path = ["mcp", "startup_timeout_secs"];
            doc.report(Severity::Error, &path, Target::Value, message);
        }
    }

    match (plugin.value, tool.value, mcp, config.value) {
        (Some(p), Some(tool_limits), Some(mcp), Some(config)) if !doc.has_errors() => {
            let manifest = PluginManifest {
                id: p.id,
                kind: p.kind,
                description: p.description,
                tool_limits,
                mcp,
                config,
                source: path.to_path_buf(),
            };
            Ok((manifest, doc.into_diagnostics()))
        }
        _ => Err(doc.into_diagnostics()),
    }
}
