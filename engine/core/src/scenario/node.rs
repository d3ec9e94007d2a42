//! A TOML document as a tree that remembers where every key and value sits in the source.
//!
//! Serde-derived structs stop at the first type error and report no field path; the scenario
//! checker wants every problem, each with its line, column and path. So the document is first
//! read into this loose tree (only TOML syntax errors stop it), and the typed decoding in
//! `schema` walks the tree and collects errors as it goes.
//!
//! Spans come from `toml`'s `Spanned` protocol: a deserializer that knows where a value sits
//! answers a request for the struct named [`SPANNED_NAME`] with a three-field map (start, end,
//! value). The names are `serde_spanned`'s, which `toml::Spanned` uses; they are private to that
//! crate, so the test `spans_point_at_keys_and_values` breaks if they ever change. Values with
//! no known place (the root table, implicit tables) get the span of their parent.

use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A byte range of the source.
pub(crate) type Span = Range<usize>;

const SPANNED_NAME: &str = "$__serde_spanned_private_Spanned";
const SPANNED_START: &str = "$__serde_spanned_private_start";
const SPANNED_END: &str = "$__serde_spanned_private_end";
const SPANNED_VALUE: &str = "$__serde_spanned_private_value";
const SPANNED_FIELDS: &[&str] = &[SPANNED_START, SPANNED_END, SPANNED_VALUE];
/// The one key of the map `toml` presents for a TOML datetime.
const DATETIME_FIELD: &str = "$__toml_private_datetime";

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
    Table(Vec<Entry>),
}

/// One `key = value` of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
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

/// Parses TOML text into a tree. The error is `toml`'s (syntax, or a value too deep).
pub(crate) fn parse(source: &str) -> Result<Node, toml::de::Error> {
    toml::from_str::<Node>(source)
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, NodeVisitor { spanned: true })
    }
}

/// The inner value of a spanned wrapper: asking for spans again would loop forever.
struct Bare(Node);

impl<'de> Deserialize<'de> for Bare {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Bare, D::Error> {
        deserializer
            .deserialize_any(NodeVisitor { spanned: false })
            .map(Bare)
    }
}

struct NodeVisitor {
    /// True when the deserializer may answer with a spanned wrapper map.
    spanned: bool,
}

fn bare(value: Value) -> Node {
    Node { span: None, value }
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(bare(Value::Boolean(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(bare(Value::Integer(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        let v = i64::try_from(v).map_err(|_| E::custom("integer out of range"))?;
        Ok(bare(Value::Integer(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(bare(Value::Float(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(bare(Value::String(v.to_string())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(bare(Value::String(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(bare(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let Some(first) = map.next_key::<Key>()? else {
            return Ok(bare(Value::Table(Vec::new())));
        };
        if self.spanned && first.text == SPANNED_START {
            return spanned_wrapper(map);
        }
        if first.text == DATETIME_FIELD {
            let text: String = map.next_value()?;
            return Ok(bare(Value::Datetime(text)));
        }
        let mut entries = vec![Entry {
            key: first.text,
            key_span: first.span,
            node: map.next_value()?,
        }];
        while let Some(key) = map.next_key::<Key>()? {
            entries.push(Entry {
                key: key.text,
                key_span: key.span,
                node: map.next_value()?,
            });
        }
        Ok(bare(Value::Table(entries)))
    }
}

/// Reads the rest of a spanned wrapper whose start key was just read: start, end, value.
fn spanned_wrapper<'de, A: MapAccess<'de>>(mut map: A) -> Result<Node, A::Error> {
    let start: usize = map.next_value()?;
    let mut end: Option<usize> = None;
    let mut inner: Option<Node> = None;
    while let Some(key) = map.next_key::<Key>()? {
        match key.text.as_str() {
            SPANNED_END => end = Some(map.next_value()?),
            SPANNED_VALUE => inner = Some(map.next_value::<Bare>()?.0),
            other => return Err(de::Error::unknown_field(other, SPANNED_FIELDS)),
        }
    }
    let end = end.ok_or_else(|| de::Error::missing_field(SPANNED_END))?;
    let mut node = inner.ok_or_else(|| de::Error::missing_field(SPANNED_VALUE))?;
    node.span = Some(start..end.max(start));
    Ok(node)
}

/// A table key, with its span when the deserializer knows it.
struct Key {
    text: String,
    span: Option<Span>,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key {
            text: v.to_string(),
            span: None,
        })
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key, E> {
        Ok(Key {
            text: v,
            span: None,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Key, A::Error> {
        let (mut start, mut end, mut text) = (None, None, None);
        while let Some(field) = map.next_key::<String>()? {
            match field.as_str() {
                SPANNED_START => start = Some(map.next_value::<usize>()?),
                SPANNED_END => end = Some(map.next_value::<usize>()?),
                SPANNED_VALUE => text = Some(map.next_value::<String>()?),
                other => return Err(de::Error::unknown_field(other, SPANNED_FIELDS)),
            }
        }
        let text = text.ok_or_else(|| de::Error::missing_field(SPANNED_VALUE))?;
        let span = match (start, end) {
            (Some(start), Some(end)) => Some(start..end.max(start)),
            _ => None,
        };
        Ok(Key { text, span })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<'a>(source: &'a str, span: &Option<Span>) -> &'a str {
        &source[span.clone().expect("the node has a span")]
    }

    fn table(node: &Node) -> &[Entry] {
        match &node.value {
            Value::Table(entries) => entries,
            other => panic!("expected a table, found {other:?}"),
        }
    }

    #[test]
    fn spans_point_at_keys_and_values() {
        // Goal: keys, values, inline tables and arrays of tables keep their source spans (this
        // breaks if toml's private span protocol changes).
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
}
