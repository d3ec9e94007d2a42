//! The building blocks of decoding: a field with its path and span, a table's fields, and
//! the decoders of single values (names, durations, instants, integers, JSON values).
//!
//! Each value decoder reports what is wrong with its field into [`Decoder`] and returns
//! `None`, so its caller can go on with the next field.

use serde_json::Value as Json;

use super::decode::Decoder;
use super::error::Problem;
use std::ops::Range;

use super::node::{KeyValue, Node, Span, Value};
use super::schema::{name_problem, LABEL_LEN_MAX, NAME_WHAT};
use crate::time::{parse_duration_ns, parse_instant};

/// A field under decoding: its value, its path and the span errors point at.
#[derive(Debug, Clone)]
pub struct Field<'a> {
    pub(crate) node: &'a Node,
    /// The field path, like `task[1].steps[0].sleep`.
    pub path: String,
    /// Where problems with the field point, as a byte range of the source.
    pub span: Range<usize>,
}

impl Field<'_> {
    /// Describes the value for an "expected …, found …" message.
    pub fn found(&self) -> String {
        self.node.value.found()
    }

    /// Returns the value when it is a boolean.
    pub fn boolean(&self) -> Option<bool> {
        match self.node.value {
            Value::Boolean(value) => Some(value),
            _ => None,
        }
    }

    /// Returns whether the value is a table.
    pub fn is_table(&self) -> bool {
        matches!(self.node.value, Value::Table(_))
    }
}

/// The entries of a table under decoding, and which of them were read.
#[derive(Debug)]
pub struct Fields<'a> {
    pub(crate) entries: &'a [KeyValue],
    read: Vec<bool>,
    path: String,
    span: Span,
}

impl<'a> Fields<'a> {
    /// Returns the field `key` and marks it read.
    pub fn take(&mut self, key: &str) -> Option<Field<'a>> {
        let index = self.entries.iter().position(|e| e.key == key)?;
        self.read[index] = true;
        let entry = &self.entries[index];
        let span = entry
            .node
            .span
            .clone()
            .or(entry.key_span.clone())
            .unwrap_or(self.span.clone());
        Some(Field {
            node: &entry.node,
            path: join(&self.path, &entry.key),
            span,
        })
    }

    /// Returns the entries not read yet, with their paths and key spans.
    pub(crate) fn unread(&self) -> Vec<(&'a KeyValue, String, Span)> {
        self.entries
            .iter()
            .zip(&self.read)
            .filter(|(_, read)| !**read)
            .map(|(e, _)| {
                let span = e
                    .key_span
                    .clone()
                    .or(e.node.span.clone())
                    .unwrap_or(self.span.clone());
                (e, join(&self.path, &e.key), span)
            })
            .collect()
    }

    /// Returns the keys of the table, in source order.
    pub fn keys(&self) -> Vec<String> {
        self.entries.iter().map(|entry| entry.key.clone()).collect()
    }

    /// Reports every unread key as unknown, with `message` (which says what the table takes).
    pub fn finish(self, decoded: &mut Decoder, message: &str) {
        for (_, path, span) in self.unread() {
            decoded.problem(span, path, message.to_string());
        }
    }
}

/// Appends `key` to a field path, quoting keys that are not bare TOML keys.
pub(crate) fn join(path: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    };
    if path.is_empty() {
        key
    } else {
        format!("{path}.{key}")
    }
}

/// Formats a list of keys as "`a`, `b`, `c`".
pub fn one_of(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Decoder {
    /// Records a problem with the field at `field`, placed at `span`.
    pub fn problem(&mut self, span: Span, field: String, message: String) {
        self.problems.push(Problem {
            span,
            field,
            message,
        });
    }

    /// Reports `field` as not what was expected.
    pub fn expected(&mut self, field: &Field<'_>, what: &str) {
        let message = format!("expected {what}, found {}", field.node.value.found());
        self.problem(field.span.clone(), field.path.clone(), message);
    }

    /// Reports a required field that is absent, at the table that lacks it.
    pub fn missing(&mut self, fields: &Fields<'_>, key: &str, what: &str) {
        let message = format!("expected {what}, found nothing");
        self.problem(fields.span.clone(), join(&fields.path, key), message);
    }

    /// A table; `what` describes it for the error.
    pub fn table<'a>(&mut self, field: &Field<'a>, what: &str) -> Option<Fields<'a>> {
        match &field.node.value {
            Value::Table(entries) => Some(Fields {
                entries,
                read: vec![false; entries.len()],
                path: field.path.clone(),
                span: field.span.clone(),
            }),
            _ => {
                self.expected(field, what);
                None
            }
        }
    }

    /// A string; `what` describes what it should hold for the error.
    pub fn string<'a>(&mut self, field: &Field<'a>, what: &str) -> Option<&'a str> {
        match &field.node.value {
            Value::String(text) => Some(text),
            _ => {
                self.expected(field, what);
                None
            }
        }
    }

    /// A scenario, task or channel name: `[a-z0-9-]+`, at most 64 characters.
    pub fn name(&mut self, field: &Field<'_>) -> Option<String> {
        let text = self.string(field, NAME_WHAT)?;
        if let Some(what) = name_problem(text) {
            self.expected(field, &what);
            return None;
        }
        Some(text.to_string())
    }

    /// An event or outcome name: any text of 1 to 128 characters without
    /// control characters.
    pub fn label(&mut self, field: &Field<'_>) -> Option<String> {
        let what = format!("a name of 1 to {LABEL_LEN_MAX} characters without control characters");
        let text = self.string(field, &what)?;
        let count = text.chars().count();
        if count == 0 || count > LABEL_LEN_MAX || text.chars().any(char::is_control) {
            self.expected(field, &what);
            return None;
        }
        Some(text.to_string())
    }

    /// A duration string (`"250ms"`, `"1h 30m"`), in nanoseconds. Bare numbers are refused:
    /// `sleep = 100` does not say 100 of what.
    pub fn duration(&mut self, field: &Field<'_>) -> Option<u64> {
        const WHAT: &str = "a duration like \"250ms\"";
        let text = self.string(field, WHAT)?;
        let ns = parse_duration_ns(text).ok();
        if ns.is_none() {
            self.expected(field, WHAT);
        }
        ns
    }

    /// A duration string of whole milliseconds (`"500ms"`, `"2s"`), in milliseconds, for
    /// settings that the harness keeps in milliseconds.
    pub fn duration_ms(&mut self, field: &Field<'_>) -> Option<u64> {
        const WHAT: &str = "a duration of whole milliseconds like \"500ms\"";
        let ns = self.duration(field)?;
        if ns % 1_000_000 != 0 {
            self.expected(field, WHAT);
            return None;
        }
        Some(ns / 1_000_000)
    }

    /// An RFC 3339 instant, as a string or a TOML datetime, in nanoseconds since the epoch.
    pub fn instant(&mut self, field: &Field<'_>) -> Option<i64> {
        const WHAT: &str = "an RFC 3339 instant like \"2026-01-01T00:00:00Z\"";
        let text = match &field.node.value {
            Value::String(text) | Value::Datetime(text) => text,
            _ => {
                self.expected(field, WHAT);
                return None;
            }
        };
        let unix_ns = parse_instant(text).ok();
        if unix_ns.is_none() {
            self.expected(field, WHAT);
        }
        unix_ns
    }

    /// An integer in `low..=high`; `what` describes the range for the error.
    pub fn integer(&mut self, field: &Field<'_>, low: i64, high: i64, what: &str) -> Option<i64> {
        match field.node.value {
            Value::Integer(n) if (low..=high).contains(&n) => Some(n),
            _ => {
                self.expected(field, what);
                None
            }
        }
    }

    /// An array, as fields whose paths end in `[index]`.
    pub fn array<'a>(&mut self, field: &Field<'a>, what: &str) -> Option<Vec<Field<'a>>> {
        let Value::Array(items) = &field.node.value else {
            self.expected(field, what);
            return None;
        };
        let fields = items.iter().enumerate().map(|(index, node)| Field {
            node,
            path: format!("{}[{index}]", field.path),
            span: node.span.clone().unwrap_or(field.span.clone()),
        });
        Some(fields.collect())
    }

    /// Turns a TOML value into JSON. Datetimes become their text; NaN and infinities, which
    /// JSON cannot hold, are refused.
    pub fn json(&mut self, field: &Field<'_>) -> Option<Json> {
        match &field.node.value {
            Value::String(text) | Value::Datetime(text) => Some(Json::String(text.clone())),
            Value::Integer(n) => Some(Json::from(*n)),
            Value::Boolean(b) => Some(Json::Bool(*b)),
            Value::Float(x) => {
                let number = serde_json::Number::from_f64(*x);
                if number.is_none() {
                    self.expected(field, "a finite number");
                }
                number.map(Json::Number)
            }
            Value::Array(_) => {
                let items = self.array(field, "an array")?;
                let values: Vec<Option<Json>> = items.iter().map(|item| self.json(item)).collect();
                values
                    .into_iter()
                    .collect::<Option<Vec<_>>>()
                    .map(Json::Array)
            }
            Value::Table(_) => {
                let mut fields = self.table(field, "a table")?;
                let mut map = serde_json::Map::new();
                let mut complete = true;
                for entry in fields.entries {
                    let Some(inner) = fields.take(&entry.key) else {
                        continue;
                    };
                    match self.json(&inner) {
                        Some(value) => drop(map.insert(entry.key.clone(), value)),
                        None => complete = false,
                    }
                }
                complete.then_some(Json::Object(map))
            }
        }
    }
}
