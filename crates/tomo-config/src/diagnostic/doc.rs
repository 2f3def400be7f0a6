//! A parsed TOML document that keeps source spans, so every problem can be reported at its line and
//! column with its dotted field path.
//!
//! Tables are deserialized one at a time with serde (through `serde_path_to_error` for the field path and
//! `serde_ignored` for unknown keys). To report *all* problems rather than the first, a failed field is
//! removed (or, if required, replaced by a placeholder) and the table is deserialized again; the fields
//! that failed are returned so semantic checks can skip them.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue, ValueDeserializer};

use super::humanize::{Reworded, reword};
use super::{Diagnostic, LineIndex, Severity, did_you_mean};

/// Upper bound on re-deserializations of one table; each attempt removes one bad field.
const MAX_ATTEMPTS: usize = 64;

/// Where in the source a diagnostic should point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The key (for unknown keys, and the table header for a missing field).
    Key,
    /// The value (wrong type, invalid value).
    Value,
}

/// The result of deserializing one table.
#[derive(Debug)]
pub(crate) struct Section<T> {
    /// `None` if the table could not be deserialized even after dropping the bad fields.
    pub value: Option<T>,
    /// Dotted paths of the fields that had errors; their values in `value` are defaults/placeholders.
    pub failed: BTreeSet<String>,
}

impl<T> Section<T> {
    /// True if `field` (a dotted path) deserialized without error, so checking its value makes sense.
    pub fn ok(&self, field: &str) -> bool {
        !self.failed.contains(field)
    }
}

pub(crate) struct Doc<'i> {
    lines: LineIndex<'i>,
    file: PathBuf,
    root: Spanned<DeValue<'i>>,
    /// JSON Schema of the whole document: lists the keys each table accepts, for "did you mean".
    schema: serde_json::Value,
    diagnostics: Vec<Diagnostic>,
}

impl<'i> Doc<'i> {
    /// Parses `text`; on syntax errors returns all of them (the recovered tree is not trusted further).
    pub fn parse(
        text: &'i str,
        file: &Path,
        schema: serde_json::Value,
    ) -> Result<Self, Vec<Diagnostic>> {
        let (root, errors) = DeTable::parse_recoverable(text);
        let lines = LineIndex::new(text);
        if !errors.is_empty() {
            let headers = LineHeaders::new(&lines);
            let mut diagnostics: Vec<Diagnostic> = errors
                .iter()
                .map(|e| {
                    let offset = e.span().map_or(0, |s| s.start);
                    let message = e.message().trim().replace('\n', "; ");
                    let message = format!("invalid TOML: {message}");
                    let field = guess_field(&lines, &headers, offset);
                    Diagnostic::at_offset(Severity::Error, file, &lines, offset, field, message)
                })
                .collect();
            super::sort(&mut diagnostics);
            return Err(diagnostics);
        }
        let span = root.span();
        Ok(Self {
            lines,
            file: file.to_path_buf(),
            root: Spanned::new(span, DeValue::Table(root.into_inner())),
            schema,
            diagnostics: Vec::new(),
        })
    }

    pub fn has_errors(&self) -> bool {
        super::has_errors(&self.diagnostics)
    }

    pub fn into_diagnostics(self) -> Vec<Diagnostic> {
        let mut d = self.diagnostics;
        super::sort(&mut d);
        d
    }

    /// The value at `path` (table keys, or decimal indices into arrays).
    pub fn get<S: AsRef<str>>(&self, path: &[S]) -> Option<&Spanned<DeValue<'i>>> {
        self.walk(path).map(|(_, v)| v)
    }

    /// Keys of the table at `path`, with the span of each key, in document order of spans.
    pub fn table_keys<S: AsRef<str>>(&self, path: &[S]) -> Vec<(String, Range<usize>)> {
        let mut keys: Vec<_> = match self.get(path).map(Spanned::get_ref) {
            Some(DeValue::Table(t)) => t
                .iter()
                .map(|(k, _)| (k.get_ref().to_string(), k.span()))
                .collect(),
            _ => Vec::new(),
        };
        keys.sort_by_key(|(_, s)| s.start);
        keys
    }

    /// Records a diagnostic at `path`; if the path does not exist, at its nearest existing ancestor.
    pub fn report<S: AsRef<str>>(
        &mut self,
        severity: Severity,
        path: &[S],
        target: Target,
        message: impl Into<String>,
    ) {
        let offset = self.offset_of(path, target);
        self.push_at(severity, offset, dotted(path), message);
    }

    /// Records a diagnostic at a byte offset.
    pub fn push_at(
        &mut self,
        severity: Severity,
        offset: usize,
        field: String,
        message: impl Into<String>,
    ) {
        let d = Diagnostic::at_offset(severity, &self.file, &self.lines, offset, field, message);
        self.diagnostics.push(d);
    }

    /// Warns about every top-level key the schema does not list.
    pub fn check_top_level_keys(&mut self) {
        let known = self.schema_keys(&[] as &[&str]);
        for (key, span) in self.table_keys(&[] as &[&str]) {
            if !known.contains(&key) {
                let message = unknown_key_message(&key, &known);
                self.push_at(Severity::Warning, span.start, key, message);
            }
        }
    }

    /// Deserializes the top-level table `name`. An absent table deserializes like an empty one, so
    /// serde defaults apply and missing required fields are reported.
    pub fn section<T: DeserializeOwned>(&mut self, name: &str) -> Section<T> {
        let base = vec![name.to_owned()];
        let (value, absent) = match self.get(&base) {
            Some(v) => (v.clone(), false),
            None => (Spanned::new(0..0, DeValue::Table(DeTable::new())), true),
        };
        if !matches!(value.get_ref(), DeValue::Table(_)) {
            let found = kind_of(value.get_ref());
            self.report(
                Severity::Error,
                &base,
                Target::Value,
                format!("expected a table, found {found}"),
            );
            return Section {
                value: None,
                failed: BTreeSet::from([name.to_owned()]),
            };
        }
        // Report every missing required field up front: deserialization can only get past a missing
        // field with a placeholder, which may not fit its type (an enum), and then it stops.
        let mut failed = BTreeSet::new();
        for field in self.schema_required(&base) {
            if !matches!(value.get_ref(), DeValue::Table(t) if t.contains_key(field.as_str())) {
                let offset = self.offset_of(&base, Target::Key);
                let dotted = format!("{name}.{field}");
                self.push_at(
                    Severity::Error,
                    offset,
                    dotted.clone(),
                    missing_message(name, absent),
                );
                failed.insert(dotted);
            }
        }
        self.deserialize_table(&base, value, absent, failed)
    }

    fn deserialize_table<T: DeserializeOwned>(
        &mut self,
        base: &[String],
        mut value: Spanned<DeValue<'i>>,
        absent: bool,
        mut failed: BTreeSet<String>,
    ) -> Section<T> {
        let mut ignored = BTreeSet::new();
        let mut result = None;
        for _ in 0..MAX_ATTEMPTS {
            let mut seen = Vec::new();
            let outcome: Result<T, _> = {
                let mut on_ignored = |p: serde_ignored::Path<'_>| seen.push(ignored_path(&p));
                let de = serde_ignored::Deserializer::new(
                    ValueDeserializer::from(value.clone()),
                    &mut on_ignored,
                );
                serde_path_to_error::deserialize(de)
            };
            ignored.extend(seen);
            match outcome {
                Ok(v) => {
                    result = Some(v);
                    break;
                }
                Err(e) => {
                    let rel: Vec<String> = e.path().iter().filter_map(segment_name).collect();
                    let span = e.inner().span();
                    let message = e.inner().message().to_owned();
                    let retry = self.record_error(
                        base,
                        rel,
                        span,
                        &message,
                        absent,
                        &mut value,
                        &mut failed,
                    );
                    if !retry {
                        break;
                    }
                }
            }
        }
        for rel in ignored {
            let path: Vec<String> = base.iter().cloned().chain(rel).collect();
            self.unknown_key(&path);
        }
        Section {
            value: result,
            failed,
        }
    }

    /// Records one deserialization error and patches `value` so the next attempt gets further.
    /// Returns false when no further progress is possible.
    #[allow(clippy::too_many_arguments)] // private helper; bundling these into a struct hides nothing.
    fn record_error(
        &mut self,
        base: &[String],
        mut rel: Vec<String>,
        span: Option<Range<usize>>,
        message: &str,
        absent: bool,
        value: &mut Spanned<DeValue<'i>>,
        failed: &mut BTreeSet<String>,
    ) -> bool {
        let full = |rel: &[String]| -> Vec<String> { base.iter().chain(rel).cloned().collect() };
        match reword(message) {
            Reworded::MissingField(name) => {
                let container = full(&rel);
                rel.push(name);
                let field = dotted(&full(&rel));
                // A field removed after a type error comes back as "missing": already reported.
                if !failed.contains(&field) {
                    let msg = missing_message(&base.join("."), absent);
                    let offset = self.offset_of(&container, Target::Key);
                    self.push_at(Severity::Error, offset, field.clone(), msg);
                    failed.insert(field);
                }
                insert_placeholder(value, &rel)
            }
            Reworded::UnknownField { key, message } => {
                if rel.last() != Some(&key) {
                    rel.push(key);
                }
                let path = full(&rel);
                if !failed.insert(dotted(&path)) {
                    return false;
                }
                self.report(Severity::Error, &path, Target::Key, message);
                remove_field(value, &rel)
            }
            Reworded::Other(msg) => {
                let path = full(&rel);
                if !failed.insert(dotted(&path)) {
                    return false;
                }
                // Prefer the span of the field we know the path of; fall back to the parser's span.
                let offset = match (self.get(&path), span) {
                    (Some(v), _) if !rel.is_empty() => v.span().start,
                    (_, Some(s)) => s.start,
                    _ => self.offset_of(&path, Target::Value),
                };
                self.push_at(Severity::Error, offset, dotted(&path), msg);
                remove_field(value, &rel)
            }
        }
    }

    fn unknown_key(&mut self, path: &[String]) {
        let Some((last, container)) = path.split_last() else {
            return;
        };
        let known = self.schema_keys(container);
        let message = unknown_key_message(last, &known);
        self.report(Severity::Warning, path, Target::Key, message);
    }

    /// The keys the schema allows in the table at `path` (empty if unknown or free-form).
    pub fn schema_keys<S: AsRef<str>>(&self, path: &[S]) -> Vec<String> {
        self.schema_node(path)
            .and_then(|n| n.get("properties"))
            .and_then(serde_json::Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The keys the schema requires in the table at `path`.
    fn schema_required<S: AsRef<str>>(&self, path: &[S]) -> Vec<String> {
        self.schema_node(path)
            .and_then(|n| n.get("required"))
            .and_then(serde_json::Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|k| k.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn schema_node<S: AsRef<str>>(&self, path: &[S]) -> Option<&serde_json::Value> {
        let mut node = resolve(&self.schema, &self.schema);
        for seg in path {
            let next = node
                .get("properties")
                .and_then(|p| p.get(seg.as_ref()))
                .or_else(|| node.get("additionalProperties").filter(|v| v.is_object()))?;
            node = resolve(&self.schema, next);
        }
        Some(node)
    }

    fn walk<S: AsRef<str>>(
        &self,
        path: &[S],
    ) -> Option<(Option<Range<usize>>, &Spanned<DeValue<'i>>)> {
        let mut key_span = None;
        let mut node = &self.root;
        for seg in path {
            let seg = seg.as_ref();
            match node.get_ref() {
                DeValue::Table(t) => {
                    let (k, v) = t.get_key_value(seg)?;
                    key_span = Some(k.span());
                    node = v;
                }
                DeValue::Array(a) => {
                    node = a.get(seg.parse::<usize>().ok()?)?;
                    key_span = None;
                }
                _ => return None,
            }
        }
        Some((key_span, node))
    }

    /// Byte offset for `path`, falling back to the nearest ancestor that exists (0 if none does).
    fn offset_of<S: AsRef<str>>(&self, path: &[S], target: Target) -> usize {
        for len in (0..=path.len()).rev() {
            if let Some((key, value)) = self.walk(&path[..len]) {
                let exact = len == path.len();
                return match (target, key) {
                    (Target::Value, _) if exact => value.span().start,
                    (_, Some(k)) => k.start,
                    // The root table's span is the whole file; point at its start.
                    (_, None) => value.span().start,
                };
            }
        }
        0
    }
}

fn missing_message(table: &str, absent: bool) -> String {
    if absent {
        format!("missing required field (the file has no `[{table}]` table)")
    } else {
        "missing required field".to_owned()
    }
}

fn unknown_key_message(key: &str, known: &[String]) -> String {
    let mut message = format!("unknown key `{key}` is ignored");
    if let Some(hint) = did_you_mean(key, known.iter().map(String::as_str)) {
        message.push_str(&format!(" (did you mean `{hint}`?)"));
    }
    message
}

/// Follows `$ref` into `$defs` and looks through `Option`'s `anyOf [T, null]`.
fn resolve<'a>(
    root: &'a serde_json::Value,
    mut node: &'a serde_json::Value,
) -> &'a serde_json::Value {
    for _ in 0..16 {
        if let Some(name) = node
            .get("$ref")
            .and_then(serde_json::Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            && let Some(def) = root.get("$defs").and_then(|d| d.get(name))
        {
            node = def;
            continue;
        }
        if let Some(branch) = ["anyOf", "oneOf"]
            .iter()
            .filter_map(|k| node.get(*k).and_then(serde_json::Value::as_array))
            .flatten()
            .find(|b| b.get("type").and_then(serde_json::Value::as_str) != Some("null"))
        {
            node = branch;
            continue;
        }
        break;
    }
    node
}

/// `["plugins", "enabled", "1"]` → `plugins.enabled[1]`.
pub(crate) fn dotted<S: AsRef<str>>(path: &[S]) -> String {
    let mut out = String::new();
    for seg in path {
        let seg = seg.as_ref();
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) && !out.is_empty() {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

fn kind_of(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

fn segment_name(seg: &serde_path_to_error::Segment) -> Option<String> {
    use serde_path_to_error::Segment;
    match seg {
        Segment::Seq { index } => Some(index.to_string()),
        Segment::Map { key } => Some(key.clone()),
        Segment::Enum { variant } => Some(variant.clone()),
        Segment::Unknown => None,
    }
}

fn ignored_path(path: &serde_ignored::Path<'_>) -> Vec<String> {
    use serde_ignored::Path;
    match path {
        Path::Root => Vec::new(),
        Path::Seq { parent, index } => {
            let mut v = ignored_path(parent);
            v.push(index.to_string());
            v
        }
        Path::Map { parent, key } => {
            let mut v = ignored_path(parent);
            v.push(key.clone());
            v
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => ignored_path(parent),
    }
}

/// The table at `path` inside `value`, if every step is a table.
fn table_mut<'a, 'i>(
    value: &'a mut Spanned<DeValue<'i>>,
    path: &[String],
) -> Option<&'a mut DeTable<'i>> {
    let mut table = match value.get_mut() {
        DeValue::Table(t) => t,
        _ => return None,
    };
    for seg in path {
        table = match table.get_mut(seg.as_str()).map(Spanned::get_mut) {
            Some(DeValue::Table(t)) => t,
            _ => return None,
        };
    }
    Some(table)
}

/// Removes the deepest table entry on `rel` (an error inside an array drops the whole array).
fn remove_field(value: &mut Spanned<DeValue<'_>>, rel: &[String]) -> bool {
    for len in (1..=rel.len()).rev() {
        let (parent, last) = rel[..len].split_at(len - 1);
        if let Some(table) = table_mut(value, parent)
            && table.remove(last[0].as_str()).is_some()
        {
            return true;
        }
    }
    false
}

/// Inserts an empty string at `rel` so deserialization can get past a missing required field.
fn insert_placeholder(value: &mut Spanned<DeValue<'_>>, rel: &[String]) -> bool {
    let Some((last, parent)) = rel.split_last() else {
        return false;
    };
    let span = value.span();
    let Some(table) = table_mut(value, parent) else {
        return false;
    };
    let key = Spanned::new(span.clone(), DeString::Owned(last.clone()));
    table.insert(
        key,
        Spanned::new(span, DeValue::String(DeString::Borrowed(""))),
    );
    true
}

/// For each line, the last `[table]` header line above it (computed once for all syntax errors).
struct LineHeaders {
    above: Vec<Option<usize>>,
}

impl LineHeaders {
    fn new(lines: &LineIndex<'_>) -> Self {
        let mut above = Vec::new();
        let mut last = None;
        let mut index = 0;
        loop {
            let range = lines.line_range(index);
            above.push(last);
            if header_name(&lines.text()[range.clone()]).is_some() {
                last = Some(index);
            }
            if range.end >= lines.text().len() {
                break;
            }
            index += 1;
        }
        Self { above }
    }
}

/// `[a.b]` or `[[a.b]]` → `a.b`.
fn header_name(line: &str) -> Option<String> {
    let l = line.trim();
    let inner = l.strip_prefix("[[").or_else(|| l.strip_prefix('['))?;
    let end = inner.find(']')?;
    Some(inner[..end].trim().to_owned())
}

/// Best-effort field path for a syntax error: the key on the error's line, under the last
/// `[table]` header above it.
fn guess_field(lines: &LineIndex<'_>, headers: &LineHeaders, offset: usize) -> String {
    let text = lines.text();
    let index = lines.line_of(offset.min(text.len()));
    let line = &text[lines.line_range(index)];
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_owned())
        .filter(|k| !k.is_empty() && !k.starts_with('[') && !k.starts_with('#'));
    let header = headers
        .above
        .get(index)
        .copied()
        .flatten()
        .and_then(|h| header_name(&text[lines.line_range(h)]));
    let on_header = line.trim_start().starts_with('[');
    match (header, key) {
        (Some(h), Some(k)) => format!("{h}.{k}"),
        (None, Some(k)) => k,
        (Some(h), None) if !on_header => h,
        _ => String::new(),
    }
}
