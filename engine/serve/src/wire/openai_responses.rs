//! OpenAI Responses: `input` items (messages, `function_call`, `function_call_output`) and
//! flat `tools`; the answer is the `output` items plus `status` and `usage`.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::{
    arguments, array, field, implied_stop, optional, optional_string, schema, string, usage,
    ServedRequest, Shape, WireAnswer,
};
use simtape::cap::llm::{
    ChatRequest, ChatResponse, Message, Role, Thinking, ToolCall, ToolDefinition,
};

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
    let mut thinking: Option<Thinking> = None;
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
            // A reasoning item's summary is its readable thinking; the encrypted content, when
            // asked for, is what an agent sends back, kept as the signature.
            "reasoning" => {
                let summary = optional(item, "summary").cloned().unwrap_or(Value::Null);
                let parts = summary.as_array().map(Vec::as_slice).unwrap_or_default();
                let sealed = thinking.get_or_insert_with(|| Thinking {
                    text: String::new(),
                    signature: String::new(),
                });
                for part in parts {
                    if let Some(part_text) = part.get("text").and_then(Value::as_str) {
                        sealed.text.push_str(part_text);
                    }
                }
                if let Some(signature) = item.get("encrypted_content").and_then(Value::as_str) {
                    sealed.signature = signature.to_owned();
                }
            }
            // Built-in tool items carry nothing `ChatResponse` holds.
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
        thinking,
    })
}

// --- The serving side: what `simtape serve` reads from an agent and answers it. ---------

/// Reads an agent's Responses request. `instructions` and `system`/`developer` messages
/// become system messages, hoisted before the conversation (where `request_body` sends them);
/// `input` is a string or a list of items: messages (content a string or `input_text` /
/// `output_text` parts), `function_call` (joined to the assistant turn before it) and
/// `function_call_output`. A namespace's function tools join the tool list under their flat
/// names ([`flat_name`]), entered in `namespaced`; items and tools `ChatRequest` has no place
/// for (reasoning, web search, custom tools) are left out.
pub(super) fn parse_request(
    body: &Value,
    namespaced: &mut BTreeMap<String, (String, String)>,
) -> Result<ChatRequest, Shape> {
    let model = string(field(body, "the request", "model")?, "model")?;
    let mut messages = Vec::new();
    if let Some(instructions) = optional_string(body, "the request", "instructions")? {
        messages.push(Message::system(instructions));
    }
    let input = field(body, "the request", "input")?;
    if let Some(text) = input.as_str() {
        messages.push(Message::user(text));
    } else {
        for (index, item) in array(input, "input")?.iter().enumerate() {
            input_item(item, &format!("input[{index}]"), &mut messages)?;
        }
    }
    let mut tools = Vec::new();
    if let Some(wire) = optional(body, "tools") {
        for (index, tool) in array(wire, "tools")?.iter().enumerate() {
            let at = format!("tools[{index}]");
            match optional(tool, "type").and_then(Value::as_str) {
                Some("function") => tools.push(function_tool(tool, &at)?),
                Some("namespace") => {
                    let namespace = string(field(tool, &at, "name")?, &format!("{at}.name"))?;
                    let inner = array(field(tool, &at, "tools")?, &format!("{at}.tools"))?;
                    for (inner_index, inner_tool) in inner.iter().enumerate() {
                        if optional(inner_tool, "type").and_then(Value::as_str) != Some("function")
                        {
                            continue;
                        }
                        let mut definition =
                            function_tool(inner_tool, &format!("{at}.tools[{inner_index}]"))?;
                        let own = std::mem::take(&mut definition.name);
                        definition.name = flat_name(namespace, &own);
                        namespaced.insert(definition.name.clone(), (namespace.to_owned(), own));
                        tools.push(definition);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(ChatRequest::new(model, messages).with_tools(tools))
}

/// Reads a `{"type": "function"}` tool.
fn function_tool(tool: &Value, at: &str) -> Result<ToolDefinition, Shape> {
    Ok(ToolDefinition {
        name: string(field(tool, at, "name")?, &format!("{at}.name"))?.to_owned(),
        description: optional_string(tool, at, "description")?.unwrap_or_default(),
        parameters: optional(tool, "parameters").cloned().unwrap_or(Value::Null),
    })
}

/// Returns the one name a namespaced tool goes by in the conversation: the namespace and the
/// tool's name joined by `__` (`mcp__tickets` and `close_ticket` → `mcp__tickets__close_ticket`,
/// the name Claude Code gives the same MCP tool, so one fixture serves both agents); a
/// namespace that already ends in `__` is joined as it is.
fn flat_name(namespace: &str, name: &str) -> String {
    if namespace.ends_with("__") {
        format!("{namespace}{name}")
    } else {
        format!("{namespace}__{name}")
    }
}

/// Reads one input item onto `messages`. An item without a `type` is a message (the SDK's
/// short form `{"role", "content"}`).
fn input_item(item: &Value, at: &str, messages: &mut Vec<Message>) -> Result<(), Shape> {
    let kind = match optional(item, "type") {
        Some(kind) => string(kind, &format!("{at}.type"))?,
        None => "message",
    };
    match kind {
        "message" => {
            let role = string(field(item, at, "role")?, &format!("{at}.role"))?;
            let text = content_text(field(item, at, "content")?, &format!("{at}.content"))?;
            match role {
                "system" | "developer" => {
                    let first_other = messages
                        .iter()
                        .take_while(|m| m.role == Role::System)
                        .count();
                    messages.insert(first_other, Message::system(text));
                }
                "user" => messages.push(Message::user(text)),
                "assistant" => messages.push(Message::assistant(text)),
                other => {
                    return Err(Shape::new(
                        format!(
                            "\"user\", \"assistant\", \"system\" or \"developer\" at {at}.role"
                        ),
                        format!("{other:?}"),
                    ))
                }
            }
        }
        "function_call" => {
            let arguments_at = format!("{at}.arguments");
            let name = string(field(item, at, "name")?, &format!("{at}.name"))?;
            let call = ToolCall {
                id: string(field(item, at, "call_id")?, &format!("{at}.call_id"))?.to_owned(),
                name: match optional_string(item, at, "namespace")? {
                    Some(namespace) => flat_name(&namespace, name),
                    None => name.to_owned(),
                },
                arguments: arguments(
                    string(field(item, at, "arguments")?, &arguments_at)?,
                    &arguments_at,
                )?,
            };
            // The calls of one turn follow its text (or each other): they join that turn.
            match messages.last_mut() {
                Some(turn) if turn.role == Role::Assistant => turn.tool_calls.push(call),
                _ => {
                    let mut turn = Message::assistant("");
                    turn.tool_calls.push(call);
                    messages.push(turn);
                }
            }
        }
        "function_call_output" => {
            let id = string(field(item, at, "call_id")?, &format!("{at}.call_id"))?;
            let output = content_text(field(item, at, "output")?, &format!("{at}.output"))?;
            messages.push(Message::tool_result(id, output));
        }
        _ => {}
    }
    Ok(())
}

/// Returns a content's text: a string, or the `text` of its text parts (`input_text`,
/// `output_text`) joined with a blank line; images and files are left out.
fn content_text(content: &Value, at: &str) -> Result<String, Shape> {
    if let Some(text) = content.as_str() {
        return Ok(text.to_owned());
    }
    let mut texts = Vec::new();
    for (index, part) in array(content, at)?.iter().enumerate() {
        let kind = optional(part, "type").and_then(Value::as_str);
        if matches!(kind, Some("input_text" | "output_text" | "text")) {
            let part_at = format!("{at}[{index}]");
            texts.push(string(
                field(part, &part_at, "text")?,
                &format!("{part_at}.text"),
            )?);
        }
    }
    Ok(texts.join("\n\n"))
}

/// The ids of an answer's output items, derived from the response id (`resp_X` gives
/// `msg_X` and `fc_X_0`, `fc_X_1`, …), so the same answer always carries the same ids.
struct ItemIds<'a> {
    stem: &'a str,
}

impl<'a> ItemIds<'a> {
    fn of(id: &'a str) -> ItemIds<'a> {
        ItemIds {
            stem: id.strip_prefix("resp_").unwrap_or(id),
        }
    }

    fn message(&self) -> String {
        format!("msg_{}", self.stem)
    }

    fn reasoning(&self) -> String {
        format!("rs_{}", self.stem)
    }

    fn call(&self, index: usize) -> String {
        format!("fc_{}_{index}", self.stem)
    }
}

/// Returns the answer's output items as they are when complete: its thinking as a
/// `reasoning` item with one summary part (when any), its text as one message (when any), then
/// one `function_call` per tool call.
fn output_items(served: &ServedRequest, answer: &ChatResponse, id: &str) -> Vec<Value> {
    let ids = ItemIds::of(id);
    let mut items = Vec::new();
    if let Some(thinking) = &answer.thinking {
        items.push(json!({
            "id": ids.reasoning(), "type": "reasoning",
            "summary": [{"type": "summary_text", "text": thinking.text}],
        }));
    }
    if !answer.text.is_empty() {
        items.push(json!({
            "id": ids.message(), "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
        }));
    }
    for (index, call) in answer.tool_calls.iter().enumerate() {
        let mut item = json!({
            "id": ids.call(index), "type": "function_call", "status": "completed",
            "call_id": call.id, "name": call.name, "arguments": call.arguments.to_string(),
        });
        // A namespaced tool is called by its namespace and its own name, as offered.
        if let Some((namespace, own)) = served.namespaced.get(&call.name) {
            item["namespace"] = namespace.as_str().into();
            item["name"] = own.as_str().into();
        }
        items.push(item);
    }
    items
}

/// Returns the response object: `status` `completed`, or `incomplete` (with its reason) when
/// the answer stopped at the token limit; `output` and `usage` only when it is finished.
fn response_object(
    served: &ServedRequest,
    answer: &ChatResponse,
    id: &str,
    created: i64,
    finished: bool,
) -> Value {
    let incomplete = answer.stop_reason == "max_tokens";
    let status = match (finished, incomplete) {
        (false, _) => "in_progress",
        (true, false) => "completed",
        (true, true) => "incomplete",
    };
    let (output, usage) = if finished {
        let usage = answer.usage;
        (
            output_items(served, answer, id).into(),
            json!({
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.input_tokens + usage.output_tokens,
            }),
        )
    } else {
        (json!([]), Value::Null)
    };
    let incomplete_details = if finished && incomplete {
        json!({"reason": "max_output_tokens"})
    } else {
        Value::Null
    };
    json!({
        "id": id, "object": "response", "created_at": created, "status": status,
        "error": null, "incomplete_details": incomplete_details, "model": answer.model,
        "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "usage": usage,
    })
}

/// Returns the non-streaming Responses answer; `created` is Unix seconds.
pub(super) fn response_body(
    served: &ServedRequest,
    answer: &ChatResponse,
    id: &str,
    created: i64,
) -> Value {
    response_object(served, answer, id, created, true)
}

/// Returns the streamed answer as its server-sent events, in the order the API sends them:
/// `response.created`, `response.in_progress`; per output item `output_item.added`, its
/// content (a message's `content_part.added`, `output_text.delta` / `.done`,
/// `content_part.done`; a call's `function_call_arguments.delta` / `.done`) and
/// `output_item.done`; then `response.completed` (or `response.incomplete`) with the usage.
/// Each event carries its `sequence_number`.
pub(super) fn stream_events(
    served: &ServedRequest,
    answer: &ChatResponse,
    id: &str,
    created: i64,
) -> Vec<(&'static str, Value)> {
    let mut events = vec![
        (
            "response.created",
            json!({"response": response_object(served, answer, id, created, false)}),
        ),
        (
            "response.in_progress",
            json!({"response": response_object(served, answer, id, created, false)}),
        ),
    ];
    for (index, item) in output_items(served, answer, id).into_iter().enumerate() {
        events.extend(item_events(index, item));
    }
    let finished = response_object(served, answer, id, created, true);
    let last = if finished["status"] == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    events.push((last, json!({"response": finished})));
    for (sequence, (kind, event)) in events.iter_mut().enumerate() {
        let event = event
            .as_object_mut()
            .expect("every event is built as an object");
        event.insert("type".into(), (*kind).into());
        event.insert("sequence_number".into(), sequence.into());
    }
    events
}

/// Returns the events of output item `index`, from its `added` to its `done`; its content
/// arrives in one delta.
fn item_events(index: usize, item: Value) -> Vec<(&'static str, Value)> {
    let item_id = item["id"].clone();
    let mut started = item.clone();
    started["status"] = "in_progress".into();
    let mut events = Vec::new();
    if item["type"] == "reasoning" {
        let part = item["summary"][0].clone();
        let text = part["text"].clone();
        started["summary"] = json!([]);
        let summary = |key: &str, value: Value| {
            let mut event = json!({"item_id": item_id, "output_index": index, "summary_index": 0});
            event[key] = value;
            event
        };
        events.extend([
            (
                "response.output_item.added",
                json!({"output_index": index, "item": started}),
            ),
            (
                "response.reasoning_summary_part.added",
                summary("part", json!({"type": "summary_text", "text": ""})),
            ),
            (
                "response.reasoning_summary_text.delta",
                summary("delta", text.clone()),
            ),
            (
                "response.reasoning_summary_text.done",
                summary("text", text),
            ),
            (
                "response.reasoning_summary_part.done",
                summary("part", part),
            ),
        ]);
    } else if item["type"] == "message" {
        let part = item["content"][0].clone();
        let text = part["text"].clone();
        started["content"] = json!([]);
        let empty = json!({"type": "output_text", "text": "", "annotations": []});
        events.extend([
            (
                "response.output_item.added",
                json!({"output_index": index, "item": started}),
            ),
            (
                "response.content_part.added",
                json!({"item_id": item_id, "output_index": index, "content_index": 0,
                       "part": empty}),
            ),
            (
                "response.output_text.delta",
                json!({"item_id": item_id, "output_index": index, "content_index": 0,
                       "delta": text, "logprobs": []}),
            ),
            (
                "response.output_text.done",
                json!({"item_id": item_id, "output_index": index, "content_index": 0,
                       "text": text, "logprobs": []}),
            ),
            (
                "response.content_part.done",
                json!({"item_id": item_id, "output_index": index, "content_index": 0,
                       "part": part}),
            ),
        ]);
    } else {
        let arguments = item["arguments"].clone();
        started["arguments"] = "".into();
        events.extend([
            (
                "response.output_item.added",
                json!({"output_index": index, "item": started}),
            ),
            (
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": index, "delta": arguments}),
            ),
            (
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": index, "name": item["name"],
                       "arguments": arguments}),
            ),
        ]);
    }
    events.push((
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    ));
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ServedRequest, Wire};
    use simtape::cap::llm::{Provider, Usage};

    fn answer(text: &str, stop_reason: &str) -> ChatResponse {
        ChatResponse {
            model: "m".into(),
            text: text.into(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "exec_command".into(),
                arguments: json!({"cmd": "ls"}),
            }],
            stop_reason: stop_reason.into(),
            usage: Usage {
                input_tokens: 7,
                output_tokens: 3,
            },
            thinking: None,
        }
    }

    #[test]
    fn an_agents_items_become_the_conversation() {
        // Goal: instructions and developer messages are system text before the conversation,
        // text parts join, a function_call joins the assistant text before it, its output is
        // a tool result, and reasoning items and non-function tools (Codex sends both) are
        // left out rather than refused.
        let body = json!({
            "model": "m", "instructions": "be brief", "stream": true,
            "input": [
                {"role": "user", "content": "hi"},
                {"type": "message", "role": "developer",
                 "content": [{"type": "input_text", "text": "rules"}]},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "x"},
                    {"type": "input_text", "text": "b"}]},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Listing."}]},
                {"type": "function_call", "call_id": "c1", "name": "exec_command",
                 "arguments": "{\"cmd\":\"ls\"}"},
                {"type": "function_call", "call_id": "c2", "name": "exec_command",
                 "arguments": ""},
                {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
                {"type": "function_call_output", "call_id": "c2",
                 "output": [{"type": "input_text", "text": "b.txt"}]},
            ],
            "tools": [
                {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
                {"type": "web_search"},
                {"type": "namespace", "name": "agents", "tools": []},
            ],
        });
        let served = Provider::OpenAiResponses.parse_request(&body).unwrap();
        assert!(served.stream);
        let request = served.request;
        let mut assistant = Message::assistant("Listing.");
        assistant.tool_calls = vec![
            ToolCall {
                id: "c1".into(),
                name: "exec_command".into(),
                arguments: json!({"cmd": "ls"}),
            },
            ToolCall {
                id: "c2".into(),
                name: "exec_command".into(),
                arguments: json!({}),
            },
        ];
        let expected = vec![
            Message::system("be brief"),
            Message::system("rules"),
            Message::user("hi"),
            Message::user("a\n\nb"),
            assistant,
            Message::tool_result("c1", "a.txt"),
            Message::tool_result("c2", "b.txt"),
        ];
        assert_eq!(request.messages, expected);
        let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["exec_command"]);
        let plain = json!({"model": "m", "input": "just text"});
        let plain = Provider::OpenAiResponses.parse_request(&plain).unwrap();
        assert_eq!(plain.request.messages, vec![Message::user("just text")]);
    }

    #[test]
    fn a_namespaces_tools_go_by_flat_names_and_are_called_by_namespace() {
        // Goal: a namespace's functions (Codex offers each MCP server so) join the tool list as
        // `NAMESPACE__NAME`, an earlier call with a namespace reads back flat, and an answer's
        // call of a flat name goes out as the namespace and the tool's own name.
        let body = json!({
            "model": "m",
            "input": [
                {"type": "message", "role": "user", "content": "close T-1"},
                {"type": "function_call", "call_id": "c1", "namespace": "mcp__tickets",
                 "name": "assign_ticket", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ],
            "tools": [
                {"type": "function", "name": "exec_command", "parameters": {}},
                {"type": "namespace", "name": "mcp__tickets", "description": "Tickets.",
                 "tools": [{"type": "function", "name": "close_ticket", "parameters": {}}]},
                {"type": "namespace", "name": "mcp__wiki__",
                 "tools": [{"type": "function", "name": "read", "parameters": {}}]},
            ],
        });
        let served = Provider::OpenAiResponses.parse_request(&body).unwrap();
        let names: Vec<&str> = served
            .request
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "exec_command",
                "mcp__tickets__close_ticket",
                "mcp__wiki__read"
            ]
        );
        assert_eq!(
            served.request.messages[1].tool_calls[0].name,
            "mcp__tickets__assign_ticket"
        );
        let mut sent = answer("", "tool_use");
        sent.tool_calls[0].name = "mcp__tickets__close_ticket".into();
        let json = Provider::OpenAiResponses.answer_body(&served, &sent, "resp_n", 0);
        let json: Value = serde_json::from_str(&json.body).unwrap();
        let call = &json["output"][0];
        assert_eq!(
            (&call["namespace"], &call["name"]),
            (&json!("mcp__tickets"), &json!("close_ticket"))
        );
    }

    #[test]
    fn bad_requests_name_what_was_expected_where() {
        // Goal: a wrong shape is a Shape error at its place, never a panic.
        let cases = [
            (json!({"model": "m"}), "a field \"input\" at the request"),
            (json!({"model": "m", "input": 3}), "an array at input"),
            (
                json!({"model": "m", "input": [{"type": "message", "role": "tool", "content": ""}]}),
                "\"user\", \"assistant\", \"system\" or \"developer\" at input[0].role",
            ),
            (
                json!({"model": "m", "input": [{"type": "function_call", "call_id": "c",
                                                "name": "f", "arguments": "{oops"}]}),
                "a JSON string of tool arguments at input[0].arguments",
            ),
        ];
        for (body, expected) in cases {
            let error = Provider::OpenAiResponses.parse_request(&body).unwrap_err();
            assert_eq!(error.expected, expected, "{body}");
        }
    }

    fn events(body: &str) -> Vec<Value> {
        body.lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect()
    }

    #[test]
    fn a_streamed_answer_is_the_whole_event_sequence_and_reads_back() {
        // Goal: the stream is created, in_progress, per item added/content/done, completed
        // with usage; sequence numbers count up; the `event:` line names each event; the
        // final response and the JSON answer both read back, through the calling side's
        // parser, as the answer that was sent.
        let sent = answer("Listing.", "tool_use");
        let served = |stream| ServedRequest {
            request: ChatRequest::new("m", vec![Message::user("go")]),
            stream,
            include_usage: false,
            namespaced: Default::default(),
        };
        let body = Provider::OpenAiResponses.answer_body(&served(true), &sent, "resp_s_1", 9);
        assert_eq!(body.content_type, "text/event-stream");
        let streamed = events(&body.body);
        let kinds: Vec<&str> = streamed
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let named: Vec<&str> = body
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("event: "))
            .collect();
        assert_eq!(named, kinds);
        for (index, event) in streamed.iter().enumerate() {
            assert_eq!(event["sequence_number"], index);
        }
        assert_eq!(streamed[0]["response"]["status"], "in_progress");
        assert_eq!(streamed[4]["delta"], "Listing.");
        assert_eq!(streamed[9]["delta"], r#"{"cmd":"ls"}"#);
        assert_eq!(streamed[11]["item"]["id"], "fc_s_1_0");
        let completed = &streamed[12]["response"];
        assert_eq!(completed["usage"]["total_tokens"], 10);
        let expected = WireAnswer {
            model: Some("m".into()),
            text: sent.text.clone(),
            tool_calls: sent.tool_calls.clone(),
            stop_reason: "tool_use".into(),
            usage: Some(sent.usage),
            thinking: None,
        };
        assert_eq!(parse_response(completed).unwrap(), expected);
        let json = Provider::OpenAiResponses.answer_body(&served(false), &sent, "resp_s_1", 9);
        assert_eq!(json.content_type, "application/json");
        let json: Value = serde_json::from_str(&json.body).unwrap();
        assert_eq!(&json, completed);
        assert_eq!(parse_response(&json).unwrap(), expected);
    }

    #[test]
    fn an_answer_cut_at_the_token_limit_is_incomplete() {
        // Goal: a max_tokens stop is status incomplete (reason max_output_tokens), ends the
        // stream with response.incomplete, and reads back as max_tokens.
        let sent = answer("", "max_tokens");
        let served = ServedRequest {
            request: ChatRequest::new("m", vec![Message::user("go")]),
            stream: true,
            include_usage: false,
            namespaced: Default::default(),
        };
        let body = Provider::OpenAiResponses.answer_body(&served, &sent, "resp_2", 0);
        let streamed = events(&body.body);
        let last = streamed.last().unwrap();
        assert_eq!(last["type"], "response.incomplete");
        assert_eq!(
            last["response"]["incomplete_details"]["reason"],
            "max_output_tokens"
        );
        assert_eq!(
            parse_response(&last["response"]).unwrap().stop_reason,
            "max_tokens"
        );
        assert_eq!(
            Provider::OpenAiResponses.error_body(429, "slow down")["error"]["type"],
            "rate_limit_exceeded"
        );
    }
}
