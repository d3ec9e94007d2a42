//! Fixture entries written from answered calls: one per real call in record mode (the
//! gateway's recorder), one per answered call of a tape in `fixtures from-tape`. Both write
//! the same shape, so a fixture from either replays the same way.

use serde_json::{json, Map, Value};

use super::fixture::HttpFailure;
use super::latency::LatencyModel;
use super::request::{ChatRequest, ChatResponse};

/// Returns the header line of a written fixture: the format version and the latency model a
/// replay takes its virtual latency from.
pub fn fixture_header(latency: &LatencyModel) -> Value {
    json!({"simtape_llm": 1, "latency": latency})
}

/// Returns the fixture entry of one recorded call of `request`.
pub fn recorded_entry(
    request: &ChatRequest,
    request_digest: &str,
    outcome: &Result<ChatResponse, HttpFailure>,
) -> Value {
    let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    let call = CallMatch {
        match_text: &request.match_text(),
        tools: &tools,
        scope: request.scope.as_deref(),
    };
    fixture_entry(&call, request_digest, outcome)
}

/// What a fixture entry written for one call matches: the conversation's match text
/// ([`ChatRequest::match_text`]), the tool names offered, the scope.
#[derive(Debug, Clone, Copy)]
pub struct CallMatch<'a> {
    /// The conversation's match text.
    pub match_text: &'a str,
    /// The names of the tools offered.
    pub tools: &'a [&'a str],
    /// The request's scope.
    pub scope: Option<&'a str>,
}

/// Returns the fixture entry that answers `call` with `outcome`: record mode writes one per
/// real call, `fixtures from-tape` one per answered call of a tape.
pub fn fixture_entry(
    call: &CallMatch<'_>,
    request_digest: &str,
    outcome: &Result<ChatResponse, HttpFailure>,
) -> Value {
    entry_matching(call_matcher(call), call.scope, request_digest, outcome)
}

/// Returns the `match` that record mode and `fixtures from-tape` write for `call`.
pub(crate) fn call_matcher(call: &CallMatch<'_>) -> Map<String, Value> {
    // The match holds the whole conversation text (exactly, as an escaped glob) and the tool
    // names offered: content alone, never the call's position, so replay survives reordering.
    // Repeated identical requests become several `once` entries, used in recording order.
    let mut matcher = Map::new();
    matcher.insert(
        "text".into(),
        json!({"glob": glob::Pattern::escape(call.match_text)}),
    );
    if !call.tools.is_empty() {
        matcher.insert("tools".into(), call.tools.into());
    }
    matcher
}

/// Returns the fixture entry that answers the calls `matcher` (a fixture `match` object)
/// holds for with `outcome`: the answer written as [`fixture_entry`] writes it, under a match
/// the caller chose (`simtape record` loosens it to the last message).
pub(crate) fn entry_matching(
    matcher: Map<String, Value>,
    scope: Option<&str>,
    request_digest: &str,
    outcome: &Result<ChatResponse, HttpFailure>,
) -> Value {
    let mut entry = Map::new();
    entry.insert("_request_digest".into(), request_digest.into());
    entry.insert("match".into(), Value::Object(matcher));
    if let Some(scope) = scope {
        entry.insert("scope".into(), scope.into());
    }
    match outcome {
        Ok(response) => {
            let calls: Vec<Value> = response
                .tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                .collect();
            let mut answer = json!({
                "text": response.text,
                "tool_calls": calls,
                "stop_reason": response.stop_reason,
                "usage": {
                    "input_tokens": response.usage.input_tokens,
                    "output_tokens": response.usage.output_tokens,
                },
                "model": response.model,
            });
            if let Some(thinking) = &response.thinking {
                answer["thinking"] =
                    json!({"text": thinking.text, "signature": thinking.signature});
            }
            entry.insert("response".into(), answer);
        }
        Err(failure) => {
            let mut error = Map::new();
            error.insert("status".into(), failure.status.into());
            error.insert("message".into(), failure.message.as_str().into());
            if let Some(ms) = failure.retry_after_ms {
                error.insert("retry_after_ms".into(), ms.into());
            }
            entry.insert("error".into(), Value::Object(error));
        }
    }
    Value::Object(entry)
}
