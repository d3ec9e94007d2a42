//! OpenAI Chat Completions: `messages` with `tool_calls` (arguments as a JSON string) and
//! `tool` messages; the answer is `choices[0].message` plus `finish_reason` and `usage`.

use serde_json::{json, Map, Value};

use super::{
    arguments, array, field, implied_stop, optional, optional_string, schema, string, usage, Shape,
    WireAnswer,
};
use simtape::cap::llm::{ChatRequest, ChatResponse, Message, Role, ToolCall, ToolDefinition};

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
        thinking: None,
    })
}

// --- The serving side: what `simtape serve` reads from an agent and answers it. ---------

/// Reads an agent's Chat Completions request. `content` may be a string or a list of parts
/// (their `text` joined); `tool` messages answer calls by `tool_call_id`.
pub(super) fn parse_request(body: &Value) -> Result<ChatRequest, Shape> {
    let model = string(field(body, "the request", "model")?, "model")?;
    let mut messages = Vec::new();
    for (index, wire) in array(field(body, "the request", "messages")?, "messages")?
        .iter()
        .enumerate()
    {
        let at = format!("messages[{index}]");
        let role = string(field(wire, &at, "role")?, &format!("{at}.role"))?;
        let text = content_text(optional(wire, "content"), &format!("{at}.content"))?;
        let message = match role {
            "system" | "developer" => Message::system(text),
            "user" => Message::user(text),
            "tool" => Message::tool_result(
                string(
                    field(wire, &at, "tool_call_id")?,
                    &format!("{at}.tool_call_id"),
                )?,
                text,
            ),
            "assistant" => {
                let mut message = Message::assistant(text);
                if let Some(calls) = optional(wire, "tool_calls") {
                    for (k, call) in array(calls, &format!("{at}.tool_calls"))?
                        .iter()
                        .enumerate()
                    {
                        let call_at = format!("{at}.tool_calls[{k}]");
                        let function = field(call, &call_at, "function")?;
                        message.tool_calls.push(ToolCall {
                            id: string(field(call, &call_at, "id")?, &call_at)?.to_owned(),
                            name: string(field(function, &call_at, "name")?, &call_at)?.to_owned(),
                            arguments: arguments(
                                string(field(function, &call_at, "arguments")?, &call_at)?,
                                &format!("{call_at}.function.arguments"),
                            )?,
                        });
                    }
                }
                message
            }
            other => {
                return Err(Shape::new(
                    format!("a chat role at {at}.role"),
                    format!("{other:?}"),
                ))
            }
        };
        messages.push(message);
    }
    let mut tools = Vec::new();
    if let Some(wire) = optional(body, "tools") {
        for (index, tool) in array(wire, "tools")?.iter().enumerate() {
            let at = format!("tools[{index}].function");
            let function = field(tool, &format!("tools[{index}]"), "function")?;
            tools.push(ToolDefinition {
                name: string(field(function, &at, "name")?, &format!("{at}.name"))?.to_owned(),
                description: optional_string(function, &at, "description")?.unwrap_or_default(),
                parameters: optional(function, "parameters")
                    .cloned()
                    .unwrap_or(Value::Null),
            });
        }
    }
    Ok(ChatRequest::new(model, messages).with_tools(tools))
}

/// Returns a message's text: a string, or the `text` of each part joined; none is empty.
fn content_text(content: Option<&Value>, at: &str) -> Result<String, Shape> {
    let Some(content) = content else {
        return Ok(String::new());
    };
    if let Some(text) = content.as_str() {
        return Ok(text.to_owned());
    }
    let parts: Vec<&str> = array(content, at)?
        .iter()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    Ok(parts.join("\n\n"))
}

/// Returns `stop_reason` in Chat Completions' vocabulary.
fn finish_reason(stop_reason: &str) -> &str {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "max_tokens" => "length",
        "tool_use" => "tool_calls",
        other => other,
    }
}

fn usage_body(answer: &ChatResponse) -> Value {
    let usage = answer.usage;
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    })
}

/// Returns the non-streaming Chat Completions answer; `created` is Unix seconds.
pub(super) fn response_body(answer: &ChatResponse, id: &str, created: i64) -> Value {
    let mut reply = Message::assistant(answer.text.clone());
    reply.tool_calls.clone_from(&answer.tool_calls);
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": answer.model,
        "choices": [{
            "index": 0,
            "message": message(&reply),
            "finish_reason": finish_reason(&answer.stop_reason),
            "logprobs": null,
        }],
        "usage": usage_body(answer),
    })
}

/// Returns the streamed answer's chunks, in order: the role, the text, each tool call
/// (id, name and whole arguments in one delta), the finish reason, and the usage chunk
/// when `include_usage` (the caller's `stream_options`); the caller ends with `[DONE]`.
pub(super) fn stream_chunks(
    answer: &ChatResponse,
    id: &str,
    created: i64,
    include_usage: bool,
) -> Vec<Value> {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": created,
            "model": answer.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
        })
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if !answer.text.is_empty() {
        chunks.push(chunk(json!({"content": answer.text}), Value::Null));
    }
    for (index, call) in answer.tool_calls.iter().enumerate() {
        chunks.push(chunk(
            json!({"tool_calls": [{
                "index": index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": call.arguments.to_string()},
            }]}),
            Value::Null,
        ));
    }
    chunks.push(chunk(json!({}), finish_reason(&answer.stop_reason).into()));
    if include_usage {
        chunks.push(json!({
            "id": id, "object": "chat.completion.chunk", "created": created,
            "model": answer.model, "choices": [], "usage": usage_body(answer),
        }));
    }
    chunks
}

/// Returns the API's error body for `status`.
pub(super) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 | 404 => "invalid_request_error",
        401 => "authentication_error",
        429 => "rate_limit_exceeded",
        _ => "server_error",
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}
