//! Google's Gemini API (`generateContent`): `contents` of `user` and `model` turns made of
//! parts (`text`, `functionCall`, `functionResponse`, `thought` text), a `systemInstruction`
//! and `tools[].functionDeclarations`; the answer is `candidates[0].content.parts` plus
//! `finishReason` and `usageMetadata`. The model and whether to stream are in the URL
//! (`models/{model}:streamGenerateContent`), not the body: the gateway reads them there.
//!
//! Google's JSON parsers take both camelCase and snake_case field names; the SDKs send
//! camelCase, which is what is written here, and both are read.

use serde_json::{json, Map, Value};

use super::{
    alternating_turns, array, declarations, field, implied_stop, optional, string, system_text,
    Shape, WireAnswer,
};
use simtape::cap::llm::{
    ChatRequest, ChatResponse, Message, Role, Thinking, ToolCall, ToolDefinition, Usage,
};

/// Returns field `camel` (or its snake_case spelling `snake`) of `value`, unless missing or null.
fn either<'a>(value: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    optional(value, camel).or_else(|| optional(value, snake))
}

pub(super) fn request_body(request: &ChatRequest) -> Value {
    let mut body = Map::new();
    if let Some(system) = system_text(request) {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    body.insert("contents".into(), contents(request).into());
    if !request.tools.is_empty() {
        let declarations = declarations(request, "parametersJsonSchema");
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    Value::Object(body)
}

/// Returns the conversation as Gemini contents. Tool results travel as `functionResponse`
/// parts of a `user` turn, named after the call they answer (the API pairs them by name), and
/// consecutive turns of one role are merged, so every result of a turn sits in one content.
fn contents(request: &ChatRequest) -> Vec<Value> {
    alternating_turns(request, "parts", |message| match message.role {
        Role::System => unreachable!("system text is sent apart"),
        Role::User => ("user", text_part(&message.content)),
        Role::Tool => {
            let id = message.tool_call_id.clone().unwrap_or_default();
            let name = call_name(request, &id).unwrap_or(&id).to_owned();
            (
                "user",
                vec![json!({"functionResponse": {
                    "id": id, "name": name, "response": {"output": message.content},
                }})],
            )
        }
        Role::Assistant => {
            let mut parts = text_part(&message.content);
            parts.extend(message.tool_calls.iter().map(function_call));
            ("model", parts)
        }
    })
}

/// Returns the name of the call `id` in the conversation, if an assistant turn made it.
fn call_name<'a>(request: &'a ChatRequest, id: &str) -> Option<&'a str> {
    request
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .find(|call| call.id == id)
        .map(|call| call.name.as_str())
}

/// Returns a text part, or none for empty text.
fn text_part(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"text": text})]
    }
}

fn function_call(call: &ToolCall) -> Value {
    json!({"functionCall": {"id": call.id, "name": call.name, "args": call.arguments}})
}

pub(super) fn parse_response(body: &Value) -> Result<WireAnswer, Shape> {
    let candidates = array(field(body, "the response", "candidates")?, "candidates")?;
    let Some(candidate) = candidates.first() else {
        return Err(Shape::new(
            "at least one element in candidates",
            "an empty array",
        ));
    };
    let parts = match optional(candidate, "content").and_then(|c| optional(c, "parts")) {
        Some(parts) => array(parts, "candidates[0].content.parts")?,
        None => &[],
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut thinking: Option<Thinking> = None;
    for (index, part) in parts.iter().enumerate() {
        let at = format!("candidates[0].content.parts[{index}]");
        if let Some(call) = either(part, "functionCall", "function_call") {
            let at = format!("{at}.functionCall");
            tool_calls.push(read_call(call, &at, format!("call_{index}"))?);
            continue;
        }
        let Some(part_text) = optional(part, "text") else {
            continue;
        };
        let part_text = string(part_text, &format!("{at}.text"))?;
        if optional(part, "thought").and_then(Value::as_bool) == Some(true) {
            let sealed = thinking.get_or_insert_with(|| Thinking {
                text: String::new(),
                signature: String::new(),
            });
            sealed.text.push_str(part_text);
            if let Some(signature) = either(part, "thoughtSignature", "thought_signature") {
                sealed.signature = string(signature, &format!("{at}.thoughtSignature"))?.into();
            }
        } else {
            text.push_str(part_text);
        }
    }
    let finish = either(candidate, "finishReason", "finish_reason").and_then(Value::as_str);
    let stop_reason = match finish {
        Some("MAX_TOKENS") => "max_tokens".to_owned(),
        _ => implied_stop(&tool_calls),
    };
    let model = match either(body, "modelVersion", "model_version") {
        Some(model) => Some(string(model, "modelVersion")?.to_owned()),
        None => None,
    };
    Ok(WireAnswer {
        model,
        text,
        tool_calls,
        stop_reason,
        usage: read_usage(body)?,
        thinking,
    })
}

/// Reads a `functionCall`; one without an `id` (the API often sends none) gets `unnamed_id`,
/// made from its place, so its result can name it.
fn read_call(call: &Value, at: &str, unnamed_id: String) -> Result<ToolCall, Shape> {
    let name = string(field(call, at, "name")?, &format!("{at}.name"))?;
    let id = match optional(call, "id") {
        Some(id) => string(id, &format!("{at}.id"))?.to_owned(),
        None => unnamed_id,
    };
    Ok(ToolCall {
        id,
        name: name.to_owned(),
        arguments: optional(call, "args")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    })
}

/// Reads `usageMetadata`; the API leaves out counts that are zero.
fn read_usage(body: &Value) -> Result<Option<Usage>, Shape> {
    let Some(usage) = either(body, "usageMetadata", "usage_metadata") else {
        return Ok(None);
    };
    let count = |camel: &str, snake: &str| -> Result<u64, Shape> {
        match either(usage, camel, snake) {
            None => Ok(0),
            Some(value) => value.as_u64().ok_or_else(|| {
                Shape::new(
                    format!("a token count at usageMetadata.{camel}"),
                    simtape::cap::llm::fixture::json_kind(value),
                )
            }),
        }
    };
    Ok(Some(Usage {
        input_tokens: count("promptTokenCount", "prompt_token_count")?,
        output_tokens: count("candidatesTokenCount", "candidates_token_count")?,
    }))
}

// --- The serving side: what `simtape serve` reads from an agent and answers it. ---------

/// Reads an agent's `generateContent` body. The model is the URL's (the gateway sets it);
/// the body's `model`, which only a calling side that is not an SDK would send, is kept.
/// Thought parts, inline data and other parts `ChatRequest` has no place for are left out.
pub(super) fn parse_request(body: &Value) -> Result<ChatRequest, Shape> {
    let model = match optional(body, "model") {
        Some(model) => string(model, "model")?,
        None => "",
    };
    let mut messages = Vec::new();
    if let Some(system) = either(body, "systemInstruction", "system_instruction") {
        let text = content_text(system, "systemInstruction")?;
        if !text.is_empty() {
            messages.push(Message::system(text));
        }
    }
    // The calls of the last model turn not answered yet: a `functionResponse` without an id
    // answers the first of them with its name.
    let mut pending: Vec<ToolCall> = Vec::new();
    for (index, content) in array(field(body, "the request", "contents")?, "contents")?
        .iter()
        .enumerate()
    {
        let at = format!("contents[{index}]");
        let role = match optional(content, "role") {
            Some(role) => string(role, &format!("{at}.role"))?,
            None => "user",
        };
        let parts = array(field(content, &at, "parts")?, &format!("{at}.parts"))?;
        match role {
            "model" => {
                let message = model_turn(parts, &at)?;
                pending = message.tool_calls.clone();
                messages.push(message);
            }
            // Older clients send results in a `function` (or `tool`) turn.
            "user" | "function" | "tool" => user_turn(parts, &at, &mut pending, &mut messages)?,
            other => {
                return Err(Shape::new(
                    format!("\"user\" or \"model\" at {at}.role"),
                    format!("{other:?}"),
                ))
            }
        }
    }
    Ok(ChatRequest::new(model, messages).with_tools(tools(body)?))
}

/// Returns the functions of `tools[].functionDeclarations`; other tools (search, code
/// execution) are left out.
fn tools(body: &Value) -> Result<Vec<ToolDefinition>, Shape> {
    let Some(tools) = optional(body, "tools") else {
        return Ok(Vec::new());
    };
    let mut definitions = Vec::new();
    for (index, tool) in array(tools, "tools")?.iter().enumerate() {
        let at = format!("tools[{index}].functionDeclarations");
        let Some(declarations) = either(tool, "functionDeclarations", "function_declarations")
        else {
            continue;
        };
        for (index, declaration) in array(declarations, &at)?.iter().enumerate() {
            let at = format!("{at}[{index}]");
            let description = match optional(declaration, "description") {
                Some(description) => string(description, &format!("{at}.description"))?,
                None => "",
            };
            let parameters = either(
                declaration,
                "parametersJsonSchema",
                "parameters_json_schema",
            )
            .or_else(|| optional(declaration, "parameters"))
            .cloned()
            .unwrap_or(Value::Null);
            definitions.push(ToolDefinition {
                name: string(field(declaration, &at, "name")?, &format!("{at}.name"))?.to_owned(),
                description: description.to_owned(),
                parameters,
            });
        }
    }
    Ok(definitions)
}

/// Returns the text of a `Content` (its text parts, joined) or of a plain string.
fn content_text(content: &Value, at: &str) -> Result<String, Shape> {
    if let Some(text) = content.as_str() {
        return Ok(text.to_owned());
    }
    let parts = array(field(content, at, "parts")?, &format!("{at}.parts"))?;
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    Ok(texts.join("\n\n"))
}

fn user_turn(
    parts: &[Value],
    at: &str,
    pending: &mut Vec<ToolCall>,
    messages: &mut Vec<Message>,
) -> Result<(), Shape> {
    let mut text = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        let part_at = format!("{at}.parts[{index}]");
        if let Some(response) = either(part, "functionResponse", "function_response") {
            let response_at = format!("{part_at}.functionResponse");
            let name = string(field(response, &response_at, "name")?, &response_at)?;
            let id = match optional(response, "id") {
                Some(id) => string(id, &format!("{response_at}.id"))?.to_owned(),
                None => answered_call(pending, name),
            };
            pending.retain(|call| call.id != id);
            let result = optional(response, "response").map_or_else(String::new, result_text);
            messages.push(Message::tool_result(id, result));
        } else if let Some(part_text) = optional(part, "text") {
            text.push(string(part_text, &format!("{part_at}.text"))?);
        }
    }
    if !text.is_empty() {
        messages.push(Message::user(text.join("\n\n")));
    }
    Ok(())
}

/// Returns the id of the first pending call named `name`, or the name itself when no call is
/// pending (a result the conversation shows no call for).
fn answered_call(pending: &[ToolCall], name: &str) -> String {
    pending
        .iter()
        .find(|call| call.name == name)
        .map_or_else(|| name.to_owned(), |call| call.id.clone())
}

/// Returns a function's result as text: the one string the response object holds under
/// `output` or `result` (the conventions of Google's SDKs and CLI), else its JSON.
fn result_text(response: &Value) -> String {
    if let Some(object) = response.as_object() {
        if object.len() == 1 {
            if let Some(Value::String(text)) = object.get("output").or_else(|| object.get("result"))
            {
                return text.clone();
            }
        }
    }
    response.to_string()
}

fn model_turn(parts: &[Value], at: &str) -> Result<Message, Shape> {
    let mut text = String::new();
    let mut calls = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        let part_at = format!("{at}.parts[{index}]");
        if let Some(call) = either(part, "functionCall", "function_call") {
            // An id-less call is named by its place in the conversation: part 1 of
            // `contents[3]` is `call_3_1` in every run.
            let unnamed_id = format!("call_{}_{index}", content_index(at));
            calls.push(read_call(
                call,
                &format!("{part_at}.functionCall"),
                unnamed_id,
            )?);
        } else if optional(part, "thought").and_then(Value::as_bool) == Some(true) {
            continue;
        } else if let Some(part_text) = optional(part, "text") {
            // A streamed answer comes back as the parts it arrived in: they join as sent.
            text.push_str(string(part_text, &format!("{part_at}.text"))?);
        }
    }
    let mut message = Message::assistant(text);
    message.tool_calls = calls;
    Ok(message)
}

/// Returns the `N` of `contents[N]`.
fn content_index(at: &str) -> &str {
    at.trim_start_matches("contents[").trim_end_matches(']')
}

/// Returns the parts of `answer`: its thinking as a thought part (when any), its text (when
/// any), then one `functionCall` part per tool call, with the call's id.
fn answer_parts(answer: &ChatResponse) -> Vec<Value> {
    let mut parts: Vec<Value> = answer
        .thinking
        .iter()
        .map(|t| json!({"text": t.text, "thought": true}))
        .collect();
    parts.extend(text_part(&answer.text));
    parts.extend(answer.tool_calls.iter().map(function_call));
    parts
}

/// Returns the finish reason Gemini gives for a stop reason: a call of a function ends a turn
/// with `STOP` there too.
fn finish_reason(stop_reason: &str) -> &'static str {
    match stop_reason {
        "max_tokens" => "MAX_TOKENS",
        _ => "STOP",
    }
}

fn usage_metadata(answer: &ChatResponse) -> Value {
    let usage = &answer.usage;
    json!({
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    })
}

/// Returns one response object of `parts`, with the finish reason when it is the last.
fn response_object(answer: &ChatResponse, id: &str, parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if last {
        candidate["finishReason"] = finish_reason(&answer.stop_reason).into();
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": usage_metadata(answer),
        "modelVersion": answer.model,
        "responseId": id,
    })
}

/// Returns the non-streaming `generateContent` answer. An answer of nothing is one empty text
/// part, as the API sends it.
pub(super) fn response_body(answer: &ChatResponse, id: &str) -> Value {
    let mut parts = answer_parts(answer);
    if parts.is_empty() {
        parts = vec![json!({"text": ""})];
    }
    response_object(answer, id, parts, true)
}

/// Returns the `streamGenerateContent?alt=sse` answer as its server-sent events: one response
/// object per part, the text in pieces as the API streams it (so a broken stream can carry
/// part of it), then a last one carrying the finish reason (and an empty text part), which a
/// broken stream never sends: clients know a whole stream by it.
pub(super) fn stream_events(answer: &ChatResponse, id: &str) -> Vec<Value> {
    let mut parts = Vec::new();
    for part in answer_parts(answer) {
        match part.get("text").and_then(Value::as_str) {
            Some(text) if part.get("thought").is_none() => {
                parts.extend(text_pieces(text).into_iter().map(|t| json!({"text": t})));
            }
            _ => parts.push(part),
        }
    }
    let mut events: Vec<Value> = parts
        .into_iter()
        .map(|part| response_object(answer, id, vec![part], false))
        .collect();
    events.push(response_object(answer, id, vec![json!({"text": ""})], true));
    events
}

/// The bytes of streamed text after which a piece ends at the next whitespace.
const TEXT_PIECE_BYTES: usize = 16;

/// Returns `text` in the pieces a stream sends it in: each ends with the first whitespace after
/// [`TEXT_PIECE_BYTES`] bytes of it, the last with the text.
fn text_pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (at, c) in text.char_indices() {
        if c.is_whitespace() && at + 1 - start > TEXT_PIECE_BYTES {
            let end = at + c.len_utf8();
            pieces.push(&text[start..end]);
            start = end;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// Returns Google's error body for `status`: `{"error": {"code", "message", "status"}}`, the
/// status being the canonical code's name.
pub(super) fn error_body(status: u16, message: &str) -> Value {
    let name = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "NOT_IMPLEMENTED",
        503 | 529 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": name}})
}

/// Adds to an error body when to retry, as Google says it: a `google.rpc.RetryInfo` detail
/// whose `retryDelay` is a duration in seconds (`"1.5s"`).
pub(super) fn add_retry_info(body: &mut Value, retry_after_ms: u64) {
    let (seconds, millis) = (retry_after_ms / 1000, retry_after_ms % 1000);
    let delay = if millis == 0 {
        format!("{seconds}s")
    } else {
        format!("{seconds}.{millis:03}s")
    };
    body["error"]["details"] = json!([{
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": delay,
    }]);
}
