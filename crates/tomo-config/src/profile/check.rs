//! `tomo profile check`: the profile on its own, plus its plugin references against a plugin directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::diagnostic::{self, Diagnostic, Severity, Target, did_you_mean};
use crate::manifest::{PluginManifest, discover_plugins, merge_config};

use super::load::{analyze, is_valid_id};

/// Full check used by `tomo profile check`: the profile parses and validates, every enabled plugin
/// exists in `plugins_dir` with a loadable manifest, and every `[plugins.<id>]` override names a known
/// plugin and only keys present in that plugin's `[config]` defaults, with matching types.
///
/// Returns errors and warnings sorted by file and position; an empty list means all is well.
/// Problems in manifests of plugins this profile does not use are not reported.
pub fn check_profile(path: &Path, plugins_dir: &Path) -> Vec<Diagnostic> {
    let text = match crate::diagnostic::read_config_file(path) {
        Ok(text) => text,
        Err(e) => {
            return vec![Diagnostic::unlocated(
                Severity::Error,
                path,
                "",
                format!("cannot read profile: {e}"),
            )];
        }
    };
    let analysis = match analyze(&text, path) {
        Ok(a) => a,
        Err(syntax_errors) => return syntax_errors,
    };
    let mut doc = analysis.doc;
    let mut extra = Vec::new();

    if let Some(plugins) = &analysis.plugins {
        let used: BTreeSet<&str> = plugins
            .enabled
            .iter()
            .chain(plugins.overrides.keys())
            .map(String::as_str)
            .collect();
        let (manifests, manifest_diagnostics) = discover_plugins(plugins_dir);
        // Plugins whose manifest is broken: "not found" would mislead, their own errors say why.
        let mut broken = BTreeSet::new();
        for d in manifest_diagnostics {
            let folder = d
                .file
                .parent()
                .and_then(Path::file_name)
                .and_then(|n| n.to_str())
                .map(str::to_owned);
            match folder {
                Some(folder) if used.contains(folder.as_str()) => {
                    if d.is_error() {
                        broken.insert(folder);
                    }
                    extra.push(d);
                }
                // Not about one plugin (e.g. the directory is unreadable): always relevant.
                _ if d.file == plugins_dir => extra.push(d),
                _ => {}
            }
        }
        let known: BTreeMap<&str, &PluginManifest> =
            manifests.iter().map(|m| (m.id.as_str(), m)).collect();
        let missing = |id: &str| -> String {
            if broken.contains(id) {
                return format!("plugin `{id}` has an invalid manifest (see its errors)");
            }
            let mut message = format!("no plugin `{id}` in {}", plugins_dir.display());
            if let Some(hint) = did_you_mean(id, known.keys().copied()) {
                message.push_str(&format!(" (did you mean `{hint}`?)"));
            }
            message
        };

        for (i, id) in plugins.enabled.iter().enumerate() {
            if is_valid_id(id) && !known.contains_key(id.as_str()) {
                let index = i.to_string();
                let path = ["plugins", "enabled", index.as_str()];
                doc.report(Severity::Error, &path, Target::Value, missing(id));
            }
        }
        for (id, table) in &plugins.overrides {
            let Some(manifest) = known.get(id.as_str()) else {
                let path = ["plugins", id.as_str()];
                doc.report(Severity::Error, &path, Target::Key, missing(id));
                continue;
            };
            let (_, issues) = merge_config(&manifest.config, table);
            for issue in issues {
                let path: Vec<&str> = ["plugins", id.as_str()]
                    .into_iter()
                    .chain(issue.path.iter().map(String::as_str))
                    .collect();
                doc.report(issue.severity, &path, issue.target, issue.message);
            }
        }
    }

    let mut all = doc.into_diagnostics();
    all.extend(extra);
    diagnostic::sort(&mut all);
    // An unknown plugin's override is both "not enabled" (parse) and "no such plugin" (here): the error
    // says it all.
    let errors: BTreeSet<(usize, usize, String)> = all
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.line, d.column, d.field.clone()))
        .collect();
    all.retain(|d| d.is_error() || !errors.contains(&(d.line, d.column, d.field.clone())));
    all
}
