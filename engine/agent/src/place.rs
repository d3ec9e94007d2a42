//! Placing a problem with a scenario's eval parts at its line and column in the scenario file,
//! from the field path the problem is about (`mcp[0].world`).

use std::ops::Range;

use simtape::scenario::{Scenario, ScenarioError};
use toml_edit::{ImDocument, Item};

/// One step of a field path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Returns the field path as the scenario checker writes it: `mcp[0].world`.
fn field_name(path: &[Step<'_>]) -> String {
    let mut name = String::new();
    for step in path {
        match step {
            Step::Key(key) if name.is_empty() => name.push_str(key),
            Step::Key(key) => {
                name.push('.');
                name.push_str(key);
            }
            Step::Index(index) => name.push_str(&format!("[{index}]")),
        }
    }
    name
}

/// Returns a problem at the field `path` of `scenario`, placed at the deepest part of the
/// path the source has a position for (line 0 when it has none).
pub(crate) fn problem(scenario: &Scenario, path: &[Step<'_>], message: String) -> ScenarioError {
    let source = scenario.source();
    let (line, column) = span(source, path)
        .map(|span| line_column(source, span.start))
        .unwrap_or((0, 0));
    ScenarioError {
        file: scenario.path().to_path_buf(),
        line,
        column,
        field: field_name(path),
        message,
    }
}

/// Returns the byte range of the deepest item along `path` that has one.
fn span(source: &str, path: &[Step<'_>]) -> Option<Range<usize>> {
    let document = ImDocument::parse(source).ok()?;
    let mut item: &Item = document.as_item();
    let mut found = None;
    for step in path {
        let next = match step {
            Step::Key(key) => item.get(*key),
            Step::Index(index) => item.get(*index),
        };
        let Some(next) = next else { break };
        item = next;
        found = item_span(item).or(found);
    }
    found
}

fn item_span(item: &Item) -> Option<Range<usize>> {
    match item {
        Item::Value(value) => value.span(),
        Item::Table(table) => table.span(),
        Item::ArrayOfTables(array) => array.span(),
        Item::None => None,
    }
}

/// Returns the 1-based line and column (in characters) of byte `offset` of `source`.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = 1 + before.matches('\n').count();
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    (line, 1 + before[line_start..].chars().count())
}

#[cfg(test)]
mod tests {
    use super::{field_name, line_column, span, Step};

    #[test]
    fn fields_are_found_in_arrays_of_tables_and_inline_tables() {
        // Goal: a problem lands on the value of the field it names.
        let source = "[scenario]\nname = \"x\"\n\n[[mcp]]\nname = \"a\"\n\n[[mcp]]\nname = \"b\"\nworld = \"w.json\"\n\n[agent]\ntools = [\"fs\", \"b\"]\n";
        let path = [Step::Key("mcp"), Step::Index(1), Step::Key("world")];
        let at = span(source, &path).map(|s| line_column(source, s.start));
        assert_eq!(at, Some((9, 9)));
        assert_eq!(field_name(&path), "mcp[1].world");
        let tools = [Step::Key("agent"), Step::Key("tools"), Step::Index(1)];
        let at = span(source, &tools).map(|s| line_column(source, s.start));
        assert_eq!(at, Some((12, 16)));
        let missing = [Step::Key("mcp"), Step::Index(0), Step::Key("world")];
        assert!(
            span(source, &missing).is_some(),
            "falls back to the enclosing table"
        );
    }
}
