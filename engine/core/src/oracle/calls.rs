//! Which call a record belongs to, in the user's words: "model call 2 (POST
//! /v1/responses), request", "MCP call 3 (tickets: tools/call comment_ticket), reply",
//! "process run 1 (git status --short)".
//!
//! Pass two reads every compared record up to the first divergence, so it counts the calls as
//! it goes ([`CallCounter::observe`]), in the tape's order, one count per kind:
//!
//! * **Model calls.** A tape of the gateway (`simtape serve`, an agent program's run) carries
//!   the agent's HTTP requests as `input` records (`{"Request": [id, method, path, body]}`):
//!   each `POST` to a model endpoint starts a model call, named by its method and path. The
//!   gateway answers each in a task it spawns as `request-<id>`, so the LLM actor's request
//!   and reply in that task belong to the same call. Without the gateway (the built-in agent,
//!   Rust pipelines) each `request` record of the `llm` actor starts one.
//! * **MCP calls.** A `POST /mcp/<server>` input, or a `request` record of an `mcp:<server>`
//!   actor outside such a request's task; named by server, method and tool.
//! * **Process runs.** A `request` record of the `process` actor, named by its command line.
//!
//! A `reply` belongs to the open request of the same actor and task (a task waits for its
//! call). Which actors and shapes mean what is the engine's own record vocabulary
//! (`docs/tape-format.md`); a record in another shape is simply not a call.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::tape::{payload_to_json, RawRecord, RecordKind};

/// Characters of a call's detail (a command line, a path) before it is cut with `…`.
const DETAIL_CHARS_MAX: usize = 80;

/// What kind of call a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallKind {
    /// A call of the model.
    Model,
    /// A call of an MCP server.
    Mcp,
    /// A run of a program through the process capability.
    Process,
}

impl CallKind {
    /// Returns how reports name one call of this kind: `model call`, `MCP call`,
    /// `process run`.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            CallKind::Model => "model call",
            CallKind::Mcp => "MCP call",
            CallKind::Process => "process run",
        }
    }
}

/// Which half of a call a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallSide {
    /// What was asked: the agent's HTTP request, or a request record.
    Request,
    /// What was answered.
    Reply,
}

/// A call, counted in tape order, and the side of it a record is.
///
/// ```
/// use simtape::oracle::{CallKind, CallRef, CallSide};
/// let call = CallRef {
///     kind: CallKind::Model,
///     ordinal: 2,
///     detail: Some("POST /v1/responses".into()),
///     side: CallSide::Request,
/// };
/// assert_eq!(call.to_string(), "model call 2 (POST /v1/responses), request");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallRef {
    /// Model call, MCP call or process run.
    pub kind: CallKind,
    /// 1 for the tape's first call of this kind.
    pub ordinal: u64,
    /// The endpoint (`POST /v1/responses`), the MCP server, method and tool, or the command
    /// line; `None` where the tape does not say.
    pub detail: Option<String>,
    /// Request or reply.
    pub side: CallSide,
}

impl fmt::Display for CallRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind.noun(), self.ordinal)?;
        if let Some(detail) = &self.detail {
            write!(f, " ({detail})")?;
        }
        let side = match self.side {
            CallSide::Request => "request",
            CallSide::Reply => "reply",
        };
        write!(f, ", {side}")
    }
}

/// Counts the calls of one tape as its records go by.
#[derive(Debug, Default)]
pub(crate) struct CallCounter {
    counts: BTreeMap<CallKind, u64>,
    /// The open request of each (actor, task).
    open: BTreeMap<(String, u32), CallRef>,
    /// The gateway's tasks that answer one HTTP request each: task → request id.
    task_request: BTreeMap<u32, u64>,
    /// The call each HTTP request started, by request id.
    http: BTreeMap<u64, CallRef>,
    /// The last embedded blob (its SHA-256 and bytes): a content-stored payload's blob is
    /// written before the record that first refers to it.
    last_blob: Option<([u8; 32], Vec<u8>)>,
}

impl CallCounter {
    /// Keeps an embedded blob's bytes until the next one.
    pub(crate) fn blob(&mut self, bytes: &[u8]) {
        use sha2::Digest;
        let hash: [u8; 32] = sha2::Sha256::digest(bytes).into();
        self.last_blob = Some((hash, bytes.to_vec()));
    }

    /// Returns the call `record` (of actor `actor`) belongs to, counting it if it starts one.
    pub(crate) fn observe(&mut self, actor: &str, record: &RawRecord) -> Option<CallRef> {
        match record.kind {
            RecordKind::Spawn => {
                self.spawned(record);
                None
            }
            RecordKind::Input => self.input(record),
            RecordKind::Request => self.request(actor, record),
            RecordKind::Reply => {
                let mut call = self.open.remove(&(actor.to_string(), record.task))?;
                call.side = CallSide::Reply;
                Some(call)
            }
            _ => None,
        }
    }

    fn payload(&self, record: &RawRecord) -> Option<Value> {
        let bytes = match (&self.last_blob, record.blob_ref) {
            (_, false) => record.payload.as_slice(),
            (Some((hash, bytes)), true) if record.payload == hash[..] => bytes.as_slice(),
            (_, true) => return None,
        };
        payload_to_json(bytes).ok()
    }

    /// Notes a gateway task spawned to answer HTTP request `id` (`[task, "request-<id>"]`).
    fn spawned(&mut self, record: &RawRecord) {
        let Some(payload) = self.payload(record) else {
            return;
        };
        let task = payload.get(0).and_then(Value::as_u64);
        let id = payload
            .get(1)
            .and_then(Value::as_str)
            .and_then(|name| name.strip_prefix("request-"))
            .and_then(|id| id.parse::<u64>().ok());
        if let (Some(task), Some(id)) = (task, id) {
            if let Ok(task) = u32::try_from(task) {
                self.task_request.insert(task, id);
            }
        }
    }

    fn count(&mut self, kind: CallKind, detail: Option<String>) -> CallRef {
        let ordinal = self.counts.entry(kind).or_insert(0);
        *ordinal += 1;
        CallRef {
            kind,
            ordinal: *ordinal,
            detail,
            side: CallSide::Request,
        }
    }

    /// An agent's HTTP request to the gateway: `[events, "message", {"Request": [id, method,
    /// path, body]}]`.
    fn input(&mut self, record: &RawRecord) -> Option<CallRef> {
        let payload = self.payload(record)?;
        let request = payload.get(2)?.get("Request")?;
        let id = request.get(0)?.as_u64()?;
        let method = request.get(1)?.as_str()?;
        let path = request.get(2)?.as_str()?;
        let call = match path.strip_prefix("/mcp/") {
            Some(server) => {
                let body: Option<Value> = request
                    .get(3)
                    .and_then(Value::as_str)
                    .and_then(|b| serde_json::from_str(b).ok());
                let rpc = body.as_ref().and_then(|b| b.get("method")?.as_str());
                let tool = body
                    .as_ref()
                    .and_then(|b| b.get("params")?.get("name")?.as_str());
                let detail = [Some(server), rpc, tool].into_iter().flatten();
                let detail = detail.collect::<Vec<_>>().join(" ").replacen(' ', ": ", 1);
                self.count(CallKind::Mcp, Some(cut(detail)))
            }
            None if method == "POST" && !is_count_tokens(path) => {
                self.count(CallKind::Model, Some(cut(format!("{method} {path}"))))
            }
            None => return None,
        };
        self.http.insert(id, call.clone());
        Some(call)
    }

    fn request(&mut self, actor: &str, record: &RawRecord) -> Option<CallRef> {
        // Inside a gateway task the call is the HTTP request's.
        let from_http = self
            .task_request
            .get(&record.task)
            .and_then(|id| self.http.get(id))
            .cloned();
        let call = match (actor, from_http) {
            ("llm", Some(call)) if call.kind == CallKind::Model => call,
            (_, Some(call)) if call.kind == CallKind::Mcp && actor.starts_with("mcp:") => call,
            ("llm", _) => self.count(CallKind::Model, None),
            (_, _) if actor.starts_with("mcp:") => {
                let detail = self.payload(record).map(|p| mcp_detail(actor, &p));
                self.count(CallKind::Mcp, detail)
            }
            ("process", _) => {
                let detail = self.payload(record).and_then(|p| command_line(&p));
                self.count(CallKind::Process, detail)
            }
            _ => return None,
        };
        self.open
            .insert((actor.to_string(), record.task), call.clone());
        Some(call)
    }
}

fn is_count_tokens(path: &str) -> bool {
    path.ends_with("/count_tokens") || path.ends_with(":countTokens")
}

/// `tickets: tools/call comment_ticket` from `["tools/call", {"CallTool": [tool, args]}]`.
fn mcp_detail(actor: &str, payload: &Value) -> String {
    let server = actor.strip_prefix("mcp:").unwrap_or(actor);
    let method = payload.get(0).and_then(Value::as_str);
    let tool = payload
        .get(1)
        .and_then(|body| body.get("CallTool"))
        .and_then(|call| call.get(0))
        .and_then(Value::as_str);
    let rest: Vec<&str> = [method, tool].into_iter().flatten().collect();
    match rest.is_empty() {
        true => server.to_string(),
        false => cut(format!("{server}: {}", rest.join(" "))),
    }
}

/// `git status --short` from `["run", {"Run": [program, [args…], …]}]`.
fn command_line(payload: &Value) -> Option<String> {
    let run = payload.get(1)?.get("Run")?;
    let mut words = vec![run.get(0)?.as_str()?.to_string()];
    for arg in run.get(1)?.as_array()? {
        words.push(arg.as_str()?.to_string());
    }
    Some(cut(words.join(" ")))
}

fn cut(text: String) -> String {
    super::field::cut_chars(text, DETAIL_CHARS_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: RecordKind, task: u32, payload: &impl Serialize) -> RawRecord {
        RawRecord {
            index: 0,
            offset: 0,
            seq: 0,
            t_ns: 0,
            actor: 0,
            task,
            kind,
            blob_ref: false,
            string_refs: false,
            payload: rmp_serde::to_vec(payload).unwrap(),
        }
    }

    #[test]
    fn gateway_requests_are_model_and_mcp_calls_and_their_tasks_share_them() {
        // Goal: HTTP inputs are counted by kind, and the LLM actor's request in the task
        // answering one is the same call; its reply is that call's reply.
        let mut calls = CallCounter::default();
        let http = |id: u64, path: &str, body: &str| {
            record(
                RecordKind::Input,
                0,
                &(
                    0,
                    "message",
                    serde_json::json!({"Request": [id, "POST", path, body]}),
                ),
            )
        };
        let body = r#"{"method":"tools/call","params":{"name":"comment_ticket"}}"#;
        let mcp = calls
            .observe("gateway", &http(1, "/mcp/tickets", body))
            .unwrap();
        assert_eq!(
            mcp.to_string(),
            "MCP call 1 (tickets: tools/call comment_ticket), request"
        );
        let model = calls
            .observe("gateway", &http(2, "/v1/responses", "{}"))
            .unwrap();
        assert_eq!(
            model.to_string(),
            "model call 1 (POST /v1/responses), request"
        );
        calls.observe("engine", &record(RecordKind::Spawn, 1, &(7, "request-2")));
        let asked = calls.observe("llm", &record(RecordKind::Request, 7, &("complete", 0)));
        assert_eq!(asked.unwrap().ordinal, 1);
        let answered = calls.observe("llm", &record(RecordKind::Reply, 7, &("complete", 0)));
        assert_eq!(
            answered.unwrap().to_string(),
            "model call 1 (POST /v1/responses), reply"
        );
    }

    #[test]
    fn actor_requests_are_calls_without_a_gateway() {
        // Goal: the llm, mcp and process actors' requests are counted per kind, named by what
        // their payloads say.
        let mut calls = CallCounter::default();
        let llm = record(RecordKind::Request, 1, &("complete", 0));
        assert_eq!(
            calls.observe("llm", &llm).unwrap().to_string(),
            "model call 1, request"
        );
        assert_eq!(calls.observe("llm", &llm).unwrap().ordinal, 2);
        let tool = serde_json::json!({"CallTool": ["close_ticket", {}]});
        let mcp = record(RecordKind::Request, 2, &("tools/call", tool));
        assert_eq!(
            calls.observe("mcp:tickets", &mcp).unwrap().to_string(),
            "MCP call 1 (tickets: tools/call close_ticket), request"
        );
        let run = serde_json::json!({"Run": ["git", ["status", "--short"], null]});
        let process = record(RecordKind::Request, 3, &("run", run));
        assert_eq!(
            calls.observe("process", &process).unwrap().to_string(),
            "process run 1 (git status --short), request"
        );
        assert_eq!(calls.observe("fs", &llm), None);
    }
}
