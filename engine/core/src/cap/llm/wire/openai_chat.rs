//! OpenAI Chat Completions: `messages` with `tool_calls` (arguments as a JSON string) and
//! `tool` messages; the answer is `choices[0].message` plus `finish_reason` and `usage`.

use serde_json::{json, Map, Value};

use super::{
    arguments, array, field, implied_stop, optional, optional_string, schema, string, usage, Shape,
    WireAnswer,
};
use crate::cap::llm::request::{ChatRequest, Message, Role, ToolCall};

pub(super) fn request_body(request: &ChatRequest, model: &str) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    let messages: Vec<Value> = request.messages.iter().map(message).collect();
    body.insert("messages".into(), messages.into());
    // The API refuses an empty `tools` array, so it is left out when no tool is offered.
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": schema(&tool.parameters),
                }})
            })
            .collect();
        body.insert("tools".into(), tools.into());
    }
    Value::Object(body)
}

fn message(message: &Message) -> Value {
    match message.role {
        Role::System => json!({"role": "system", "content": message.content}),
        Role::User => json!({"role": "user", "content": message.content}),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
            "content": message.content,
        }),
        Role::Assistant => {
            let mut wire = Map::new();
            wire.insert("role".into(), "assistant".into());
            // A tool-calling turn without text carries `content: null`, as the API returns it.
            let content = if message.content.is_empty() && !message.tool_calls.is_empty() {
                Value::Null
            } else {
                message.content.clone().into()
            };
            wire.insert("content".into(), content);
            if !message.tool_calls.is_empty() {
                let calls: Vec<Value> = message.tool_calls.iter().map(tool_call).collect();
                wire.insert("tool_calls".into(), calls.into());
            }
            Value::Object(wire)
        }
    }
}

fn tool_call(call: &ToolCall) -> Value {
    json!({"id": call.id, "type": "function", "function": {
        "name": call.name,
        "arguments": call.arguments.to_string(),
    }})
}

pub(super) fn parse_response(body: &Value) -> Result<WireAnswer, Shape> {
    let choices = array(field(body, "the response", "choices")?, "choices")?;
    let Some(choice) = choices.first() else {
        return Err(Shape::new(
            "at least one element in choices",
            "an empty array",
        ));
    };
    let message = field(choice, "choices[0]", "message")?;
    let path = "choices[0].message";
    let text = optional_string(message, path, "content")?.unwrap_or_default();
    let mut tool_calls = Vec::new();
    if let Some(calls) = optional(message, "tool_calls") {
        for (index, call) in array(calls, "choices[0].message.tool_calls")?
            .iter()
            .enumerate()
        {
            let at = format!("choices[0].message.tool_calls[{index}]");
            let function = field(call, &at, "function")?;
            let function_at = format!("{at}.function");
            tool_calls.push(ToolCall {
                id: string(field(call, &at, "id")?, &format!("{at}.id"))?.to_owned(),
                name: string(
                    field(function, &function_at, "name")?,
                    &format!("{function_at}.name"),
                )?
                .to_owned(),
                arguments: arguments(
                    string(
                        field(function, &function_at, "arguments")?,
                        &format!("{function_at}.arguments"),
                    )?,
                    &format!("{function_at}.arguments"),
                )?,
            });
        }
    }
    let stop_reason = match optional_string(choice, "choices[0]", "finish_reason")?.as_deref() {
        // Mapped onto Anthropic's vocabulary, which `ChatResponse::stop_reason` uses.
        Some("stop") => "end_turn".to_owned(),
        Some("length") => "max_tokens".to_owned(),
        Some("tool_calls") | Some("function_call") => "tool_use".to_owned(),
        Some(other) => other.to_owned(),
        None => implied_stop(&tool_calls),
    };
    Ok(WireAnswer {
        model: optional_string(body, "the response", "model")?,
        text,
        tool_calls,
        stop_reason,
        usage: usage(body, "prompt_tokens", "completion_tokens")?,
    })
}
