//! Scenario errors: every one names the file, the line and column, and the field.

use std::fmt;
use std::path::{Path, PathBuf};

use super::node::Span;

/// A problem with a scenario file: where it is, which field, and what is wrong.
///
/// It displays as ``FILE:LINE:COLUMN: field `PATH`: MESSAGE``, for example:
///
/// ```text
/// scenarios/x.toml:12:14: field `task[1].steps[0].sleep`: expected a duration like "250ms", found "soon"
/// ```
///
/// TOML syntax errors name no field (`FILE:LINE:COLUMN: MESSAGE`), and an unreadable file
/// names no place (`FILE: MESSAGE`).
///
/// ```
/// use std::path::Path;
/// use simtape::scenario::Scenario;
/// let source = "[scenario]\nname = \"Hello\"\n[[task]]\nname = \"t\"\nsteps = [{ sleep = \"1s\" }]\n";
/// let error = Scenario::parse(source, Path::new("x.toml")).unwrap_err();
/// assert_eq!((error.line, error.column, error.field.as_str()), (2, 8, "scenario.name"));
/// assert_eq!(
///     error.to_string(),
///     "x.toml:2:8: field `scenario.name`: expected a name of a-z, 0-9 and -, found \"Hello\"",
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The scenario file, as the caller named it.
    pub file: PathBuf,
    /// The line, from 1; 0 when the error is about the whole file (it cannot be read).
    pub line: usize,
    /// The column, from 1, in characters (Unicode scalar values); 0 with `line` 0.
    pub column: usize,
    /// The field path, like `task[1].steps[0].sleep` (indices from 0); empty for TOML syntax
    /// errors and unreadable files.
    pub field: String,
    /// What is wrong, usually `expected …, found …`.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if !self.field.is_empty() {
            write!(f, ": field `{}`", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// An error about the whole file (it could not be read): no line, column or field.
    pub(crate) fn whole_file(file: &Path, message: String) -> ScenarioError {
        ScenarioError {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
            field: String::new(),
            message,
        }
    }
}

/// A problem found while decoding, before it is placed in the source as line and column.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    pub(crate) span: Span,
    pub(crate) field: String,
    pub(crate) message: String,
}

impl Problem {
    /// Turns the byte span into a line and column of `source`.
    pub(crate) fn locate(self, source: &str, file: &Path) -> ScenarioError {
        let (line, column) = line_column(source, self.span.start);
        ScenarioError {
            file: file.to_path_buf(),
            line,
            column,
            field: self.field,
            message: self.message,
        }
    }
}

/// Returns the 1-based line and character column of byte `offset` of `source`. Offsets past
/// the end, or inside a character, are moved back to a valid position rather than trusted.
pub(crate) fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = 1 + before.matches('\n').count();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = 1 + before[line_start..].chars().count();
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_from_one_and_survives_bad_offsets() {
        // Goal: offsets map to 1-based lines and character columns, even past the end or
        // inside a multi-byte character.
        let source = "ab\nçd\n";
        assert_eq!(line_column(source, 0), (1, 1));
        assert_eq!(line_column(source, 3), (2, 1));
        assert_eq!(line_column(source, 5), (2, 2)); // after the two-byte ç
        assert_eq!(line_column(source, 4), (2, 1)); // inside ç: moved back
        assert_eq!(line_column(source, 99), (3, 1));
        assert_eq!(line_column("", 5), (1, 1));
    }

    #[test]
    fn display_omits_what_is_unknown() {
        // Goal: the three display shapes (with field, syntax, unreadable file).
        let mut error = ScenarioError {
            file: PathBuf::from("s.toml"),
            line: 3,
            column: 9,
            field: "task[0].name".into(),
            message: "m".into(),
        };
        assert_eq!(error.to_string(), "s.toml:3:9: field `task[0].name`: m");
        error.field.clear();
        assert_eq!(error.to_string(), "s.toml:3:9: m");
        assert_eq!(
            ScenarioError::whole_file(Path::new("s.toml"), "m".into()).to_string(),
            "s.toml: m"
        );
    }
}
