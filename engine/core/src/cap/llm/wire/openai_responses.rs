//! OpenAI Responses: `input` items (messages, `function_call`, `function_call_output`) and
//! flat `tools`; the answer is the `output` items plus `status` and `usage`.

use serde_json::{json, Map, Value};

use super::{
    arguments, array, field, implied_stop, optional, optional_string, schema, string, usage, Shape,
    WireAnswer,
};
use crate::cap::llm::request::{ChatRequest, Message, Role, ToolCall};

pub(super) fn request_body(request: &ChatRequest, model: &str) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    let input: Vec<Value> = request.messages.iter().flat_map(items).collect();
    body.insert("input".into(), input.into());
    if !request.tools.is_empty() {
        // Responses tools are flat: `name` and `parameters` are not nested under `function`.
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": schema(&tool.parameters),
                })
            })
            .collect();
        body.insert("tools".into(), tools.into());
    }
    Value::Object(body)
}

/// Returns the input items of one message: an assistant turn becomes its text message (if
/// any) followed by one `function_call` item per tool call.
fn items(message: &Message) -> Vec<Value> {
    let text = |role: &str| json!({"type": "message", "role": role, "content": message.content});
    match message.role {
        Role::System => vec![text("system")],
        Role::User => vec![text("user")],
        Role::Tool => vec![json!({
            "type": "function_call_output",
            "call_id": message.tool_call_id.clone().unwrap_or_default(),
            "output": message.content,
        })],
        Role::Assistant => {
            let mut items = Vec::new();
            if !message.content.is_empty() {
                items.push(text("assistant"));
            }
            items.extend(message.tool_calls.iter().map(|call| {
                json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments.to_string(),
                })
            }));
            items
        }
    }
}

pub(super) fn parse_response(body: &Value) -> Result<WireAnswer, Shape> {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for (index, item) in array(field(body, "the response", "output")?, "output")?
        .iter()
        .enumerate()
    {
        let at = format!("output[{index}]");
        match string(field(item, &at, "type")?, &format!("{at}.type"))? {
            "message" => {
                let content = field(item, &at, "content")?;
                for (part_index, part) in
                    array(content, &format!("{at}.content"))?.iter().enumerate()
                {
                    let part_at = format!("{at}.content[{part_index}]");
                    if optional(part, "type").and_then(Value::as_str) == Some("output_text") {
                        let part_text = field(part, &part_at, "text")?;
                        text.push_str(string(part_text, &format!("{part_at}.text"))?);
                    }
                }
            }
            "function_call" => {
                let arguments_at = format!("{at}.arguments");
                tool_calls.push(ToolCall {
                    id: string(field(item, &at, "call_id")?, &format!("{at}.call_id"))?.to_owned(),
                    name: string(field(item, &at, "name")?, &format!("{at}.name"))?.to_owned(),
                    arguments: arguments(
                        string(field(item, &at, "arguments")?, &arguments_at)?,
                        &arguments_at,
                    )?,
                });
            }
            // Reasoning and built-in tool items carry nothing `ChatResponse` holds.
            _ => {}
        }
    }
    let status = optional_string(body, "the response", "status")?;
    let stop_reason = if status.as_deref() == Some("incomplete") {
        let reason = optional(body, "incomplete_details")
            .and_then(|details| optional(details, "reason"))
            .and_then(Value::as_str);
        match reason {
            Some("max_output_tokens") => "max_tokens".to_owned(),
            Some(other) => other.to_owned(),
            None => "incomplete".to_owned(),
        }
    } else {
        implied_stop(&tool_calls)
    };
    Ok(WireAnswer {
        model: optional_string(body, "the response", "model")?,
        text,
        tool_calls,
        stop_reason,
        usage: usage(body, "input_tokens", "output_tokens")?,
    })
}
