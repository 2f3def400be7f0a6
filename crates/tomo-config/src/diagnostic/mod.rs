//! Located problems in Tomo's TOML files (profiles, plugin manifests), printed compiler style:
//!
//! ```text
//! profiles/hana.toml:12:15: error: `llm.temperature`: expected a number, found a string
//! ```
//!
//! Both the profile loader and the plugin manifest loader produce these, so the type lives here and is
//! re-exported from [`crate::profile`].

mod doc;
mod humanize;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub(crate) use doc::{Doc, Section, Target, dotted};
pub(crate) use humanize::did_you_mean;

/// How bad a [`Diagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The file cannot be used as written.
    Error,
    /// The file loads, but something is probably not what the author meant (e.g. a misspelt key).
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One problem in a file, with its position and the dotted path of the field it concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The file the problem is in; empty when not known (see [`Diagnostic::line`]).
    pub file: PathBuf,
    /// 1-based line; 0 when the position is not known (e.g. an I/O error, or a check on data that no
    /// longer carries source positions).
    pub line: usize,
    /// 1-based column, counted in characters; 0 when the position is not known.
    pub column: usize,
    /// Dotted path like `llm.temperature` or `plugins.diary.max_entries`; empty for syntax errors
    /// whose key could not be determined.
    pub field: String,
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic without a position in the file.
    pub fn unlocated(
        severity: Severity,
        file: impl Into<PathBuf>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            severity,
            file: file.into(),
            line: 0,
            column: 0,
            field: field.into(),
            message: message.into(),
        }
    }

    /// A diagnostic at byte `offset` of `text` (the contents of `file`, indexed by `lines`).
    pub(crate) fn at_offset(
        severity: Severity,
        file: &Path,
        lines: &LineIndex<'_>,
        offset: usize,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = lines.line_column(offset);
        Self {
            severity,
            file: file.to_path_buf(),
            line,
            column,
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.file.as_os_str().is_empty() {
            write!(f, "{}:", self.file.display())?;
            if self.line > 0 {
                write!(f, "{}:{}:", self.line, self.column)?;
            }
            f.write_str(" ")?;
        }
        write!(f, "{}: ", self.severity)?;
        if !self.field.is_empty() {
            write!(f, "`{}`: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

/// True if any of `diagnostics` is an error.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(Diagnostic::is_error)
}

/// Displays a list of diagnostics one per line; used by the error types' `Display`.
pub(crate) struct DisplayList<'a>(pub &'a [Diagnostic]);

impl fmt::Display for DisplayList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

/// Sorts by file, position, then errors before warnings, so output reads top to bottom.
pub(crate) fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.severity).cmp(&(&b.file, b.line, b.column, b.severity))
    });
}

/// The largest configuration file (profile, plugin manifest) Tomo reads: real ones are a few KB, and
/// a multi-megabyte file of garbage only costs time to report.
pub const MAX_CONFIG_FILE_BYTES: u64 = 1024 * 1024;

/// Reads a configuration file of at most [`MAX_CONFIG_FILE_BYTES`]; a bigger one is an
/// `InvalidData` error that says so (the file is not read).
pub fn read_config_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let too_big = |len: u64| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the file has {len} bytes or more; a configuration file may have at most {MAX_CONFIG_FILE_BYTES}"
            ),
        )
    };
    let len = file.metadata()?.len();
    if len > MAX_CONFIG_FILE_BYTES {
        return Err(too_big(len));
    }
    let mut text = String::new();
    // `take`: a file that grows while being read (or a FIFO) stops at the cap too.
    file.take(MAX_CONFIG_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_CONFIG_FILE_BYTES {
        return Err(too_big(text.len() as u64));
    }
    Ok(text)
}

/// Where each line of a text starts, built once so that locating every diagnostic costs a binary
/// search instead of a scan from the start (10,000 broken lines took over 20 s that way).
pub(crate) struct LineIndex<'t> {
    text: &'t str,
    /// Byte offset of the start of each line; the first is 0.
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    pub fn new(text: &'t str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { text, starts }
    }

    pub fn text(&self) -> &'t str {
        self.text
    }

    /// 0-based index of the line holding byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// Byte range of line `index` without its newline.
    pub fn line_range(&self, index: usize) -> std::ops::Range<usize> {
        let start = self.starts.get(index).copied().unwrap_or(self.text.len());
        let end = self
            .starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        start..end.max(start)
    }

    /// 1-based line and character column of byte `offset` (clamped to the text).
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        // Spans from the parser are on char boundaries, but be safe rather than slice mid-character.
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_of(offset);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let column = self.text[start..offset].chars().count() + 1;
        (line + 1, column)
    }
}

/// 1-based line and character column of byte `offset` in `text` (clamped to the text).
#[cfg(test)]
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    LineIndex::new(text).line_column(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters_from_one() {
        let text = "a = 1\nnamé = \"x\"\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // After "namé = " (é is two bytes, one character).
        assert_eq!(line_column(text, 6 + "namé = ".len()), (2, 8));
        assert_eq!(line_column(text, 10_000), (3, 1));
    }

    #[test]
    fn display_is_compiler_style() {
        let d = Diagnostic {
            severity: Severity::Error,
            file: PathBuf::from("profiles/hana.toml"),
            line: 12,
            column: 15,
            field: "llm.temperature".into(),
            message: "expected a number, found a string".into(),
        };
        assert_eq!(
            d.to_string(),
            "profiles/hana.toml:12:15: error: `llm.temperature`: expected a number, found a string"
        );
        let d = Diagnostic::unlocated(Severity::Warning, "", "plugins.x.y", "unknown key");
        assert_eq!(d.to_string(), "warning: `plugins.x.y`: unknown key");
    }
}
