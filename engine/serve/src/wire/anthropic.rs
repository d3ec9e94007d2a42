//! Anthropic Messages: a top-level `system`, alternating `user`/`assistant` messages of
//! content blocks (`text`, `tool_use`, `tool_result`) and `tools` with `input_schema`; the
//! answer is `content` blocks plus `stop_reason` and `usage`.

use serde_json::{json, Map, Value};

use super::{
    alternating_turns, array, declarations, field, implied_stop, optional, optional_string, string,
    system_text, usage, Shape, WireAnswer,
};
use simtape::cap::llm::{
    ChatRequest, ChatResponse, Message, Role, Thinking, ToolCall, ToolDefinition,
};

pub(super) fn request_body(request: &ChatRequest, model: &str, max_tokens: u64) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("max_tokens".into(), max_tokens.into());
    if let Some(system) = system_text(request) {
        body.insert("system".into(), system.into());
    }
    body.insert("messages".into(), messages(request).into());
    if !request.tools.is_empty() {
        body.insert("tools".into(), declarations(request, "input_schema").into());
    }
    Value::Object(body)
}

/// Returns the conversation as Anthropic messages. Tool results travel in `user` messages,
/// and consecutive messages of one role are merged, because the API requires the roles to
/// alternate and every result of a turn to sit in the one message after it.
fn messages(request: &ChatRequest) -> Vec<Value> {
    alternating_turns(request, "content", |message| match message.role {
        Role::System => unreachable!("system text is sent apart"),
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
    })
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
    let mut thinking: Option<Thinking> = None;
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
            // Several thinking blocks join into one; the last signature seals them (simtape
            // never checks it, an agent only sends it back).
            "thinking" => {
                let part = string(field(block, &at, "thinking")?, &format!("{at}.thinking"))?;
                let signature = optional_string(block, &at, "signature")?.unwrap_or_default();
                let sealed = thinking.get_or_insert_with(|| Thinking {
                    text: String::new(),
                    signature: String::new(),
                });
                sealed.text.push_str(part);
                sealed.signature = signature;
            }
            // Redacted thinking and server tools carry nothing `ChatResponse` holds.
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
        thinking,
    })
}

// --- The serving side: what `simtape serve` reads from an agent and answers it. ---------

/// Reads an agent's Messages request. Content may be a string or a list of blocks; text
/// blocks of one message join with a blank line, `tool_result` blocks become tool messages,
/// and blocks `ChatRequest` has no place for (images, thinking, documents) are left out.
pub(super) fn parse_request(body: &Value) -> Result<ChatRequest, Shape> {
    let model = string(field(body, "the request", "model")?, "model")?;
    let mut messages = Vec::new();
    if let Some(system) = optional(body, "system") {
        let text = blocks_text(system, "system")?;
        if !text.is_empty() {
            messages.push(Message::system(text));
        }
    }
    for (index, message) in array(field(body, "the request", "messages")?, "messages")?
        .iter()
        .enumerate()
    {
        let at = format!("messages[{index}]");
        let role = string(field(message, &at, "role")?, &format!("{at}.role"))?;
        let content = field(message, &at, "content")?;
        match role {
            "user" => user_turn(content, &at, &mut messages)?,
            "assistant" => messages.push(assistant_turn(content, &at)?),
            // Agents (Claude Code among them) also send system text between the turns. It is
            // hoisted before the conversation, where `request_body` sends every system
            // message, so "the last message" stays the user's or a tool's.
            "system" => {
                let text = blocks_text(content, &at)?;
                let at = messages
                    .iter()
                    .take_while(|m| m.role == Role::System)
                    .count();
                messages.insert(at, Message::system(text));
            }
            other => {
                return Err(Shape::new(
                    format!("\"user\", \"assistant\" or \"system\" at {at}.role"),
                    format!("{other:?}"),
                ))
            }
        }
    }
    let tools = match optional(body, "tools") {
        None => Vec::new(),
        Some(tools) => array(tools, "tools")?
            .iter()
            .enumerate()
            .map(|(index, tool)| {
                let at = format!("tools[{index}]");
                Ok(ToolDefinition {
                    name: string(field(tool, &at, "name")?, &format!("{at}.name"))?.to_owned(),
                    description: optional_string(tool, &at, "description")?.unwrap_or_default(),
                    parameters: optional(tool, "input_schema")
                        .cloned()
                        .unwrap_or(Value::Null),
                })
            })
            .collect::<Result<_, Shape>>()?,
    };
    Ok(ChatRequest::new(model, messages).with_tools(tools))
}

/// Returns the text of a string or of a list of blocks' `text` fields, joined.
fn blocks_text(content: &Value, at: &str) -> Result<String, Shape> {
    if let Some(text) = content.as_str() {
        return Ok(text.to_owned());
    }
    let texts: Vec<&str> = array(content, at)?
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    Ok(texts.join("\n\n"))
}

fn user_turn(content: &Value, at: &str, messages: &mut Vec<Message>) -> Result<(), Shape> {
    if content.is_string() {
        messages.push(Message::user(blocks_text(content, at)?));
        return Ok(());
    }
    let mut text = Vec::new();
    for (index, block) in array(content, &format!("{at}.content"))?.iter().enumerate() {
        let block_at = format!("{at}.content[{index}]");
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push(string(field(block, &block_at, "text")?, &block_at)?),
            Some("tool_result") => {
                let id = string(field(block, &block_at, "tool_use_id")?, &block_at)?;
                let result = match optional(block, "content") {
                    Some(content) => blocks_text(content, &format!("{block_at}.content"))?,
                    None => String::new(),
                };
                messages.push(Message::tool_result(id, result));
            }
            _ => {}
        }
    }
    if !text.is_empty() {
        messages.push(Message::user(text.join("\n\n")));
    }
    Ok(())
}

fn assistant_turn(content: &Value, at: &str) -> Result<Message, Shape> {
    if content.is_string() {
        return Ok(Message::assistant(blocks_text(content, at)?));
    }
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for (index, block) in array(content, &format!("{at}.content"))?.iter().enumerate() {
        let block_at = format!("{at}.content[{index}]");
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push(string(field(block, &block_at, "text")?, &block_at)?),
            Some("tool_use") => calls.push(ToolCall {
                id: string(field(block, &block_at, "id")?, &block_at)?.to_owned(),
                name: string(field(block, &block_at, "name")?, &block_at)?.to_owned(),
                arguments: optional(block, "input")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            }),
            _ => {}
        }
    }
    let mut message = Message::assistant(text.join("\n\n"));
    message.tool_calls = calls;
    Ok(message)
}

/// Returns the content blocks of `answer`: its thinking (when any), its text (when any), then
/// its tool calls.
fn answer_blocks(answer: &ChatResponse) -> Vec<Value> {
    let mut blocks: Vec<Value> = answer
        .thinking
        .iter()
        .map(|t| json!({"type": "thinking", "thinking": t.text, "signature": t.signature}))
        .collect();
    blocks.extend(text_block(&answer.text));
    blocks.extend(answer.tool_calls.iter().map(|call| {
        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
    }));
    blocks
}

/// Returns the non-streaming Messages answer.
pub(super) fn response_body(answer: &ChatResponse, id: &str) -> Value {
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": answer_blocks(answer),
        "stop_reason": answer.stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": answer.usage.input_tokens,
            "output_tokens": answer.usage.output_tokens,
        },
    })
}

/// Returns the streamed answer as its server-sent events, in the order the API sends them:
/// `message_start`, per block `content_block_start` / `content_block_delta` /
/// `content_block_stop`, then `message_delta` (stop reason, usage) and `message_stop`.
pub(super) fn stream_events(answer: &ChatResponse, id: &str) -> Vec<(&'static str, Value)> {
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": answer.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": answer.usage.input_tokens, "output_tokens": 0},
        }}),
    )];
    for (index, block) in answer_blocks(answer).into_iter().enumerate() {
        // A block starts empty and its content arrives as deltas; a thinking block's signature
        // comes last, in a delta of its own, as the API sends it.
        let (start, deltas) = match block["type"].as_str() {
            Some("thinking") => (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                vec![
                    json!({"type": "thinking_delta", "thinking": block["thinking"]}),
                    json!({"type": "signature_delta", "signature": block["signature"]}),
                ],
            ),
            Some("text") => (
                json!({"type": "text", "text": ""}),
                vec![json!({"type": "text_delta", "text": block["text"]})],
            ),
            _ => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                vec![
                    json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
                ],
            ),
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": answer.stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": answer.usage.output_tokens}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
}

/// Returns the API's error body for `status`.
pub(super) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
