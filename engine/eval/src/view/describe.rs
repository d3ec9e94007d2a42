//! The fields a view reads out of a record's payload, by actor: a model call's model and
//! token counts, a file operation's path, a tool call's tool and arguments.
//!
//! Payloads are the actors' own serde types in rmp-serde's compact (array) encoding, so
//! their fields have positions, not names; the positions read here follow the types:
//! the LLM actor's `ChatResponse` (`model, text, tool_calls, stop_reason, usage`) inside
//! its `Ok`, and the harness's `AgentEvent` variants (`simtape-agent`'s `log.rs`). A field
//! that is not where it is expected is left out; the whole payload is always shown beside.

use serde_json::{json, Map, Value};

/// Returns a record's operation name (`"write"`, `"complete"`, …): the payload's first element.
pub fn operation(payload: &Value) -> &str {
    payload.get(0).and_then(Value::as_str).unwrap_or("?")
}

/// Returns the first string inside `value`, depth first: a file operation's path, a
/// process's program, an MCP call's tool.
fn first_string(value: &Value, depth: u32) -> Option<&str> {
    match value {
        Value::String(text) => Some(text),
        Value::Array(items) if depth > 0 => items.iter().find_map(|v| first_string(v, depth - 1)),
        Value::Object(map) if depth > 0 => map.values().find_map(|v| first_string(v, depth - 1)),
        _ => None,
    }
}

/// Returns the fields read from a request to `actor`.
pub fn request_fields(actor: &str, payload: &Value) -> Value {
    let body = payload.get(1).unwrap_or(&Value::Null);
    let mut fields = Map::new();
    if let Some(subject) = first_string(body, 4) {
        let key = if actor == "llm" { "model" } else { "subject" };
        fields.insert(key.into(), Value::String(subject.to_string()));
    }
    Value::Object(fields)
}

/// Returns the error of a failed reply (`{"Err": …}` in its body), as text.
pub fn reply_error(payload: &Value) -> Option<String> {
    let error = payload.get(1)?.as_object()?.get("Err")?;
    Some(match error {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

/// Returns the `Ok` value of a reply's body, looking one level into a wrapping array (the
/// LLM actor's reply is `[digest, …, {"Ok": response}]`).
fn ok_value(body: &Value) -> Option<&Value> {
    if let Some(ok) = body.get("Ok") {
        return Some(ok);
    }
    body.as_array()?.iter().find_map(|item| item.get("Ok"))
}

/// Returns the fields read from a reply of `actor`.
pub fn reply_fields(actor: &str, payload: &Value) -> Value {
    let body = payload.get(1).unwrap_or(&Value::Null);
    let mut fields = Map::new();
    if body.get("Err").is_some() {
        fields.insert("ok".into(), Value::Bool(false));
    } else if let Some(ok) = ok_value(body) {
        fields.insert("ok".into(), Value::Bool(true));
        if actor == "llm" {
            model_answer(ok, &mut fields);
        }
    }
    Value::Object(fields)
}

/// Reads a model answer: `[model, text, tool_calls, stop_reason, [input, output]]`.
fn model_answer(answer: &Value, fields: &mut Map<String, Value>) {
    let at = |i: usize| answer.get(i).cloned();
    if let Some(model) = at(0).filter(Value::is_string) {
        fields.insert("model".into(), model);
    }
    if let Some(stop) = at(3).filter(Value::is_string) {
        fields.insert("stop_reason".into(), stop);
    }
    if let Some(usage) = answer.get(4).and_then(Value::as_array) {
        if let [input, output] = usage.as_slice() {
            fields.insert("input_tokens".into(), input.clone());
            fields.insert("output_tokens".into(), output.clone());
        }
    }
    if let Some(calls) = answer.get(2).and_then(Value::as_array) {
        let tools: Vec<Value> = calls.iter().filter_map(|c| c.get(1).cloned()).collect();
        fields.insert("tool_calls".into(), Value::Array(tools));
    }
}

/// The field names of each harness event, in the order the tape holds them.
const AGENT_EVENT_FIELDS: &[(&str, &[&str])] = &[
    ("start", &["model", "tools"]),
    ("turn", &["turn"]),
    ("retry", &["what", "attempt", "wait_ms", "error"]),
    ("call", &["id", "tool", "arguments"]),
    ("result", &["id", "ok", "size", "sha256"]),
    ("end", &["reason", "turns"]),
    ("verifier", &["name", "held", "saw"]),
    ("session", &["session", "phase", "features"]),
    ("crash", &["session", "at"]),
    ("checkpoint", &["session", "status", "note"]),
    ("health_check", &["session", "held", "saw"]),
    ("resume", &["session", "checkpoint"]),
];

/// Returns the fields of a harness event (`["call", {"call": [id, tool, arguments]}]`) by name.
pub fn agent_fields(payload: &Value) -> Value {
    let operation = operation(payload);
    let values = payload
        .get(1)
        .and_then(|body| body.get(operation))
        .and_then(Value::as_array);
    let names = AGENT_EVENT_FIELDS
        .iter()
        .find(|(name, _)| *name == operation)
        .map_or(&[][..], |(_, fields)| fields);
    let mut fields = Map::new();
    if let Some(values) = values {
        for (name, value) in names.iter().zip(values) {
            fields.insert((*name).to_string(), value.clone());
        }
    }
    json!(fields)
}

/// The fs operations that change the tree (the others only look).
pub const FS_CHANGES: &[&str] = &[
    "write", "append", "delete", "rename", "mkdir", "rmdir", "apply",
];

/// One message of a conversation as the transcript shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TranscriptMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub text: String,
    /// The tool calls an assistant message asks for (`tool(arguments)`), or the call a tool
    /// message answers.
    pub calls: Vec<String>,
}

/// Returns the messages a model request adds to the conversation (the LLM actor records only
/// what the conversation gained: `[model, scope, …, messages, tools digest, tools]`, each
/// message `[role, text, calls or call id]`).
pub fn request_messages(payload: &Value) -> Vec<TranscriptMessage> {
    let Some(body) = payload.get(1).and_then(Value::as_array) else {
        return Vec::new();
    };
    let Some(messages) = body.iter().find_map(|item| {
        let list = item.as_array()?;
        let is_conversation = !list.is_empty()
            && list
                .iter()
                .all(|m| m.get(0).and_then(Value::as_str).is_some() && m.get(1).is_some());
        is_conversation.then_some(list)
    }) else {
        return Vec::new();
    };
    messages
        .iter()
        .map(|message| TranscriptMessage {
            role: message
                .get(0)
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string(),
            text: message
                .get(1)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            calls: calls_of(message.get(2)),
        })
        .collect()
}

/// Reads `[[id, tool, arguments], …]` as `tool(arguments)`, or a lone call id.
fn calls_of(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(calls)) => calls
            .iter()
            .map(|call| {
                let tool = call.get(1).and_then(Value::as_str).unwrap_or("?");
                let arguments = call.get(2).map(Value::to_string).unwrap_or_default();
                format!("{tool}({arguments})")
            })
            .collect(),
        Some(Value::String(id)) => vec![id.clone()],
        _ => Vec::new(),
    }
}

/// Returns the model's answer in a reply, as the assistant message of the transcript.
pub fn reply_message(payload: &Value) -> Option<TranscriptMessage> {
    let answer = ok_value(payload.get(1)?)?;
    Some(TranscriptMessage {
        role: "assistant".into(),
        text: answer
            .get(1)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        calls: calls_of(answer.get(2)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_reply_gives_its_model_tokens_and_tools() {
        // Goal: the LLM actor's compact reply yields named fields.
        let payload = json!(["complete", ["d", 3, 0, [359, 44], {"Ok": ["m", "t",
            [["call_1", "edit_file", {}]], "tool_use", [359, 44]]}]]);
        let fields = reply_fields("llm", &payload);
        assert_eq!(fields["model"], "m");
        assert_eq!(fields["input_tokens"], 359);
        assert_eq!(fields["output_tokens"], 44);
        assert_eq!(fields["tool_calls"], json!(["edit_file"]));
        assert_eq!(fields["ok"], true);
    }

    #[test]
    fn a_failed_reply_is_an_error_and_a_harness_event_has_names() {
        // Goal: `Err` bodies are errors; harness events are read by their field names.
        let failed = json!(["write", {"Err": "ENOSPC"}]);
        assert_eq!(reply_error(&failed).as_deref(), Some("ENOSPC"));
        assert_eq!(reply_fields("fs", &failed)["ok"], false);
        let call = json!(["call", {"call": ["call_1", "edit_file", {"path": "a"}]}]);
        let fields = agent_fields(&call);
        assert_eq!(fields["tool"], "edit_file");
        assert_eq!(fields["arguments"]["path"], "a");
        assert_eq!(
            request_fields("fs", &json!(["stat", {"Stat": ["config.toml"]}]))["subject"],
            "config.toml"
        );
    }
}
