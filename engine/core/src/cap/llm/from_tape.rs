//! A fixture from a tape: the model calls of any run, as entries that answer the same
//! conversations the same way (`simtape fixtures from-tape`), so a run becomes a regression
//! test in one command.
//!
//! The request records carry each call's conversation as it changed since the previous call
//! (`docs/llm-fixtures.md`, "What the tape shows"), so the conversation is rebuilt call by
//! call; the reply records carry the answer whole. Each answered call becomes an entry in the
//! shape record mode writes (its match text as an escaped glob, the tools offered, the scope),
//! with its observed virtual latency. A call no fixture entry answered (an error a
//! `[[faults.llm]]` rule injected, an unmatched call) is left out: the scenario's own fault
//! rules inject it again.
//!
//! [`answered_calls`] is the walk itself, and [`fixture_from_tape_matching`] the same fixture
//! under a match the caller chooses (`simtape record` matches each call's last message).

use std::io::Read;

use serde_json::{json, Map, Value};

use super::fixture::HttpFailure;
use super::request::ChatResponse;
use super::written::{call_matcher, entry_matching, CallMatch};
pub use crate::tape::FromTapeError;
use crate::tape::{payload_to_json, CallShape, RecordKind, TapeReader};

/// The fixture made from a tape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TapeFixture {
    /// The fixture file's text (JSONL, `docs/llm-fixtures.md`).
    pub text: String,
    /// The entries written: one per answered call.
    pub entries: usize,
    /// The calls left out: injected faults and unmatched calls.
    pub skipped: usize,
}

/// What answered a call: the response, or the provider's HTTP error.
type CallOutcome = Result<ChatResponse, HttpFailure>;

/// One model call of a tape that a fixture entry (or a recording provider) answered, with
/// its conversation as the records rebuild it.
#[derive(Debug)]
pub struct AnsweredCall<'a> {
    /// Each message of the request as (role, content), system prompts included.
    pub messages: &'a [(String, String)],
    /// The names of the tools offered.
    pub tools: &'a [String],
    /// The request's scope.
    pub scope: Option<&'a str>,
    /// The digest of the whole request.
    pub digest: &'a str,
    /// The answer, or the provider's HTTP error.
    pub outcome: Result<ChatResponse, HttpFailure>,
    /// The call's virtual latency, to the millisecond.
    pub latency_ms: u64,
}

/// A call whose request was read, waiting for its reply.
struct Pending {
    scope: Option<String>,
    t_ns: u64,
}

/// The conversation and tool list as the records so far leave them.
#[derive(Default)]
struct Conversation {
    /// Each message as (role, content).
    messages: Vec<(String, String)>,
    tools: Vec<String>,
}

/// Reads the model calls of the tape `reader` reads (the actor named `llm`) into a fixture;
/// `origin` names the tape in the fixture's first comment line.
pub fn fixture_from_tape<R: Read>(
    reader: TapeReader<R>,
    origin: &str,
) -> Result<TapeFixture, FromTapeError> {
    let seed = reader.header().seed;
    let comment = format!("Made by `simtape fixtures from-tape` from {origin} (seed {seed}).");
    fixture_from_tape_matching(reader, &comment, |call| {
        // As `ChatRequest::match_text`: every message but the system prompts, one per line.
        let texts: Vec<&str> = call
            .messages
            .iter()
            .filter(|(role, _)| role != "system")
            .map(|(_, content)| content.as_str())
            .collect();
        let tools: Vec<&str> = call.tools.iter().map(String::as_str).collect();
        call_matcher(&CallMatch {
            match_text: &texts.join("\n"),
            tools: &tools,
            scope: call.scope,
        })
    })
}

/// Reads the answered model calls of the tape `reader` reads into a fixture whose entries
/// match what `matcher` says of each call (a fixture `match` object); each entry keeps the
/// call's answer, request digest, scope and virtual latency. `comment` is the fixture's
/// first line, after `# `.
pub fn fixture_from_tape_matching<R: Read>(
    reader: TapeReader<R>,
    comment: &str,
    mut matcher: impl FnMut(&AnsweredCall<'_>) -> Map<String, Value>,
) -> Result<TapeFixture, FromTapeError> {
    let mut lines = vec![
        format!("# {comment}"),
        json!({"simtape_llm": 1}).to_string(),
    ];
    let mut entries = 0;
    let skipped = answered_calls(reader, |call| {
        let mut entry = entry_matching(matcher(&call), call.scope, call.digest, &call.outcome);
        // The call's virtual latency: a fixed cost, no per-token part.
        entry["latency"] = json!({"base_ms": call.latency_ms, "per_output_token_us": 0});
        lines.push(entry.to_string());
        entries += 1;
    })?;
    let mut text = lines.join("\n");
    text.push('\n');
    Ok(TapeFixture {
        text,
        entries,
        skipped,
    })
}

/// Hands `visit` each answered model call of the tape `reader` reads (the actor named
/// `llm`), in the order of the run; returns how many calls no entry answered (injected
/// faults, unmatched calls), which are not visited.
pub fn answered_calls<R: Read>(
    mut reader: TapeReader<R>,
    mut visit: impl FnMut(AnsweredCall<'_>),
) -> Result<usize, FromTapeError> {
    let llm = reader
        .header()
        .actors
        .iter()
        .position(|name| name == crate::capabilities::LLM_ACTOR);
    let (mut conversation, mut pending) = (Conversation::default(), None);
    let mut skipped = 0;
    while let Some(record) = reader.next_record()? {
        if llm != Some(usize::from(record.actor)) {
            continue;
        }
        let bad = |detail: String| FromTapeError::Record {
            index: record.index,
            detail,
        };
        let payload = payload_to_json(&reader.resolve(&record)?).map_err(|e| bad(e.to_string()))?;
        let body = payload.get(1).ok_or_else(|| bad("no body".into()))?;
        match record.kind {
            RecordKind::Request => {
                let advanced = conversation.advance(body, record.t_ns);
                pending = Some(advanced.map_err(|shape| bad(shape.to_string()))?);
            }
            RecordKind::Reply => {
                let call = pending
                    .take()
                    .ok_or_else(|| bad("a reply without its request".into()))?;
                let answer = reply(body).map_err(|shape| bad(shape.to_string()))?;
                let Some((digest, outcome)) = answer else {
                    skipped += 1;
                    continue;
                };
                visit(AnsweredCall {
                    messages: &conversation.messages,
                    tools: &conversation.tools,
                    scope: call.scope.as_deref(),
                    digest: &digest,
                    outcome,
                    latency_ms: (record.t_ns.saturating_sub(call.t_ns) + 500_000) / 1_000_000,
                });
            }
            _ => {}
        }
    }
    Ok(skipped)
}

impl Conversation {
    /// Applies a request record `[model, scope, messages, kept, new, tools_digest, tools]`.
    fn advance(&mut self, body: &Value, t_ns: u64) -> Result<Pending, CallShape> {
        let field = |index: usize| {
            body.get(index)
                .ok_or_else(|| CallShape::missing(format!("request field {index}")))
        };
        let kept = field(3)?
            .as_u64()
            .ok_or_else(|| CallShape::invalid("`kept`", "not a count"))?
            as usize;
        if kept > self.messages.len() {
            let had = self.messages.len();
            return Err(CallShape::invalid(
                "`kept`",
                format!("keeps {kept} of {had} messages"),
            ));
        }
        self.messages.truncate(kept);
        let new = field(4)?
            .as_array()
            .ok_or_else(|| CallShape::invalid("`new`", "not a list"))?;
        for message in new {
            let part = |i: usize| message.get(i).and_then(Value::as_str).map(str::to_string);
            let role = part(0).ok_or_else(|| CallShape::missing("message role"))?;
            let content = part(1).ok_or_else(|| CallShape::missing("message content"))?;
            self.messages.push((role, content));
        }
        if let Some(tools) = field(6)?.as_array() {
            self.tools = tools
                .iter()
                .filter_map(|tool| tool.get(0).and_then(Value::as_str).map(str::to_string))
                .collect();
        }
        Ok(Pending {
            scope: field(1)?.as_str().map(str::to_string),
            t_ns,
        })
    }
}

/// Returns the digest and outcome of a reply `[digest, entry_line, alternative, usage,
/// result]`, or `None` when no fixture entry answered it.
fn reply(body: &Value) -> Result<Option<(String, CallOutcome)>, CallShape> {
    let field = |index: usize| {
        body.get(index)
            .ok_or_else(|| CallShape::missing(format!("reply field {index}")))
    };
    if field(1)?.is_null() {
        return Ok(None);
    }
    let digest = field(0)?
        .as_str()
        .ok_or_else(|| CallShape::invalid("the request digest", "not text"))?;
    let result = field(4)?;
    let outcome = if let Some(answer) = result.get("Ok") {
        let response: ChatResponse = serde_json::from_value(answer.clone())
            .map_err(|e| CallShape::invalid("the answer", e))?;
        Ok(response)
    } else if let Some(http) = result.get("Err").and_then(|e| e.get("Http")) {
        let part = |i: usize| http.get(i).cloned().unwrap_or(Value::Null);
        Err(HttpFailure {
            status: part(0)
                .as_u64()
                .and_then(|s| u16::try_from(s).ok())
                .ok_or_else(|| CallShape::invalid("the HTTP error", "no status"))?,
            message: part(1).as_str().unwrap_or_default().to_string(),
            retry_after_ms: part(2).as_u64(),
        })
    } else {
        return Ok(None);
    };
    Ok(Some((digest.to_string(), outcome)))
}
