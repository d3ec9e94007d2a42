//! Request digests and usage counts without building a JSON tree, and the per-run memo that
//! lets each model call hash, count and record only what the previous call did not have.
//!
//! The digest of a request (`docs/llm-fixtures.md`, "The request") is
//!
//! ```text
//! SHA-256( d(message_1) ‖ … ‖ d(message_n) ‖ d(head) )        as lower-case hex
//! d(x)  = SHA-256 of x's canonical JSON (object keys sorted, no spaces), 32 raw bytes
//! head  = {"model": …, "scope": … or null, "tools": hex SHA-256 of the tool list's canonical JSON}
//! ```
//!
//! so a conversation that grows by a few messages a turn costs only the new messages' hashes:
//! the hash state after each message is kept, and the next call resumes from the state of the
//! longest prefix it shares with the previous call.

use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::request::{ChatRequest, Message, ToolCall, ToolDefinition};
use crate::tape::hex_encode;

/// Where canonical JSON bytes go: a hash, or a counter.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

/// Counts bytes (the usage rule's JSON lengths).
#[derive(Default)]
struct Counter(u64);

impl Sink for Counter {
    fn put(&mut self, bytes: &[u8]) {
        self.0 += bytes.len() as u64;
    }
}

/// Lets serde_json write scalars (its escaping and number forms) straight into a sink.
struct Adapter<'a, S: Sink>(&'a mut S);

impl<S: Sink> std::io::Write for Adapter<'_, S> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.put(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn scalar<S: Sink, T: serde::Serialize + ?Sized>(sink: &mut S, value: &T) {
    serde_json::to_writer(Adapter(sink), value).expect("a JSON scalar always serialises");
}

/// Writes `value` as canonical JSON: object keys in byte order, no spaces.
fn value<S: Sink>(sink: &mut S, json: &Value) {
    match json {
        Value::Array(items) => {
            sink.put(b"[");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    sink.put(b",");
                }
                value(sink, item);
            }
            sink.put(b"]");
        }
        Value::Object(map) => {
            // serde_json's map is ordered by key already unless `preserve_order` is on.
            let mut keys: Vec<&String> = map.keys().collect();
            if !keys.is_sorted() {
                keys.sort();
            }
            sink.put(b"{");
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    sink.put(b",");
                }
                scalar(sink, key.as_str());
                sink.put(b":");
                value(sink, &map[key.as_str()]);
            }
            sink.put(b"}");
        }
        other => scalar(sink, other),
    }
}

/// Writes `"key":` (with a leading comma unless first).
fn key<S: Sink>(sink: &mut S, name: &str, first: bool) {
    if !first {
        sink.put(b",");
    }
    scalar(sink, name);
    sink.put(b":");
}

fn tool_call<S: Sink>(sink: &mut S, call: &ToolCall) {
    sink.put(b"{");
    key(sink, "arguments", true);
    value(sink, &call.arguments);
    key(sink, "id", false);
    scalar(sink, &call.id);
    key(sink, "name", false);
    scalar(sink, &call.name);
    sink.put(b"}");
}

/// Writes a message as its canonical JSON: the keys its serde form has, sorted.
fn message<S: Sink>(sink: &mut S, m: &Message) {
    sink.put(b"{");
    key(sink, "content", true);
    scalar(sink, &m.content);
    key(sink, "role", false);
    scalar(sink, &m.role);
    if let Some(id) = &m.tool_call_id {
        key(sink, "tool_call_id", false);
        scalar(sink, id);
    }
    if !m.tool_calls.is_empty() {
        key(sink, "tool_calls", false);
        sink.put(b"[");
        for (index, call) in m.tool_calls.iter().enumerate() {
            if index > 0 {
                sink.put(b",");
            }
            tool_call(sink, call);
        }
        sink.put(b"]");
    }
    sink.put(b"}");
}

fn tools<S: Sink>(sink: &mut S, definitions: &[ToolDefinition]) {
    sink.put(b"[");
    for (index, tool) in definitions.iter().enumerate() {
        if index > 0 {
            sink.put(b",");
        }
        sink.put(b"{");
        key(sink, "description", true);
        scalar(sink, &tool.description);
        key(sink, "name", false);
        scalar(sink, &tool.name);
        key(sink, "parameters", false);
        value(sink, &tool.parameters);
        sink.put(b"}");
    }
    sink.put(b"]");
}

/// Returns SHA-256 of the message's canonical JSON.
pub(crate) fn message_digest(m: &Message) -> [u8; 32] {
    let mut hash = Sha256::new();
    message(&mut hash, m);
    hash.finalize().into()
}

/// Returns the hex SHA-256 of the tool list's canonical JSON.
pub(crate) fn tools_digest(definitions: &[ToolDefinition]) -> String {
    let mut hash = Sha256::new();
    tools(&mut hash, definitions);
    hex_encode(&hash.finalize())
}

/// Returns SHA-256 of the head `{"model":…,"scope":…,"tools":…}`.
fn head_digest(model: &str, scope: Option<&str>, tools_hex: &str) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.put(b"{");
    key(&mut hash, "model", true);
    scalar(&mut hash, model);
    key(&mut hash, "scope", false);
    scalar(&mut hash, &scope);
    key(&mut hash, "tools", false);
    scalar(&mut hash, tools_hex);
    hash.put(b"}");
    hash.finalize().into()
}

/// Returns the request digest from scratch (the memo computes the same value incrementally).
pub(crate) fn request_digest(request: &ChatRequest) -> String {
    let mut hash = Sha256::new();
    for m in &request.messages {
        hash.update(message_digest(m));
    }
    let tools_hex = tools_digest(&request.tools);
    hash.update(head_digest(
        &request.model,
        request.scope.as_deref(),
        &tools_hex,
    ));
    hex_encode(&hash.finalize())
}

/// Returns the length of `json` written compactly (what the usage rule counts).
pub(crate) fn json_len(json: &Value) -> u64 {
    let mut counter = Counter::default();
    value(&mut counter, json);
    counter.0
}

/// Returns the bytes the usage rule counts for one message: its content and each tool call's
/// name and JSON arguments.
pub(crate) fn message_input_bytes(m: &Message) -> u64 {
    let calls: u64 = m
        .tool_calls
        .iter()
        .map(|c| c.name.len() as u64 + json_len(&c.arguments))
        .sum();
    m.content.len() as u64 + calls
}

/// Returns the bytes the usage rule counts for the tools offered: name, description, schema.
pub(crate) fn tools_input_bytes(definitions: &[ToolDefinition]) -> u64 {
    definitions
        .iter()
        .map(|t| (t.name.len() + t.description.len()) as u64 + json_len(&t.parameters))
        .sum()
}

/// Returns whether two JSON values are the same to the byte when written canonically (unlike
/// `==`, `0.0` and `-0.0` differ).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), x.is_f64(), y.is_f64()) {
            (Some(fx), true, true) => y.as_f64().is_some_and(|fy| fx.to_bits() == fy.to_bits()),
            _ => x == y,
        },
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            // Maps ordered by key (serde_json's default) compare pairwise; only maps in
            // insertion order (`preserve_order`) may need the lookups.
            let pairwise = || {
                xs.iter()
                    .zip(ys)
                    .all(|((kx, x), (ky, y))| kx == ky && same_value(x, y))
            };
            let by_key = || {
                xs.iter()
                    .all(|(k, x)| ys.get(k).is_some_and(|y| same_value(x, y)))
            };
            xs.len() == ys.len() && (pairwise() || by_key())
        }
        _ => a == b,
    }
}

fn same_message(a: &Message, b: &Message) -> bool {
    a.role == b.role
        && a.content == b.content
        && a.tool_call_id == b.tool_call_id
        && a.tool_calls.len() == b.tool_calls.len()
        && a.tool_calls.iter().zip(&b.tool_calls).all(|(x, y)| {
            x.id == y.id && x.name == y.name && same_value(&x.arguments, &y.arguments)
        })
}

fn same_tools(a: &[ToolDefinition], b: &[ToolDefinition]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.name == y.name
                && x.description == y.description
                && same_value(&x.parameters, &y.parameters)
        })
}

/// One message of the previous call, with what was computed for it.
#[derive(Debug, Clone)]
struct Seen {
    message: Remembered,
    /// The digest hash state after this message (and every one before it).
    prefix: Sha256,
    /// The usage rule's input bytes of the messages up to and including this one.
    input_bytes_through: u64,
}

/// A message of the previous call, as much of it as telling the next call's copy needs.
#[derive(Debug, Clone)]
enum Remembered {
    /// The message itself: compared field by field, faster than hashing it again.
    Whole(Message),
    /// A message over [`REMEMBERED_WHOLE_MAX`] bytes, by its digest and content length: a
    /// run that took one huge request (a 30 MB body under `serve`) keeps 40 bytes of it,
    /// not its copy, for the rest of the session.
    Digest {
        content_len: usize,
        digest: [u8; 32],
    },
}

/// The largest message (usage-rule bytes) remembered whole.
const REMEMBERED_WHOLE_MAX: u64 = 64 * 1024;

impl Remembered {
    fn of(m: &Message, bytes: u64, digest: [u8; 32]) -> Remembered {
        match bytes > REMEMBERED_WHOLE_MAX {
            true => Remembered::Digest {
                content_len: m.content.len(),
                digest,
            },
            false => Remembered::Whole(m.clone()),
        }
    }

    fn is(&self, m: &Message) -> bool {
        match self {
            Remembered::Whole(seen) => same_message(seen, m),
            Remembered::Digest {
                content_len,
                digest,
            } => *content_len == m.content.len() && message_digest(m) == *digest,
        }
    }
}

/// The previous call's tool list, with its digest and input bytes.
#[derive(Debug, Clone)]
struct SeenTools {
    /// Shared with the request it came from: a request handing over the same list (by
    /// address) is known unchanged without a comparison, as a shared slice cannot change.
    definitions: Arc<[ToolDefinition]>,
    digest: String,
    input_bytes: u64,
}

/// What the LLM actor remembers of the previous call of its run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Memo {
    messages: Vec<Seen>,
    tools: Option<SeenTools>,
}

/// What [`Memo::observe`] learned about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Observed {
    /// The request digest (hex).
    pub(crate) digest: String,
    /// The usage rule's input bytes.
    pub(crate) input_bytes: u64,
    /// Leading messages equal to the previous call's.
    pub(crate) kept: usize,
    /// The tool list's digest (hex).
    pub(crate) tools_digest: String,
    /// Whether the tool list differs from the previous call's (always, on the first call).
    pub(crate) tools_changed: bool,
}

impl Memo {
    /// Takes in `request` (a call of this run) and returns its digest, usage bytes and what
    /// it shares with the previous call.
    pub(crate) fn observe(&mut self, request: &ChatRequest) -> Observed {
        let kept = self
            .messages
            .iter()
            .zip(&request.messages)
            .take_while(|(seen, m)| seen.message.is(m))
            .count();
        self.messages.truncate(kept);
        for m in &request.messages[kept..] {
            let (mut prefix, bytes_before) = match self.messages.last() {
                Some(last) => (last.prefix.clone(), last.input_bytes_through),
                None => (Sha256::new(), 0),
            };
            let digest = message_digest(m);
            prefix.update(digest);
            let bytes = message_input_bytes(m);
            self.messages.push(Seen {
                message: Remembered::of(m, bytes, digest),
                prefix,
                input_bytes_through: bytes_before + bytes,
            });
        }
        let tools_changed = !self.tools.as_ref().is_some_and(|seen| {
            Arc::ptr_eq(&seen.definitions, &request.tools)
                || same_tools(&seen.definitions, &request.tools)
        });
        if tools_changed {
            self.tools = Some(SeenTools {
                definitions: Arc::clone(&request.tools),
                digest: tools_digest(&request.tools),
                input_bytes: tools_input_bytes(&request.tools),
            });
        }
        let tools = self.tools.as_ref().expect("the tool list was just seen");
        let mut hash = match self.messages.last() {
            Some(last) => last.prefix.clone(),
            None => Sha256::new(),
        };
        hash.update(head_digest(
            &request.model,
            request.scope.as_deref(),
            &tools.digest,
        ));
        let message_bytes = self.messages.last().map_or(0, |m| m.input_bytes_through);
        Observed {
            digest: hex_encode(&hash.finalize()),
            input_bytes: message_bytes + tools.input_bytes,
            kept,
            tools_digest: tools.digest.clone(),
            tools_changed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cap::llm::request::Role;

    fn canonical_bytes(request: &ChatRequest) -> Vec<u8> {
        // The reference: serde's JSON tree, keys sorted by a BTreeMap, written compactly.
        fn sorted(v: Value) -> Value {
            match v {
                Value::Object(map) => Value::Object(
                    map.into_iter()
                        .map(|(k, v)| (k, sorted(v)))
                        .collect::<std::collections::BTreeMap<_, _>>()
                        .into_iter()
                        .collect(),
                ),
                Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
                other => other,
            }
        }
        serde_json::to_vec(&sorted(serde_json::to_value(request).unwrap())).unwrap()
    }

    struct Bytes(Vec<u8>);
    impl Sink for Bytes {
        fn put(&mut self, bytes: &[u8]) {
            self.0.extend_from_slice(bytes);
        }
    }

    fn sample() -> ChatRequest {
        let call = ToolCall {
            id: "c1".into(),
            name: "write_file".into(),
            arguments: serde_json::json!({"z": [1, -2, 0.5, {"b": null, "a": "é\n\"q\""}], "a": true}),
        };
        ChatRequest::new(
            "m",
            vec![
                Message::system("be brief"),
                Message::user("hi \u{1}"),
                Message {
                    role: Role::Assistant,
                    content: String::new(),
                    tool_calls: vec![call],
                    tool_call_id: None,
                },
                Message::tool_result("c1", "ok"),
            ],
        )
        .with_tools(vec![ToolDefinition {
            name: "write_file".into(),
            description: "Writes.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }])
    }

    #[test]
    fn streamed_canonical_json_is_serdes_sorted_json() {
        // Goal: the streamed writer gives the bytes of serde's tree with sorted keys.
        let request = sample();
        let reference: Value = serde_json::from_slice(&canonical_bytes(&request)).unwrap();
        for (m, expected) in request
            .messages
            .iter()
            .zip(reference["messages"].as_array().unwrap())
        {
            let mut out = Bytes(Vec::new());
            message(&mut out, m);
            assert_eq!(out.0, serde_json::to_vec(expected).unwrap());
        }
        let mut out = Bytes(Vec::new());
        tools(&mut out, &request.tools);
        assert_eq!(out.0, serde_json::to_vec(&reference["tools"]).unwrap());
    }

    #[test]
    fn the_memo_gives_the_digest_and_usage_of_a_fresh_computation() {
        // Goal: growing, rewritten and shrunk conversations get the from-scratch digest.
        let full = sample();
        let mut memo = Memo::default();
        let mut steps = Vec::new();
        for n in 1..=full.messages.len() {
            steps.push(ChatRequest {
                messages: full.messages[..n].to_vec(),
                ..full.clone()
            });
        }
        let mut rewritten = full.clone();
        rewritten.messages[1].content = "other".into();
        steps.push(rewritten);
        steps.push(ChatRequest::new("m", vec![Message::user("x")]).with_scope("s"));
        steps.push(full.clone());
        for (index, request) in steps.iter().enumerate() {
            let seen = memo.observe(request);
            assert_eq!(seen.digest, request.digest(), "step {index}");
            assert_eq!(seen.input_bytes, request.input_bytes(), "step {index}");
        }
        let again = memo.observe(&full);
        assert_eq!(again.kept, full.messages.len());
        assert!(!again.tools_changed);
        // The tool list: an equal copy (another allocation) is unchanged, another list is not.
        let mut copied = full.clone();
        copied.tools = full.tools.to_vec().into();
        assert!(!Arc::ptr_eq(&copied.tools, &full.tools));
        assert!(!memo.observe(&copied).tools_changed);
        let mut other = full.clone();
        other.tools = Arc::new([ToolDefinition::named("other")]);
        let seen = memo.observe(&other);
        assert!(seen.tools_changed);
        assert_eq!(seen.digest, other.digest());
        assert_eq!(seen.input_bytes, other.input_bytes());
    }

    #[test]
    fn a_huge_message_is_remembered_by_its_digest_and_still_told_apart() {
        // Goal: a message over the whole-copy bound costs the memo a digest, not a copy, and
        // the next call's `kept` is what a whole copy would give: the same message kept, an
        // edited one (same length) not.
        let huge = "x".repeat(REMEMBERED_WHOLE_MAX as usize + 1);
        let first = ChatRequest::new("m", vec![Message::user(huge.clone())]);
        let mut memo = Memo::default();
        memo.observe(&first);
        assert!(matches!(
            memo.messages[0].message,
            Remembered::Digest { .. }
        ));
        let mut grown = first.clone();
        grown.messages.push(Message::user("next"));
        let seen = memo.observe(&grown);
        assert_eq!(seen.kept, 1);
        assert_eq!(seen.digest, grown.digest());
        let mut edited = grown.clone();
        edited.messages[0].content = format!("y{}", &huge[1..]);
        let seen = memo.observe(&edited);
        assert_eq!(seen.kept, 0);
        assert_eq!(seen.digest, edited.digest());
    }

    #[test]
    fn negative_zero_is_not_zero() {
        // Goal: values that write differently never share a cached digest.
        let a = serde_json::json!({"x": 0.0});
        let b = serde_json::json!({"x": -0.0});
        assert!(!same_value(&a, &b));
        assert!(same_value(&a, &a.clone()));
    }
}
