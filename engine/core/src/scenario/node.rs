//! A TOML document as a tree that remembers where every key and value sits in the source.
//!
//! Serde-derived structs stop at the first type error and report no field path; the scenario
//! checker wants every problem, each with its line, column and path. So the document is first
//! read into this loose tree (only TOML syntax errors stop it), and the typed decoding in
//! `schema` walks the tree and collects errors as it goes.
//!
//! Spans come from `toml_edit`'s span-preserving parse ([`ImDocument`]): every key and value
//! it reads knows its byte range in the source. Values with no place of their own (implicit
//! tables such as `a` in `a.b = 1`) have no span; decoding then points at their key, or
//! failing that at the enclosing field.

use std::ops::Range;

use toml_edit::{ImDocument, InlineTable, Item, Table, TomlError};

/// A byte range of the source.
pub(crate) type Span = Range<usize>;

/// A value and where it sits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) span: Option<Span>,
    pub(crate) value: Value,
}

/// A TOML value whose children are [`Node`]s.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    /// A TOML datetime, in its TOML text form.
    Datetime(String),
    Array(Vec<Node>),
    /// Entries in source order (TOML itself rejects duplicate keys).
    Table(Vec<KeyValue>),
}

/// One `key = value` of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyValue {
    pub(crate) key: String,
    pub(crate) key_span: Option<Span>,
    pub(crate) node: Node,
}

impl Value {
    /// Describes the value for an "expected …, found …" message: scalars verbatim, containers
    /// by kind.
    pub(crate) fn found(&self) -> String {
        match self {
            Value::String(text) => format!("{text:?}"),
            Value::Integer(n) => n.to_string(),
            // TOML spells the special floats nan, inf and -inf.
            Value::Float(x) if x.is_nan() => "nan".to_string(),
            Value::Float(x) if x.is_infinite() => if *x > 0.0 { "inf" } else { "-inf" }.to_string(),
            Value::Float(x) => format!("{x:?}"),
            Value::Boolean(b) => b.to_string(),
            Value::Datetime(text) => format!("datetime {text}"),
            Value::Array(items) if items.is_empty() => "an empty array".to_string(),
            Value::Array(_) => "an array".to_string(),
            Value::Table(entries) if entries.is_empty() => "an empty table".to_string(),
            Value::Table(_) => "a table".to_string(),
        }
    }
}

/// Parses TOML text into a tree. The error is `toml_edit`'s (syntax, a duplicate key, or
/// nesting too deep), with the byte span of the problem.
pub(crate) fn parse(source: &str) -> Result<Node, TomlError> {
    let document = ImDocument::parse(source)?;
    Ok(table_node(document.as_table()))
}

/// A `[table]`, `[[array]]` element, dotted-key table or the root; its span is the one
/// `toml_edit` gives it (the root's is empty at offset 0, implicit tables have none).
fn table_node(table: &Table) -> Node {
    let entries = table
        .iter()
        .filter_map(|(key, item)| {
            Some(KeyValue {
                key: key.to_string(),
                key_span: table.key(key).and_then(|key| key.span()),
                node: item_node(item)?,
            })
        })
        .collect();
    Node {
        span: table.span(),
        value: Value::Table(entries),
    }
}

/// An item of a table; `None` for [`Item::None`], which marks an absent value (the parser
/// produces none, and `Table::iter` skips them anyway).
fn item_node(item: &Item) -> Option<Node> {
    match item {
        Item::None => None,
        Item::Value(value) => Some(value_node(value)),
        Item::Table(table) => Some(table_node(table)),
        Item::ArrayOfTables(tables) => Some(Node {
            span: tables.span(),
            value: Value::Array(tables.iter().map(table_node).collect()),
        }),
    }
}

/// A value written after `=` or inside an array or inline table.
fn value_node(value: &toml_edit::Value) -> Node {
    let tree = match value {
        toml_edit::Value::String(text) => Value::String(text.value().clone()),
        toml_edit::Value::Integer(n) => Value::Integer(*n.value()),
        toml_edit::Value::Float(x) => Value::Float(*x.value()),
        toml_edit::Value::Boolean(b) => Value::Boolean(*b.value()),
        toml_edit::Value::Datetime(datetime) => Value::Datetime(datetime.value().to_string()),
        toml_edit::Value::Array(items) => Value::Array(items.iter().map(value_node).collect()),
        toml_edit::Value::InlineTable(table) => Value::Table(inline_entries(table)),
    };
    Node {
        span: value.span(),
        value: tree,
    }
}

/// The entries of an inline table `{ k = v, … }`, in source order.
fn inline_entries(table: &InlineTable) -> Vec<KeyValue> {
    table
        .iter()
        .map(|(key, value)| KeyValue {
            key: key.to_string(),
            key_span: table.key(key).and_then(|key| key.span()),
            node: value_node(value),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<'a>(source: &'a str, span: &Option<Span>) -> &'a str {
        &source[span.clone().expect("the node has a span")]
    }

    fn table(node: &Node) -> &[KeyValue] {
        match &node.value {
            Value::Table(entries) => entries,
            other => panic!("expected a table, found {other:?}"),
        }
    }

    #[test]
    fn spans_point_at_keys_and_values() {
        // Goal: keys, values, inline tables and arrays of tables keep their source spans.
        let source = "[scenario]\nname = \"x\"\n[[task]]\nsteps = [{ sleep = \"1s\" }]\n";
        let root = parse(source).unwrap();
        let scenario = &table(&root)[0];
        assert_eq!(text(source, &scenario.key_span), "scenario");
        let name = &table(&scenario.node)[0];
        assert_eq!(text(source, &name.key_span), "name");
        assert_eq!(text(source, &name.node.span), "\"x\"");
        let Value::Array(tasks) = &table(&root)[1].node.value else {
            panic!("task is an array")
        };
        assert!(text(source, &tasks[0].span).starts_with("[[task]]"));
        let steps = &table(&tasks[0])[0];
        let Value::Array(steps) = &steps.node.value else {
            panic!("steps is an array")
        };
        assert_eq!(text(source, &steps[0].span), "{ sleep = \"1s\" }");
        assert_eq!(text(source, &table(&steps[0])[0].node.span), "\"1s\"");
    }

    #[test]
    fn datetimes_and_dotted_keys_decode() {
        // Goal: TOML datetimes become their text; dotted keys and implicit tables have no span
        // of their own but still decode.
        let source = "start = 2026-01-01T00:00:00Z\na.b = 1\n";
        let root = parse(source).unwrap();
        let entries = table(&root);
        assert_eq!(
            entries[0].node.value,
            Value::Datetime("2026-01-01T00:00:00Z".into())
        );
        assert_eq!(entries[1].node.span, None);
        assert_eq!(table(&entries[1].node)[0].node.value, Value::Integer(1));
    }

    #[test]
    fn keys_named_like_serde_internals_are_plain_keys() {
        // Goal: no key text has a special meaning (serde-based span readers took these two for
        // a datetime and a span wrapper).
        let source =
            "\"$__toml_private_datetime\" = \"x\"\na.\"$__serde_spanned_private_start\" = 1\n";
        let root = parse(source).unwrap();
        let entries = table(&root);
        assert_eq!(entries[0].key, "$__toml_private_datetime");
        assert_eq!(entries[0].node.value, Value::String("x".into()));
        assert_eq!(table(&entries[1].node)[0].node.value, Value::Integer(1));
    }
}
