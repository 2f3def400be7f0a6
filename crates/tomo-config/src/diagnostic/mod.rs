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

    /// A diagnostic at byte `offset` of `text` (the contents of `file`).
    pub(crate) fn at_offset(
        severity: Severity,
        file: &Path,
        text: &str,
        offset: usize,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = line_column(text, offset);
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

/// 1-based line and character column of byte `offset` in `text` (clamped to the text).
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    // Spans from the parser are on char boundaries, but be safe rather than slice mid-character.
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
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
