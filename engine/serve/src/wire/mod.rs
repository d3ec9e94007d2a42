//! The providers' wire formats, both sides: record mode's calling side (a [`ChatRequest`]
//! becomes the JSON body a real provider expects, and the provider's JSON answer becomes a
//! [`WireAnswer`]), and `simtape serve`'s serving side (an agent's request becomes a
//! [`ServedRequest`], and an answer becomes the provider's JSON or event stream).
//!
//! - `openai_chat` — OpenAI Chat Completions (`POST {base}/chat/completions`).
//! - `openai_responses` — OpenAI Responses (`POST {base}/responses`).
//! - `anthropic` — Anthropic Messages (`POST {base}/v1/messages`).
//! - `gemini` — Google's Gemini API (`POST {base}/v1beta/models/{model}:generateContent` and
//!   `:streamGenerateContent`); served only (record mode does not call it).
//!
//! The shapes follow what the official SDKs send and accept. Record mode speaks only the
//! non-streaming form: it stores whole answers, and streaming would only change how the same
//! answer arrives; the serving side streams when the agent asks. A body that is not the expected shape is a [`Shape`]
//! error naming what was expected where, and what was found; nothing here panics on input.

mod anthropic;
mod gemini;
mod openai_chat;
mod openai_responses;

use std::collections::BTreeMap;

use serde_json::Value;

use simtape::cap::llm::fixture::json_kind;
use simtape::cap::llm::{
    ChatRequest, ChatResponse, Message, Provider, Role, Thinking, ToolCall, Usage,
};

/// The `anthropic-version` header sent: the Messages API's stable version.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A provider's wire format, both sides: what record mode sends and reads back, and what
/// `simtape serve` reads from an agent and answers. The core names the provider
/// ([`Provider`]); the shapes are the gateway's.
pub trait Wire: Copy {
    /// Returns the URL a call is posted to: the base URL plus the path the SDK appends.
    fn endpoint(self, base_url: &str) -> String;
    /// Returns the authentication headers for `api_key` (none when the key is empty).
    fn auth_headers(self, api_key: &str) -> Vec<(&'static str, String)>;
    /// Returns the JSON body of `request` in this wire format, asking for `model`.
    fn request_body(self, request: &ChatRequest, model: &str, max_tokens: u64) -> Value;
    /// Reads a successful (2xx) response body.
    fn parse_response(self, body: &Value) -> Result<WireAnswer, Shape>;
    /// Reads an agent's request body in this wire format.
    fn parse_request(self, body: &Value) -> Result<ServedRequest, Shape>;
    /// Renders `answer` as the provider sends it: JSON, or the whole event stream.
    fn answer_body(
        self,
        served: &ServedRequest,
        answer: &ChatResponse,
        id: &str,
        created_unix_s: i64,
    ) -> ServedBody;
    /// Returns the server-sent events of `answer` as the provider streams them.
    fn answer_events(
        self,
        served: &ServedRequest,
        answer: &ChatResponse,
        id: &str,
        created_unix_s: i64,
    ) -> Vec<String>;
    /// Returns the provider's error body for `status` with `message`.
    fn error_body(self, status: u16, message: &str) -> Value;
    /// Marks an error answer with when to retry, as the provider says it: returns the headers
    /// to send, and adds to `body` what goes there (Gemini's `RetryInfo` detail).
    fn retry_after(self, body: &mut Value, retry_after_ms: u64) -> Vec<(String, String)>;
}

impl Wire for Provider {
    /// Returns the URL a call is posted to: the base URL plus the path the SDK appends.
    ///
    /// ```
    /// use simtape::cap::llm::Provider;
    /// use simtape_serve::wire::Wire;
    /// assert_eq!(Provider::OpenAiChat.endpoint("http://127.0.0.1:4010/v1/"),
    ///            "http://127.0.0.1:4010/v1/chat/completions");
    /// assert_eq!(Provider::AnthropicMessages.endpoint("http://127.0.0.1:4010"),
    ///            "http://127.0.0.1:4010/v1/messages");
    /// ```
    ///
    /// Gemini's URL goes on with the model and the method (`/{model}:generateContent`); this is
    /// the collection they follow.
    fn endpoint(self, base_url: &str) -> String {
        let base = base_url.trim_end_matches('/');
        match self {
            Provider::OpenAiChat => format!("{base}/chat/completions"),
            Provider::OpenAiResponses => format!("{base}/responses"),
            Provider::AnthropicMessages => format!("{base}/v1/messages"),
            Provider::GeminiGenerateContent => format!("{base}/v1beta/models"),
        }
    }

    /// Returns the authentication headers for `api_key` (none when the key is empty, as
    /// for a local fake provider).
    fn auth_headers(self, api_key: &str) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if self == Provider::AnthropicMessages {
            headers.push(("anthropic-version", ANTHROPIC_VERSION.to_owned()));
        }
        if !api_key.is_empty() {
            match self {
                Provider::OpenAiChat | Provider::OpenAiResponses => {
                    headers.push(("authorization", format!("Bearer {api_key}")));
                }
                Provider::AnthropicMessages => headers.push(("x-api-key", api_key.to_owned())),
                Provider::GeminiGenerateContent => {
                    headers.push(("x-goog-api-key", api_key.to_owned()))
                }
            }
        }
        headers
    }

    /// Returns the JSON body of `request` in this wire format, asking for `model`.
    /// `max_tokens` is sent only where the format requires it (Anthropic); Gemini names the
    /// model in the URL, not the body.
    fn request_body(self, request: &ChatRequest, model: &str, max_tokens: u64) -> Value {
        match self {
            Provider::OpenAiChat => openai_chat::request_body(request, model),
            Provider::OpenAiResponses => openai_responses::request_body(request, model),
            Provider::AnthropicMessages => anthropic::request_body(request, model, max_tokens),
            Provider::GeminiGenerateContent => gemini::request_body(request),
        }
    }

    /// Reads a successful (2xx) response body.
    fn parse_response(self, body: &Value) -> Result<WireAnswer, Shape> {
        match self {
            Provider::OpenAiChat => openai_chat::parse_response(body),
            Provider::OpenAiResponses => openai_responses::parse_response(body),
            Provider::AnthropicMessages => anthropic::parse_response(body),
            Provider::GeminiGenerateContent => gemini::parse_response(body),
        }
    }

    /// Reads an agent's request body in this wire format (the serving side of the format;
    /// `request_body` is the calling side).
    fn parse_request(self, body: &Value) -> Result<ServedRequest, Shape> {
        let mut namespaced = BTreeMap::new();
        let request = match self {
            Provider::OpenAiChat => openai_chat::parse_request(body)?,
            Provider::OpenAiResponses => openai_responses::parse_request(body, &mut namespaced)?,
            Provider::AnthropicMessages => anthropic::parse_request(body)?,
            Provider::GeminiGenerateContent => gemini::parse_request(body)?,
        };
        let stream = optional(body, "stream").and_then(Value::as_bool) == Some(true);
        let include_usage = optional(body, "stream_options")
            .and_then(|options| options.get("include_usage"))
            .and_then(Value::as_bool)
            == Some(true);
        Ok(ServedRequest {
            request,
            stream,
            include_usage,
            namespaced,
        })
    }

    /// Renders `answer` as the provider sends it: JSON, or (for `served.stream`) the whole
    /// event stream. `id` names the answer; `created_unix_s` is the simulated wall clock.
    fn answer_body(
        self,
        served: &ServedRequest,
        answer: &ChatResponse,
        id: &str,
        created_unix_s: i64,
    ) -> ServedBody {
        if !served.stream {
            let body = match self {
                Provider::OpenAiChat => openai_chat::response_body(answer, id, created_unix_s),
                Provider::OpenAiResponses => {
                    openai_responses::response_body(served, answer, id, created_unix_s)
                }
                Provider::AnthropicMessages => anthropic::response_body(answer, id),
                Provider::GeminiGenerateContent => gemini::response_body(answer, id),
            };
            return ServedBody {
                content_type: "application/json",
                body: body.to_string(),
            };
        }
        ServedBody {
            content_type: "text/event-stream",
            body: self
                .answer_events(served, answer, id, created_unix_s)
                .concat(),
        }
    }

    /// Returns the server-sent events of `answer` as the provider streams them, each whole
    /// (its lines and the blank line after them); [`Wire::answer_body`] joins them. A
    /// stream fault sends the first few (at least two events make every stream: the final one
    /// is `message_stop`, `[DONE]`, `response.completed` or Gemini's chunk with the
    /// `finishReason`).
    fn answer_events(
        self,
        served: &ServedRequest,
        answer: &ChatResponse,
        id: &str,
        created_unix_s: i64,
    ) -> Vec<String> {
        match self {
            Provider::OpenAiChat => {
                let chunks =
                    openai_chat::stream_chunks(answer, id, created_unix_s, served.include_usage);
                let mut events = data_events(&chunks);
                events.push("data: [DONE]\n\n".to_string());
                events
            }
            Provider::OpenAiResponses => named_events(openai_responses::stream_events(
                served,
                answer,
                id,
                created_unix_s,
            )),
            Provider::AnthropicMessages => named_events(anthropic::stream_events(answer, id)),
            Provider::GeminiGenerateContent => data_events(&gemini::stream_events(answer, id)),
        }
    }

    /// Returns the provider's error body for `status` with `message` (both OpenAI APIs
    /// share one error shape).
    fn error_body(self, status: u16, message: &str) -> Value {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => {
                openai_chat::error_body(status, message)
            }
            Provider::AnthropicMessages => anthropic::error_body(status, message),
            Provider::GeminiGenerateContent => gemini::error_body(status, message),
        }
    }

    /// OpenAI and Anthropic send `retry-after` in whole seconds (rounded up) and
    /// `retry-after-ms`; Google sends no header but a `RetryInfo` detail in the body.
    fn retry_after(self, body: &mut Value, retry_after_ms: u64) -> Vec<(String, String)> {
        match self {
            Provider::GeminiGenerateContent => {
                gemini::add_retry_info(body, retry_after_ms);
                Vec::new()
            }
            _ => vec![
                (
                    "retry-after".into(),
                    retry_after_ms.div_ceil(1000).to_string(),
                ),
                ("retry-after-ms".into(), retry_after_ms.to_string()),
            ],
        }
    }
}

/// An agent's model request as the serving side reads it (`simtape serve`).
#[derive(Debug, Clone)]
pub struct ServedRequest {
    /// The conversation, in our vocabulary.
    pub request: ChatRequest,
    /// Whether the agent asked for a server-sent event stream.
    pub stream: bool,
    /// Whether a streamed answer ends with a usage chunk (OpenAI `stream_options`).
    pub include_usage: bool,
    /// Tools the agent offered inside a namespace (Responses `{"type": "namespace"}`, as Codex
    /// offers each MCP server's tools), by the flat name the conversation knows them by, with
    /// their namespace and own name: a call of one goes back as the two fields.
    pub namespaced: BTreeMap<String, (String, String)>,
}

/// An answer rendered for the wire: its content type and its whole body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedBody {
    /// `application/json` or `text/event-stream`.
    pub content_type: &'static str,
    /// The body: one JSON document, or every server-sent event of the stream.
    pub body: String,
}

/// Returns server-sent events of data alone, one per JSON object.
fn data_events(chunks: &[Value]) -> Vec<String> {
    chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect()
}

/// Returns server-sent events that name their type (`event:`) beside their data.
fn named_events(events: Vec<(&'static str, Value)>) -> Vec<String> {
    events
        .iter()
        .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
        .collect()
}

/// A provider's answer, in our vocabulary.
#[derive(Debug, Clone, PartialEq)]
pub struct WireAnswer {
    /// The model the provider says answered, if it says.
    pub model: Option<String>,
    /// The text (empty when it only calls tools).
    pub text: String,
    /// The tool calls, with the provider's ids and decoded JSON arguments.
    pub tool_calls: Vec<ToolCall>,
    /// The stop reason in Anthropic's vocabulary (`end_turn`, `tool_use`, `max_tokens`, …).
    pub stop_reason: String,
    /// The token counts, if the provider gave them.
    pub usage: Option<Usage>,
    /// The thinking block the answer started with, if the provider sent one.
    pub thinking: Option<Thinking>,
}

/// A response body that is not the shape its wire format promises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// What was expected, and where (`a string at choices[0].message.content`).
    pub expected: String,
    /// What was there instead.
    pub found: String,
}

impl Shape {
    fn new(expected: impl Into<String>, found: impl Into<String>) -> Shape {
        Shape {
            expected: expected.into(),
            found: found.into(),
        }
    }
}

/// Returns the message of a provider's error body: `error.message` in both OpenAI's and
/// Anthropic's shape, else the first 240 characters of the body as sent.
pub fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str);
    match message {
        Some(message) => message.to_owned(),
        None => body.chars().take(240).collect(),
    }
}

/// Returns field `key` of the object `value` found at `path`.
fn field<'a>(value: &'a Value, path: &str, key: &str) -> Result<&'a Value, Shape> {
    let object = value
        .as_object()
        .ok_or_else(|| Shape::new(format!("an object at {path}"), json_kind(value)))?;
    object
        .get(key)
        .ok_or_else(|| Shape::new(format!("a field {key:?} at {path}"), "no such field"))
}

/// Returns field `key` of `value` unless it is missing or null.
fn optional<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.get(key).filter(|v| !v.is_null())
}

fn string<'a>(value: &'a Value, path: &str) -> Result<&'a str, Shape> {
    value
        .as_str()
        .ok_or_else(|| Shape::new(format!("a string at {path}"), json_kind(value)))
}

fn array<'a>(value: &'a Value, path: &str) -> Result<&'a [Value], Shape> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| Shape::new(format!("an array at {path}"), json_kind(value)))
}

fn count(value: &Value, path: &str) -> Result<u64, Shape> {
    value
        .as_u64()
        .ok_or_else(|| Shape::new(format!("a token count at {path}"), json_kind(value)))
}

/// Returns an optional string field, failing only when it is present and not a string.
fn optional_string(value: &Value, path: &str, key: &str) -> Result<Option<String>, Shape> {
    optional(value, key)
        .map(|v| string(v, &format!("{path}.{key}")).map(str::to_owned))
        .transpose()
}

/// Decodes tool-call arguments sent as a JSON string (OpenAI's form); empty means `{}`.
fn arguments(text: &str, path: &str) -> Result<Value, Shape> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text).map_err(|e| {
        Shape::new(
            format!("a JSON string of tool arguments at {path}"),
            format!("invalid JSON ({e})"),
        )
    })
}

/// Reads `usage.{input_key, output_key}` when a `usage` object is present.
fn usage(body: &Value, input_key: &str, output_key: &str) -> Result<Option<Usage>, Shape> {
    let Some(usage) = optional(body, "usage") else {
        return Ok(None);
    };
    Ok(Some(Usage {
        input_tokens: count(
            field(usage, "usage", input_key)?,
            &format!("usage.{input_key}"),
        )?,
        output_tokens: count(
            field(usage, "usage", output_key)?,
            &format!("usage.{output_key}"),
        )?,
    }))
}

/// Returns a tool's JSON schema, or the empty object schema for a tool defined by name only
/// (providers refuse a null schema).
fn schema(parameters: &Value) -> Value {
    if parameters.is_null() {
        serde_json::json!({"type": "object", "properties": {}})
    } else {
        parameters.clone()
    }
}

/// Returns the system messages' text joined by blank lines, for formats that send it apart
/// from the conversation; `None` when there is none.
fn system_text(request: &ChatRequest) -> Option<String> {
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    (!system.is_empty()).then(|| system.join("\n\n"))
}

/// Returns the conversation but its system text as turns `{"role": ROLE, key: ITEMS}`, each
/// message's role and items (blocks, parts) given by `turn`. A message of the last turn's role
/// joins that turn, because formats whose roles alternate (Anthropic's, Gemini's) want every
/// result of a turn in the one message after it; a turn of no items is left out.
fn alternating_turns(
    request: &ChatRequest,
    key: &str,
    turn: impl Fn(&Message) -> (&'static str, Vec<Value>),
) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in request.messages.iter().filter(|m| m.role != Role::System) {
        let (role, mut items) = turn(message);
        match turns.last_mut() {
            Some((last_role, last_items)) if *last_role == role => last_items.append(&mut items),
            _ if items.is_empty() => {}
            _ => turns.push((role, items)),
        }
    }
    turns
        .into_iter()
        .map(|(role, items)| serde_json::json!({"role": role, key: items}))
        .collect()
}

/// Returns the offered tools as `{"name", "description", schema_key: SCHEMA}` objects.
fn declarations(request: &ChatRequest, schema_key: &str) -> Vec<Value> {
    request
        .tools
        .iter()
        .map(|tool| {
            serde_json::json!({
                "name": tool.name,
                "description": tool.description,
                schema_key: schema(&tool.parameters),
            })
        })
        .collect()
}

/// Returns `end_turn` or `tool_use`, for formats whose answer does not say.
fn implied_stop(tool_calls: &[ToolCall]) -> String {
    if tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use simtape::cap::llm::ToolDefinition;

    /// Every wire format.
    const ALL: [Provider; 4] = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::AnthropicMessages,
        Provider::GeminiGenerateContent,
    ];

    #[test]
    fn malformed_answers_name_what_was_expected_and_found() {
        // Goal: a wrong-shaped provider answer is a Shape error, never a panic.
        let wrong_type = serde_json::json!({"choices": [{"message": {"content": 3}}]});
        assert_eq!(
            Provider::OpenAiChat
                .parse_response(&wrong_type)
                .unwrap_err(),
            Shape::new("a string at choices[0].message.content", "the number 3")
        );
        let bad_arguments = serde_json::json!({"output": [
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{oops"}
        ]});
        let error = Provider::OpenAiResponses
            .parse_response(&bad_arguments)
            .unwrap_err();
        assert_eq!(
            error.expected,
            "a JSON string of tool arguments at output[0].arguments"
        );
        let not_an_object = serde_json::json!([1, 2]);
        for provider in ALL {
            assert_eq!(
                provider.parse_response(&not_an_object).unwrap_err().found,
                "an array"
            );
        }
    }

    #[test]
    fn anthropic_merges_tool_results_into_one_user_turn() {
        // Goal: two tool results after one assistant turn travel in one user message.
        let mut assistant = Message::assistant("");
        assistant.tool_calls = vec![
            ToolCall {
                id: "a".into(),
                name: "f".into(),
                arguments: serde_json::json!({}),
            },
            ToolCall {
                id: "b".into(),
                name: "f".into(),
                arguments: serde_json::json!({}),
            },
        ];
        let request = ChatRequest::new(
            "m",
            vec![
                Message::system("rules"),
                Message::user("go"),
                assistant,
                Message::tool_result("a", "1"),
                Message::tool_result("b", "2"),
            ],
        );
        let body = Provider::AnthropicMessages.request_body(&request, "m", 64);
        assert_eq!(body["system"], "rules");
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(body["messages"][2]["content"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn error_message_reads_both_error_shapes() {
        // Goal: OpenAI's and Anthropic's error bodies both yield their message.
        assert_eq!(
            error_message(r#"{"error":{"message":"slow down"}}"#),
            "slow down"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#
            ),
            "busy"
        );
        assert_eq!(error_message("Bad Gateway"), "Bad Gateway");
    }

    fn conversation() -> ChatRequest {
        let mut assistant = Message::assistant("Reading it.");
        assistant.tool_calls = vec![ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "a.txt"}),
        }];
        ChatRequest::new(
            "m",
            vec![
                Message::system("rules"),
                Message::user("fix it"),
                assistant,
                Message::tool_result("call_1", "hello"),
            ],
        )
        .with_tools(vec![ToolDefinition {
            name: "read_file".into(),
            description: "Reads a file".into(),
            parameters: serde_json::json!({"type": "object"}),
        }])
    }

    /// The answer that reads the file in [`conversation`], with `thinking`.
    fn reading_answer(thinking: Option<Thinking>) -> ChatResponse {
        ChatResponse {
            model: "m".into(),
            text: "Reading it.".into(),
            tool_calls: conversation().messages[2].tool_calls.clone(),
            stop_reason: "tool_use".into(),
            usage: Usage {
                input_tokens: 7,
                output_tokens: 3,
            },
            thinking,
        }
    }

    /// The served form of [`conversation`].
    fn served(stream: bool, include_usage: bool) -> ServedRequest {
        ServedRequest {
            request: conversation(),
            stream,
            include_usage,
            namespaced: Default::default(),
        }
    }

    #[test]
    fn the_serving_side_reads_what_the_calling_side_writes() {
        // Goal: for every format, a request written by record mode's calling side reads
        // back, on the serving side, as the same conversation and tools.
        let request = conversation();
        for provider in ALL {
            let body = provider.request_body(&request, "m", 64);
            let served = provider.parse_request(&body).unwrap();
            assert_eq!(served.request.messages, request.messages, "{provider:?}");
            assert_eq!(served.request.tools, request.tools, "{provider:?}");
            assert!(!served.stream);
        }
    }

    #[test]
    fn a_streamed_answer_carries_the_whole_event_sequence() {
        // Goal: an Anthropic stream is message_start, a start/delta/stop per block (text,
        // then tool_use with its JSON in one input_json_delta), message_delta, message_stop;
        // a Chat Completions stream ends with the finish reason, usage and [DONE].
        let answer = reading_answer(None);
        let served = |stream| served(stream, true);
        let body = Provider::AnthropicMessages.answer_body(&served(true), &answer, "msg_1", 0);
        assert_eq!(body.content_type, "text/event-stream");
        let events: Vec<&str> = body
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("event: "))
            .collect();
        assert_eq!(
            events,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert!(body
            .body
            .contains(r#""partial_json":"{\"path\":\"a.txt\"}""#));
        let chat = Provider::OpenAiChat.answer_body(&served(true), &answer, "c1", 5);
        assert!(chat.body.ends_with("data: [DONE]\n\n"));
        assert!(chat.body.contains(r#""finish_reason":"tool_calls""#));
        assert!(chat.body.contains(r#""completion_tokens":3"#));
        let json = Provider::OpenAiChat.answer_body(&served(false), &answer, "c1", 5);
        let parsed = Provider::OpenAiChat
            .parse_response(&serde_json::from_str(&json.body).unwrap())
            .unwrap();
        assert_eq!(
            (parsed.text, parsed.tool_calls),
            (answer.text, answer.tool_calls)
        );
    }

    #[test]
    fn thinking_is_served_first_and_read_back_as_recorded() {
        // Goal: an answer with thinking streams a thinking block before its text (a
        // thinking_delta, then the signature in a signature_delta), the JSON form carries the
        // same block, and record mode reads it back with its signature.
        let answer = ChatResponse {
            model: "m".into(),
            text: "Done.".into(),
            tool_calls: Vec::new(),
            stop_reason: "end_turn".into(),
            usage: Usage::default(),
            thinking: Some(Thinking {
                text: "The test expects 4.".into(),
                signature: "sig-1".into(),
            }),
        };
        let served = |stream| served(stream, false);
        let stream = Provider::AnthropicMessages.answer_body(&served(true), &answer, "msg_1", 0);
        let data: Vec<Value> = stream
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect();
        assert_eq!(data[1]["content_block"]["type"], "thinking");
        assert_eq!(data[2]["delta"]["type"], "thinking_delta");
        assert_eq!(data[2]["delta"]["thinking"], "The test expects 4.");
        assert_eq!(data[3]["delta"]["type"], "signature_delta");
        assert_eq!(data[3]["delta"]["signature"], "sig-1");
        assert_eq!(data[4]["type"], "content_block_stop");
        assert_eq!(data[5]["content_block"]["type"], "text");
        assert_eq!(data[5]["index"], 1);
        let json = Provider::AnthropicMessages.answer_body(&served(false), &answer, "msg_1", 0);
        let json: Value = serde_json::from_str(&json.body).unwrap();
        assert_eq!(json["content"][0]["type"], "thinking");
        let parsed = Provider::AnthropicMessages.parse_response(&json).unwrap();
        assert_eq!(parsed.thinking, answer.thinking);
        assert_eq!(parsed.text, "Done.");

        // Responses: a reasoning item with the text as its summary, streamed part by part
        // before the message; read back, the summary is the thinking (no signature is sent).
        let stream = Provider::OpenAiResponses.answer_body(&served(true), &answer, "resp_1", 0);
        let kinds: Vec<&str> = stream
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("event: "))
            .collect();
        assert_eq!(
            kinds[2..8],
            [
                "response.output_item.added",
                "response.reasoning_summary_part.added",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.done",
                "response.reasoning_summary_part.done",
                "response.output_item.done",
            ]
        );
        let json = Provider::OpenAiResponses.answer_body(&served(false), &answer, "resp_1", 0);
        let json: Value = serde_json::from_str(&json.body).unwrap();
        assert_eq!(json["output"][0]["type"], "reasoning");
        let parsed = Provider::OpenAiResponses.parse_response(&json).unwrap();
        assert_eq!(parsed.thinking.unwrap().text, "The test expects 4.");
        // Chat Completions has no field for it: the answer is the text alone.
        let chat = Provider::OpenAiChat.answer_body(&served(false), &answer, "c1", 0);
        assert!(!chat.body.contains("expects 4"), "{}", chat.body);
    }

    #[test]
    fn a_broken_stream_lacks_each_providers_final_event() {
        // Goal: every provider's stream ends in its final event, which a stream fault never
        // sends, even when asked for more events than the stream has.
        use simtape::cap::fault_rules::{StreamFault, StreamMode};
        let answer = ChatResponse {
            model: "m".into(),
            text: "Hi.".into(),
            tool_calls: Vec::new(),
            stop_reason: "end_turn".into(),
            usage: Usage::default(),
            thinking: None,
        };
        let served = served(true, false);
        let fault = StreamFault {
            mode: StreamMode::Cut,
            after_events: Some(1_000),
        };
        let mut rng = simtape::rng::RngStream::fork(0, "test");
        for (provider, last) in [
            (Provider::AnthropicMessages, "event: message_stop\n"),
            (Provider::OpenAiChat, "data: [DONE]\n"),
            (Provider::OpenAiResponses, "event: response.completed\n"),
            (Provider::GeminiGenerateContent, "data: {\"candidates\""),
        ] {
            let events = provider.answer_events(&served, &answer, "id", 0);
            assert!(events.last().unwrap().starts_with(last), "{provider:?}");
            let sent = fault.events_sent(events.len() as u64, &mut rng) as usize;
            assert_eq!(sent, events.len() - 1);
            // Gemini's last event is one more chunk, the only one with the finish reason.
            let final_mark = match provider {
                Provider::GeminiGenerateContent => "finishReason",
                _ => last.trim_end(),
            };
            assert!(events.last().unwrap().contains(final_mark), "{provider:?}");
            assert!(
                !events[..sent].concat().contains(final_mark),
                "{provider:?}"
            );
        }
    }

    #[test]
    fn gemini_answers_in_parts_and_reads_calls_back_by_name() {
        // Goal: a Gemini answer is a thought part, a text part and a functionCall part with
        // the call's id, `STOP` and the usage; a stream sends one part per chunk and the
        // finish reason last; a later request whose functionResponse has no id answers the
        // call of that name; errors are Google's shape, a retry delay a RetryInfo detail.
        let gemini = Provider::GeminiGenerateContent;
        let answer = ChatResponse {
            model: "gemini-2.5-flash".into(),
            ..reading_answer(Some(Thinking {
                text: "It needs the file.".into(),
                signature: "sig".into(),
            }))
        };
        let served = |stream| served(stream, false);
        let json = gemini.answer_body(&served(false), &answer, "r1", 0);
        let json: Value = serde_json::from_str(&json.body).unwrap();
        let candidate = &json["candidates"][0];
        assert_eq!(candidate["content"]["role"], "model");
        assert_eq!(
            candidate["content"]["parts"],
            serde_json::json!([
                {"text": "It needs the file.", "thought": true},
                {"text": "Reading it."},
                {"functionCall": {"id": "call_1", "name": "read_file", "args": {"path": "a.txt"}}},
            ])
        );
        assert_eq!(candidate["finishReason"], "STOP");
        assert_eq!(json["usageMetadata"]["totalTokenCount"], 10);
        let parsed = gemini.parse_response(&json).unwrap();
        assert_eq!(parsed.text, "Reading it.");
        assert_eq!(parsed.tool_calls, answer.tool_calls);
        assert_eq!(parsed.thinking.unwrap().text, "It needs the file.");

        let stream = gemini.answer_body(&served(true), &answer, "r1", 0);
        assert_eq!(stream.content_type, "text/event-stream");
        let chunks: Vec<Value> = stream
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect();
        assert_eq!(chunks.len(), 4, "three parts, then the finish");
        assert_eq!(
            chunks[1]["candidates"][0]["content"]["parts"][0]["text"],
            "Reading it."
        );
        assert!(chunks[..3]
            .iter()
            .all(|c| c["candidates"][0].get("finishReason").is_none()));
        assert_eq!(chunks[3]["candidates"][0]["finishReason"], "STOP");

        let long = ChatResponse {
            text: "Streams can break; this one may.".into(),
            thinking: None,
            tool_calls: Vec::new(),
            ..answer.clone()
        };
        let pieces: Vec<String> = gemini
            .answer_events(&served(true), &long, "r2", 0)
            .iter()
            .map(|event| {
                let chunk: Value = serde_json::from_str(&event["data: ".len()..]).unwrap();
                chunk["candidates"][0]["content"]["parts"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            pieces,
            ["Streams can break; ", "this one may.", ""],
            "text streams in pieces"
        );

        let request = serde_json::json!({
            "systemInstruction": {"parts": [{"text": "rules"}]},
            "contents": [
                {"role": "user", "parts": [{"text": "fix it"}]},
                {"role": "model", "parts": [
                    {"text": "thinking", "thought": true},
                    {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}},
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"output": "hello"}}},
                ]},
            ],
            "tools": [{"functionDeclarations": [
                {"name": "read_file", "parameters": {"type": "OBJECT"}},
            ]}, {"googleSearch": {}}],
        });
        let read = gemini.parse_request(&request).unwrap().request;
        assert_eq!(read.messages[2].tool_calls[0].id, "call_1_1");
        assert_eq!(read.messages[2].content, "", "thought parts stay out");
        assert_eq!(
            read.messages[3],
            Message::tool_result("call_1_1", "hello"),
            "an id-less result answers the pending call of its name"
        );
        assert_eq!(read.tools.len(), 1);
        let missing = serde_json::json!({"contents": [{"role": "robot", "parts": []}]});
        assert_eq!(
            gemini.parse_request(&missing).unwrap_err().expected,
            "\"user\" or \"model\" at contents[0].role"
        );

        let mut error = gemini.error_body(429, "slow down");
        assert_eq!(
            error,
            serde_json::json!({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}})
        );
        assert!(gemini.retry_after(&mut error, 1500).is_empty());
        assert_eq!(error["error"]["details"][0]["retryDelay"], "1.500s");
        assert_eq!(
            gemini.error_body(503, "busy")["error"]["status"],
            "UNAVAILABLE"
        );
        assert_eq!(
            gemini.error_body(500, "oops")["error"]["status"],
            "INTERNAL"
        );
        assert_eq!(error_message(&error.to_string()), "slow down");
    }
}
