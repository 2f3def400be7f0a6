//! `tomo profile check`: the profile on its own, plus its plugin references against a plugin directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::diagnostic::{self, Diagnostic, Severity, Target, did_you_mean};
use crate::manifest::{PluginManifest, discover_plugins, merge_config};

use super::load::{analyze, is_valid_id};

/// What `tomo profile check` knows beyond the profile and its plugins.
#[derive(Debug, Clone, Default)]
pub struct CheckContext {
    /// The embedded models of the model store's manifest; `None`: the embedded model name is not checked.
    pub embedded_models: Option<Vec<EmbeddedModelInfo>>,
}

/// One embedded model the model store knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedModelInfo {
    pub name: String,
    pub installed: bool,
}

/// [`check_profile_with`] without a model store: the embedded model name is not checked.
pub fn check_profile(path: &Path, plugins_dir: &Path) -> Vec<Diagnostic> {
    check_profile_with(path, plugins_dir, &CheckContext::default())
}

/// Full check used by `tomo profile check`: the profile parses and validates, every enabled plugin
/// exists in `plugins_dir` with a loadable manifest, and every `[plugins.<id>]` override names a known
/// plugin and only keys present in that plugin's `[config]` defaults, with matching types.
///
/// Returns errors and warnings sorted by file and position; an empty list means all is well.
/// Problems in manifests of plugins this profile does not use are not reported. With
/// `context.embedded_models`, an embedded profile's model must be one of them (an error names them), and
/// one that is not installed yet is a warning (the first start installs it).
pub fn check_profile_with(
    path: &Path,
    plugins_dir: &Path,
    context: &CheckContext,
) -> Vec<Diagnostic> {
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

    if let (Some(profile), Some(known)) = (&analysis.profile, &context.embedded_models)
        && let Some(model) = profile.llm.embedded_model()
    {
        check_embedded_model(&mut doc, model, known);
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

fn check_embedded_model(doc: &mut diagnostic::Doc<'_>, model: &str, known: &[EmbeddedModelInfo]) {
    let path = ["llm", "model"];
    match known.iter().find(|m| m.name == model) {
        Some(info) if info.installed => {}
        Some(_) => doc.report(
            Severity::Warning,
            &path,
            Target::Value,
            format!(
                "the embedded model `{model}` is not installed yet: the first start installs it, or run \
                 `tomo models install {model}`"
            ),
        ),
        None => {
            let list: Vec<String> = known
                .iter()
                .map(|m| {
                    if m.installed {
                        format!("`{}` (installed)", m.name)
                    } else {
                        format!("`{}`", m.name)
                    }
                })
                .collect();
            let mut message = format!(
                "no embedded model `{model}`; the embedded models are {}",
                list.join(", ")
            );
            if let Some(hint) = did_you_mean(model, known.iter().map(|m| m.name.as_str())) {
                message.push_str(&format!(" (did you mean `{hint}`?)"));
            }
            doc.report(Severity::Error, &path, Target::Value, message);
        }
    }
}
