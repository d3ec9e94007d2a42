//! The first differing field of two records, and the JSON-ish text of values in reports.
//!
//! Payloads are decoded (with `rmpv`) only here, for the first divergence: fingerprints are
//! enough to align and count, so the hot passes never decode a payload.

use std::collections::BTreeMap;

use rmpv::Value;

use super::report::FieldChange;
use super::Mode;
use crate::tape::{hex_encode, payload_to_json, to_json, RecordKind};

/// The longest rendering of one value in a report, in characters; longer ones are cut and end
/// with `…`, so a megabyte payload cannot flood a terminal.
pub(crate) const RENDER_CHARS_MAX: usize = 1000;

/// Rendered in place of a value that one side does not have.
const ABSENT: &str = "(absent)";

/// Differing fields a report lists for one changed record; the rest are counted.
pub(crate) const CHANGES_LISTED_MAX: usize = 5;

/// The longest rendering of a listed field's value, in characters: a changed field is shown
/// on one line beside its pointer, never a whole body.
pub(crate) const CHANGE_CHARS_MAX: usize = 120;

/// RecordFields of a payload compared before those inside JSON bodies are: bounds the work on two
/// payloads that differ everywhere.
const PAYLOAD_CHANGES_MAX: usize = 10_000;

/// The fields of one record, with its payload resolved (never a blob reference).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordFields<'r> {
    pub(crate) t_ns: u64,
    pub(crate) actor: &'r str,
    pub(crate) task: u32,
    pub(crate) kind: RecordKind,
    pub(crate) payload: &'r [u8],
}

/// A field and its value in each tape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldDiff {
    /// `t_ns`, `actor`, `task`, `kind`, `payload`, or a path into the payload such as
    /// `payload/1/fields/bytes` (array positions and map keys, `/` in keys written `~1`).
    pub(crate) field: String,
    pub(crate) a: String,
    pub(crate) b: String,
}

/// Returns the first field in which `a` and `b` differ under `mode`: the identifying fields,
/// then the payload, then (in exact mode) virtual time.
pub(crate) fn first_difference(
    mode: Mode,
    a: &RecordFields<'_>,
    b: &RecordFields<'_>,
) -> Option<FieldDiff> {
    let differ = |field: &str, a: String, b: String| FieldDiff {
        field: field.to_string(),
        a,
        b,
    };
    if mode != Mode::Outcome && a.actor != b.actor {
        return Some(differ("actor", quote(a.actor), quote(b.actor)));
    }
    if mode != Mode::Outcome && a.task != b.task {
        return Some(differ("task", a.task.to_string(), b.task.to_string()));
    }
    if a.kind != b.kind {
        return Some(differ("kind", quote(a.kind.name()), quote(b.kind.name())));
    }
    if let Some(diff) = payload_difference(a.payload, b.payload) {
        return Some(diff);
    }
    if mode == Mode::Exact && a.t_ns != b.t_ns {
        return Some(differ("t_ns", a.t_ns.to_string(), b.t_ns.to_string()));
    }
    None
}

fn payload_difference(a: &[u8], b: &[u8]) -> Option<FieldDiff> {
    if a == b {
        return None;
    }
    match (decode(a), decode(b)) {
        (Some(x), Some(y)) => value_difference("payload".to_string(), &x, &y),
        // Not MessagePack (the format does not require it): compare the bytes as a whole.
        _ => Some(FieldDiff {
            field: "payload".into(),
            a: render_payload(a),
            b: render_payload(b),
        }),
    }
}

fn value_difference(path: String, a: &Value, b: &Value) -> Option<FieldDiff> {
    if a == b {
        return None;
    }
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if let Some(diff) = value_difference(format!("{path}/{i}"), p, q) {
                    return Some(diff);
                }
            }
            let i = x.len().min(y.len());
            Some(FieldDiff {
                field: format!("{path}/{i}"),
                a: x.get(i).map_or_else(|| ABSENT.to_string(), render_value),
                b: y.get(i).map_or_else(|| ABSENT.to_string(), render_value),
            })
        }
        (Value::Map(x), Value::Map(y)) => map_difference(path, a, b, x, y),
        _ => Some(FieldDiff {
            field: path,
            a: render_value(a),
            b: render_value(b),
        }),
    }
}

/// Compares two maps by key, in A's key order, then the keys only B has.
fn map_difference(
    path: String,
    a: &Value,
    b: &Value,
    x: &[(Value, Value)],
    y: &[(Value, Value)],
) -> Option<FieldDiff> {
    let x_by_key: BTreeMap<String, &Value> = x.iter().map(|(k, v)| (segment(k), v)).collect();
    let y_by_key: BTreeMap<String, &Value> = y.iter().map(|(k, v)| (segment(k), v)).collect();
    for (key, value) in x {
        let key = segment(key);
        let field = format!("{path}/{key}");
        match y_by_key.get(&key) {
            Some(other) => {
                if let Some(diff) = value_difference(field, value, other) {
                    return Some(diff);
                }
            }
            None => {
                return Some(FieldDiff {
                    field,
                    a: render_value(value),
                    b: ABSENT.into(),
                })
            }
        }
    }
    for (key, value) in y {
        let key = segment(key);
        if !x_by_key.contains_key(&key) {
            let field = format!("{path}/{key}");
            return Some(FieldDiff {
                field,
                a: ABSENT.into(),
                b: render_value(value),
            });
        }
    }
    // Same entries in another order (or repeated keys): the map itself differs.
    Some(FieldDiff {
        field: path,
        a: render_value(a),
        b: render_value(b),
    })
}

/// Returns a map key as one path segment, escaped as in a JSON pointer.
fn segment(key: &Value) -> String {
    let text = match key.as_str() {
        Some(text) => text.to_string(),
        None => to_json(key).to_string(),
    };
    crate::json_diff::escape(&text)
}

/// Returns the fields in which two payloads differ, the first [`CHANGES_LISTED_MAX`] rendered,
/// and how many differ in all. A string field that holds a JSON document on both sides (an
/// HTTP body the gateway received) is compared as JSON: its fields are named by pointers into
/// the body (`/model`) and the change says which payload field the body is. Other fields are
/// named by their path in the payload (`payload/1/0`), but a model call's request, whose
/// record type the core knows, is compared by its fields' names (`/model` in `payload/1`).
pub(crate) fn changes(named: Named, a: &[u8], b: &[u8]) -> (Vec<FieldChange>, u64) {
    use crate::json_diff;
    let mut listed = Vec::new();
    let mut total = 0;
    let mut list = |change: FieldChange| {
        total += 1;
        if listed.len() < CHANGES_LISTED_MAX {
            listed.push(change);
        }
    };
    if let (Named::ModelRequest, Some(x), Some(y)) = (named, model_request(a), model_request(b)) {
        for change in json_diff::changes(&x, &y, PAYLOAD_CHANGES_MAX).listed {
            list(FieldChange {
                pointer: change.pointer,
                body: Some("payload/1".to_string()),
                a: change_value(change.a.as_ref()),
                b: change_value(change.b.as_ref()),
            });
        }
        return (listed, total);
    }
    let (Ok(x), Ok(y)) = (payload_to_json(a), payload_to_json(b)) else {
        return (Vec::new(), 0);
    };
    for outer in json_diff::changes(&x, &y, PAYLOAD_CHANGES_MAX).listed {
        let field = format!("payload{}", outer.pointer);
        if let (Some(p), Some(q)) = (json_text(outer.a.as_ref()), json_text(outer.b.as_ref())) {
            for inner in json_diff::changes(&p, &q, usize::MAX).listed {
                list(FieldChange {
                    pointer: inner.pointer,
                    body: Some(field.clone()),
                    a: change_value(inner.a.as_ref()),
                    b: change_value(inner.b.as_ref()),
                });
            }
            continue;
        }
        list(FieldChange {
            pointer: field,
            body: None,
            a: change_value(outer.a.as_ref()),
            b: change_value(outer.b.as_ref()),
        });
    }
    (listed, total)
}

/// Which payloads a record holds whose fields the core can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Named {
    /// A request of the LLM actor: `(operation, RequestRecord)`.
    ModelRequest,
    /// Any other: its fields are named by their place.
    Positional,
}

impl Named {
    /// What `actor`'s record of `kind` holds.
    pub(crate) fn of(actor: &str, kind: crate::tape::RecordKind) -> Named {
        match (actor, kind) {
            (crate::capabilities::LLM_ACTOR, crate::tape::RecordKind::Request) => {
                Named::ModelRequest
            }
            _ => Named::Positional,
        }
    }
}

/// A model call's request record as JSON with its fields' names, when it decodes as one.
fn model_request(payload: &[u8]) -> Option<serde_json::Value> {
    let (_, record): (String, crate::cap::llm::RequestRecord<'_>) =
        rmp_serde::from_slice(payload).ok()?;
    serde_json::to_value(record).ok()
}

/// Returns the JSON document a string value holds, when it is an object or an array.
fn json_text(value: Option<&serde_json::Value>) -> Option<serde_json::Value> {
    let text = value?.as_str()?.trim_start();
    if !(text.starts_with('{') || text.starts_with('[')) {
        return None;
    }
    serde_json::from_str(text).ok()
}

fn change_value(value: Option<&serde_json::Value>) -> String {
    let Some(value) = value else {
        return ABSENT.to_string();
    };
    cut_chars(value.to_string(), CHANGE_CHARS_MAX)
}

fn decode(bytes: &[u8]) -> Option<Value> {
    if bytes.is_empty() {
        return Some(Value::Nil);
    }
    let mut cursor = bytes;
    let value = rmpv::decode::read_value(&mut cursor).ok()?;
    cursor.is_empty().then_some(value)
}

/// Renders a payload as JSON, or as hex when it is not one MessagePack value.
pub(crate) fn render_payload(bytes: &[u8]) -> String {
    match decode(bytes) {
        Some(value) => render_value(&value),
        None => cut(format!("0x{}", hex_encode(bytes))),
    }
}

fn render_value(value: &Value) -> String {
    cut(to_json(value).to_string())
}

/// Renders a whole record, for a record that only one tape has.
pub(crate) fn render_record(fields: &RecordFields<'_>) -> String {
    let RecordFields {
        t_ns,
        actor,
        task,
        kind,
        payload,
    } = fields;
    let kind = kind.name();
    let actor = quote(actor);
    let payload = render_payload(payload);
    cut(format!(
        r#"{{"t_ns":{t_ns},"actor":{actor},"task":{task},"kind":"{kind}","payload":{payload}}}"#
    ))
}

/// Returns `text` as a JSON string literal.
pub(crate) fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn cut(text: String) -> String {
    cut_chars(text, RENDER_CHARS_MAX)
}

/// Returns `text` cut after `max` characters, ending with `…` when cut.
pub(crate) fn cut_chars(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
        rmp_serde::to_vec(value).unwrap()
    }

    fn fields(payload: &[u8]) -> RecordFields<'_> {
        RecordFields {
            t_ns: 5,
            actor: "events",
            task: 1,
            kind: RecordKind::Request,
            payload,
        }
    }

    #[test]
    fn payload_paths_name_the_leaf() {
        // Goal: a changed map value deep in a payload is named by its path, with both values.
        let a = encode(&("log", ("tick", serde_json::json!({"n": 1, "bytes": 10}))));
        let b = encode(&("log", ("tick", serde_json::json!({"n": 1, "bytes": 11}))));
        let diff = first_difference(Mode::Exact, &fields(&a), &fields(&b)).unwrap();
        assert_eq!(
            diff,
            FieldDiff {
                field: "payload/1/1/bytes".into(),
                a: "10".into(),
                b: "11".into()
            }
        );
    }

    #[test]
    fn a_model_request_is_compared_by_its_fields_names() {
        // Goal: a model call's request record names the changed field (`/model`), where its
        // place in the record (`payload/1/0`) would say nothing to its reader.
        use crate::cap::llm::{Message, RequestRecord};
        use std::borrow::Cow;
        let messages = [Message::user("What is 6 times 7?")];
        let request = |model: &'static str| {
            let record = RequestRecord {
                model: Cow::Borrowed(model),
                scope: None,
                messages: 1,
                kept: 0,
                new: Cow::Borrowed(&messages[..]),
                tools_digest: Cow::Borrowed("d"),
                tools: None,
            };
            rmp_serde::to_vec(&("complete", record)).unwrap()
        };
        let (a, b) = (request("gpt-4.1-mini"), request("gpt-4.1"));
        let (listed, total) = changes(Named::ModelRequest, &a, &b);
        assert_eq!(total, 1);
        assert_eq!(
            (listed[0].pointer.as_str(), listed[0].body.as_deref()),
            ("/model", Some("payload/1"))
        );
        assert_eq!(
            (listed[0].a.as_str(), listed[0].b.as_str()),
            ("\"gpt-4.1-mini\"", "\"gpt-4.1\"")
        );
        let (listed, _) = changes(Named::Positional, &a, &b);
        assert_eq!(listed[0].pointer, "payload/1/0");
    }

    #[test]
    fn missing_entries_are_absent() {
        // Goal: a key or an element only one side has is shown as absent on the other.
        let a = encode(&serde_json::json!({"a/b": 1}));
        let b = encode(&serde_json::json!({}));
        let diff = first_difference(Mode::Exact, &fields(&a), &fields(&b)).unwrap();
        assert_eq!(
            (diff.field.as_str(), diff.b.as_str()),
            ("payload/a~1b", ABSENT)
        );
        let diff = payload_difference(&encode(&[1, 2]), &encode(&[1, 2, 3])).unwrap();
        assert_eq!(
            (diff.field.as_str(), diff.a.as_str(), diff.b.as_str()),
            ("payload/2", ABSENT, "3")
        );
    }

    #[test]
    fn identity_fields_come_before_payload_and_time() {
        // Goal: the actor is named before the payload; time only in exact mode, and last.
        let mut other = fields(b"\x01");
        other.actor = "clock";
        other.t_ns = 9;
        let base = fields(b"\x02");
        assert_eq!(
            first_difference(Mode::Exact, &base, &other).unwrap().field,
            "actor"
        );
        assert_eq!(
            first_difference(Mode::Outcome, &base, &other)
                .unwrap()
                .field,
            "payload"
        );
        let timed = RecordFields { t_ns: 9, ..base };
        assert_eq!(
            first_difference(Mode::Exact, &base, &timed).unwrap().field,
            "t_ns"
        );
        assert_eq!(first_difference(Mode::Semantic, &base, &timed), None);
    }

    #[test]
    fn a_json_body_in_a_payload_is_compared_field_by_field() {
        // Goal: a body that differs in one field is that field's pointer and both values,
        // never the whole body; fields outside the body keep their payload path.
        let body = |model: &str| {
            format!(
                r#"{{"model":"{model}","messages":[{{"content":"{}"}}]}}"#,
                "x".repeat(3000)
            )
        };
        let a = encode(&(
            1,
            "message",
            serde_json::json!({"Request": [1, "POST", "/v1/responses", body("gpt-4.1-mini")]}),
        ));
        let b = encode(&(
            2,
            "message",
            serde_json::json!({"Request": [1, "POST", "/v1/responses", body("gpt-4.1")]}),
        ));
        let (listed, total) = changes(Named::Positional, &a, &b);
        assert_eq!(total, 2);
        assert_eq!(
            (listed[0].pointer.as_str(), listed[0].a.as_str()),
            ("payload/0", "1")
        );
        assert_eq!(listed[1].pointer, "/model");
        assert_eq!(listed[1].body.as_deref(), Some("payload/2/Request/3"));
        assert_eq!(
            (listed[1].a.as_str(), listed[1].b.as_str()),
            (r#""gpt-4.1-mini""#, r#""gpt-4.1""#)
        );
    }

    #[test]
    fn many_changes_are_listed_up_to_the_cap_and_long_values_cut() {
        // Goal: at most CHANGES_LISTED_MAX changes are listed, each value cut.
        let a = encode(&vec!["a".repeat(500); 8]);
        let b = encode(&vec!["b".repeat(500); 8]);
        let (listed, total) = changes(Named::Positional, &a, &b);
        assert_eq!((listed.len(), total), (CHANGES_LISTED_MAX, 8));
        assert_eq!(listed[0].a.chars().count(), CHANGE_CHARS_MAX + 1);
    }

    #[test]
    fn long_values_are_cut() {
        // Goal: a rendering never exceeds the character bound.
        let long = render_payload(&encode(&"x".repeat(5000)));
        assert_eq!(long.chars().count(), RENDER_CHARS_MAX + 1);
        assert!(long.ends_with('…'));
        assert_eq!(render_payload(b"\x92\x01"), "0x9201");
    }
}
