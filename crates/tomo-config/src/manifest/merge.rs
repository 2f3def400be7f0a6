//! A plugin's effective configuration: manifest `[config]` defaults deep-merged with the profile's
//! `[plugins.<id>]` override table.
//!
//! Rules (the override is user input, the defaults define the plugin's settings):
//! - a key in both: the override wins; tables are merged key by key, recursively; arrays are replaced;
//! - an integer may override a float default (`timeout_secs = 5` for `5.0`), becoming a float;
//! - any other type mismatch is an error and the default is kept, so the plugin always receives the
//!   types it declared;
//! - a key not in the defaults is a warning and is **not** merged: the defaults are the plugin's
//!   complete list of settings, so an unknown key is a typo or a setting of another version, and
//!   dropping it keeps the effective config's shape exactly the defaults' shape;
//! - exception: an empty table in the defaults is free-form (e.g. a map of headers), and whatever the
//!   override puts there is kept;
//! - a setting named `*_secs` or `*_s` is a duration: it must be a finite number of seconds from 0 to
//!   [`MAX_CONFIG_SECS`], else it is an error and the default is kept (`1e20` seconds would panic the
//!   plugin's `Duration` at run time, long after `tomo profile check` said ok).

use toml::{Table, Value};

use super::PluginManifest;

/// The longest duration a plugin setting may ask for: thirty days.
pub const MAX_CONFIG_SECS: f64 = 30.0 * 24.0 * 3600.0;
use crate::diagnostic::{Diagnostic, Severity, Target, did_you_mean, dotted};

/// One problem found while merging, relative to the override table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConfigIssue {
    /// Key path inside the override table, e.g. `["limits", "max_bytes"]`.
    pub path: Vec<String>,
    pub severity: Severity,
    pub target: Target,
    pub message: String,
}

/// Manifest `[config]` defaults deep-merged with the profile's override table (see the module docs
/// for the rules). Unknown override keys are warnings and are dropped; type mismatches are errors and
/// keep the default.
///
/// The diagnostics have field `plugins.<id>.<key>` but no file or position: the override table no
/// longer carries source positions. `tomo profile check` ([`crate::profile::check_profile`]) reports
/// the same problems at their line and column in the profile.
pub fn effective_config(
    manifest: &PluginManifest,
    overrides: Option<&Table>,
) -> (Table, Vec<Diagnostic>) {
    let Some(overrides) = overrides else {
        return (manifest.config.clone(), Vec::new());
    };
    let (merged, issues) = merge_config(&manifest.config, overrides);
    let diagnostics = issues
        .into_iter()
        .map(|issue| {
            let path: Vec<&str> = ["plugins", manifest.id.as_str()]
                .into_iter()
                .chain(issue.path.iter().map(String::as_str))
                .collect();
            Diagnostic::unlocated(issue.severity, "", dotted(&path), issue.message)
        })
        .collect();
    (merged, diagnostics)
}

pub(crate) fn merge_config(defaults: &Table, overrides: &Table) -> (Table, Vec<ConfigIssue>) {
    let mut merged = defaults.clone();
    let mut issues = Vec::new();
    merge_into(&mut merged, overrides, &mut Vec::new(), &mut issues);
    (merged, issues)
}

fn merge_into(
    base: &mut Table,
    over: &Table,
    path: &mut Vec<String>,
    issues: &mut Vec<ConfigIssue>,
) {
    let free_form = base.is_empty();
    for (key, value) in over {
        path.push(key.clone());
        match base.get_mut(key) {
            None if free_form => {
                base.insert(key.clone(), value.clone());
            }
            None => {
                let mut message =
                    format!("unknown key `{key}` is ignored: the plugin has no such setting");
                if let Some(hint) = did_you_mean(key, base.keys().map(String::as_str)) {
                    message.push_str(&format!(" (did you mean `{hint}`?)"));
                }
                issues.push(ConfigIssue {
                    path: path.clone(),
                    severity: Severity::Warning,
                    target: Target::Key,
                    message,
                });
            }
            Some(Value::Table(inner)) => match value {
                Value::Table(over_inner) => merge_into(inner, over_inner, path, issues),
                other => issues.push(mismatch(path, "a table", other)),
            },
            Some(slot) => match coerce(slot, value) {
                Some(v) if is_duration_key(key) && duration_problem(&v).is_some() => {
                    let message = duration_problem(&v).unwrap_or_default();
                    issues.push(ConfigIssue {
                        path: path.clone(),
                        severity: Severity::Error,
                        target: Target::Value,
                        message,
                    });
                }
                Some(v) => *slot = v,
                None => {
                    let issue = mismatch(path, kind(slot), value);
                    issues.push(issue);
                }
            },
        }
        path.pop();
    }
}

/// Settings named like `timeout_secs`, `interval_s`, `half_life_s` hold seconds.
fn is_duration_key(key: &str) -> bool {
    key.ends_with("_secs") || key.ends_with("_s")
}

/// Why `value` is no usable number of seconds, if it is not.
fn duration_problem(value: &Value) -> Option<String> {
    let secs = match value {
        Value::Float(f) => *f,
        Value::Integer(i) => *i as f64,
        _ => return None,
    };
    (!(secs.is_finite() && (0.0..=MAX_CONFIG_SECS).contains(&secs))).then(|| {
        format!(
            "must be a number of seconds from 0 to {MAX_CONFIG_SECS} (30 days), found {secs}; the default is used"
        )
    })
}

/// `value` converted to the default's type, if it has it (or is an integer for a float default).
fn coerce(default: &Value, value: &Value) -> Option<Value> {
    match (default, value) {
        (Value::Float(_), Value::Integer(i)) => Some(Value::Float(*i as f64)),
        _ if std::mem::discriminant(default) == std::mem::discriminant(value) => {
            Some(value.clone())
        }
        _ => None,
    }
}

fn mismatch(path: &[String], expected: &str, found: &Value) -> ConfigIssue {
    ConfigIssue {
        path: path.to_vec(),
        severity: Severity::Error,
        target: Target::Value,
        message: format!(
            "expected {expected} (the type of the plugin's default), found {}; the default is used",
            kind(found)
        ),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}
