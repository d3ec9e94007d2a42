//! Anthropic Messages: a top-level `system`, alternating `user`/`assistant` messages of
//! content blocks (`text`, `tool_use`, `tool_result`) and `tools` with `input_schema`; the
//! answer is `content` blocks plus `stop_reason` and `usage`.

use serde_json::{json, Map, Value};

use super::{
    array, field, implied_stop, optional, optional_string, schema, string, usage, Shape, WireAnswer,
};
use crate::cap::llm::request::{ChatRequest, Role, ToolCall};

pub(super) fn request_body(request: &ChatRequest, model: &str, max_tokens: u64) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("max_tokens".into(), max_tokens.into());
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), system.join("\n\n").into());
    }
    body.insert("messages".into(), messages(request).into());
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": schema(&tool.parameters),
                })
            })
            .collect();
        body.insert("tools".into(), tools.into());
    }
    Value::Object(body)
}

/// Returns the conversation as Anthropic messages. Tool results travel in `user` messages,
/// and consecutive messages of one role are merged, because the API requires the roles to
/// alternate and every result of a turn to sit in the one message after it.
fn messages(request: &ChatRequest) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, mut blocks) = match message.role {
            Role::System => continue,
            Role::User => ("user", text_block(&message.content)),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                    "content": message.content,
                })],
            ),
            Role::Assistant => {
                let mut blocks = text_block(&message.content);
                blocks.extend(message.tool_calls.iter().map(|call| {
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
                }));
                ("assistant", blocks)
            }
        };
        match turns.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => {
                last_blocks.append(&mut blocks);
            }
            _ if blocks.is_empty() => {}
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, blocks)| json!({"role": role, "content": blocks}))
        .collect()
}

/// Returns a text block, or none for empty text (the API refuses empty text blocks).
fn text_block(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

pub(super) fn parse_response(body: &Value) -> Result<WireAnswer, Shape> {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for (index, block) in array(field(body, "the response", "content")?, "content")?
        .iter()
        .enumerate()
    {
        let at = format!("content[{index}]");
        match string(field(block, &at, "type")?, &format!("{at}.type"))? {
            "text" => text.push_str(string(field(block, &at, "text")?, &format!("{at}.text"))?),
            "tool_use" => tool_calls.push(ToolCall {
                id: string(field(block, &at, "id")?, &format!("{at}.id"))?.to_owned(),
                name: string(field(block, &at, "name")?, &format!("{at}.name"))?.to_owned(),
                // `input` is already a JSON object here, unlike OpenAI's argument strings.
                arguments: optional(block, "input")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            }),
            // Thinking blocks and server tools carry nothing `ChatResponse` holds.
            _ => {}
        }
    }
    let stop_reason = optional_string(body, "the response", "stop_reason")?
        .unwrap_or_else(|| implied_stop(&tool_calls));
    Ok(WireAnswer {
        model: optional_string(body, "the response", "model")?,
        text,
        tool_calls,
        stop_reason,
        usage: usage(body, "input_tokens", "output_tokens")?,
    })
}
