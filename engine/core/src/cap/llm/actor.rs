//! The LLM actor: answers `complete` requests from a backend, in virtual time.
//!
//! The backend is chosen when the actor is built ([`ModelBackend`]): the fixture replay here,
//! or one from outside the core ([`Llm::from_backend`]; record mode is the gateway's). The
//! actor, its tape records and the [`LlmHandle`] are the same for every backend.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::backend::{ModelBackend, RecordError};
use super::digest::{Memo, Observed};
use super::faults::{fire, FaultEffect, Outage};
use super::fixture::{Alternative, Fixture, Outcome, ResponseSpec, Reuse, ThinkingSpec};
use super::latency::{tokens_of_bytes, UsageRule};
use super::matcher::Turns;
use super::request::{
    ChatRequest, ChatResponse, MatchText, Message, Thinking, ToolCall, ToolDefinition, Usage,
};
use crate::actor::{Actor, ActorContext, ActorRef, Answer};
use crate::cap::fault_rules::{FaultRules, LlmFault, StreamFault};
use crate::cap::net::NetError;

/// Lines of the last message that an [`LlmError::Unmatched`] shows.
pub(crate) const UNMATCHED_HEAD_LINES_MAX: usize = 3;
/// Characters of the last message that an [`LlmError::Unmatched`] shows.
pub(crate) const UNMATCHED_HEAD_CHARS_MAX: usize = 240;

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum LlmError {
    /// No fixture entry matched the request. Fatal for a replay: add an entry (the digest and
    /// the head of the last message say which request it is).
    Unmatched {
        /// SHA-256 hex of the request's canonical JSON.
        digest: String,
        /// The first lines of the last message.
        last_message_head: String,
    },
    /// The provider answered with an HTTP error. Not fatal: a pipeline may retry after
    /// `retry_after_ms`, as with a real provider.
    Http {
        /// The HTTP status (429 rate limit, 500, 503, 529 overloaded, …).
        status: u16,
        /// The provider's message.
        message: String,
        /// How long the provider asks to wait, in milliseconds.
        retry_after_ms: Option<u64>,
    },
    /// Record mode: the network policy refused the provider's host and port; nothing was
    /// dialled. Fatal for a recording: allow the host, or replay instead.
    Denied(NetError),
    /// Record mode: the call failed before there was an answer to record (transport, a
    /// malformed answer, the fixture file). See [`RecordError`].
    Record(RecordError),
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LlmError::Unmatched {
                digest,
                last_message_head,
            } => write!(
                f,
                "no LLM fixture entry matched request sha256:{digest}; the last message begins:\n{last_message_head}"
            ),
            LlmError::Http {
                status,
                message,
                retry_after_ms,
            } => {
                write!(f, "the model answered HTTP {status}: {message}")?;
                match retry_after_ms {
                    Some(ms) => write!(f, " (retry after {ms} ms)"),
                    None => Ok(()),
                }
            }
            LlmError::Denied(denied) => write!(f, "LLM record mode: {denied}"),
            LlmError::Record(error) => write!(f, "LLM record mode: {error}"),
        }
    }
}

impl std::error::Error for LlmError {}

/// The body of a call's `request` record: the conversation as it changed since the previous
/// call of the run, so a run's records grow with its conversation, not with its square.
///
/// It reads back too (the oracle names a changed field `/model` through it, not by its place
/// in the record): what a run writes it borrows, what a reader decodes it owns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord<'a> {
    /// The model name.
    pub model: Cow<'a, str>,
    /// The request's scope.
    pub scope: Option<Cow<'a, str>>,
    /// How many messages the request holds.
    pub messages: u64,
    /// How many leading messages are those of the previous call (0 on the first call).
    pub kept: u64,
    /// The messages after those: `messages - kept` of them.
    pub new: Cow<'a, [Message]>,
    /// SHA-256 hex of the tool list's canonical JSON.
    pub tools_digest: Cow<'a, str>,
    /// The tool list, when it differs from the previous call's (always on the first call).
    pub tools: Option<Cow<'a, [ToolDefinition]>>,
}

/// The reply record of one call: what the tape shows about it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmReply {
    /// SHA-256 hex of the request's canonical JSON.
    pub request_digest: String,
    /// The line of the fixture entry that answered, if any.
    pub entry_line: Option<u64>,
    /// The index of the alternative picked, for an answer.
    pub alternative: Option<u64>,
    /// The token usage, for an answer.
    pub usage: Option<Usage>,
    /// The answer or the error.
    pub result: Result<ChatResponse, LlmError>,
    /// How a streamed answer breaks, when a stream rule of `[[faults.llm]]` fired on an
    /// answered call. Last, and left out of the record when `None`, so tapes without stream
    /// faults keep their bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_fault: Option<StreamFault>,
}

/// The replay backend's state: the fixture, which `once` entries are used, the call counters.
/// It answers from the fixture and never reaches a real provider.
#[derive(Debug, Clone)]
struct Replay {
    /// Shared by every run built from one actor: a sweep parses (and copies) it once.
    fixture: std::sync::Arc<Fixture>,
    used: Vec<bool>,
    run_calls: u64,
    scope_calls: BTreeMap<Option<String>, u64>,
}

/// The LLM capability as an actor; register it with `Builder::actor`.
#[derive(Debug, Clone)]
pub struct LlmActor {
    backend: Box<dyn ModelBackend>,
    faults: FaultRules<LlmFault>,
    /// The outage a `lasts` rule started, while it lasts.
    outage: Option<Outage>,
    /// The previous call of the run, so a call hashes and records only what is new.
    memo: Memo,
    /// What `handle` learned about the request being answered, for its `request` record.
    observed: Option<Observed>,
    /// The run's calls so far, faulted ones included (what a handover counts).
    calls: u64,
    /// The backend that answers from a call on, when the model's side changes mid-run.
    handover: Option<Handover>,
}

/// A change of the model's side during a run: from call `from_call` on (1-based, counting
/// every call the actor gets), `backend` answers instead of the actor's own. What `simtape
/// fork --fixture` / `--model` builds: the parent's model up to the branch point, another
/// fixture or a real provider after it.
#[derive(Debug, Clone)]
struct Handover {
    from_call: u64,
    backend: Box<dyn ModelBackend>,
}

/// Constructors of [`LlmActor`]s.
///
/// ```
/// use simtape::cap::llm::{ChatRequest, Llm, LlmHandle, Message};
/// let fixture = "{\"simtape_llm\":1}\n{\"match\":{\"text\":{\"contains\":\"Paris\"}},\"response\":{\"text\":\"Sunny.\"}}\n";
/// let mut builder = simtape::Sim::builder();
/// let llm = LlmHandle::new(builder.seed(1).actor("llm", Llm::replay_str("inline", fixture).unwrap()));
/// let report = builder.build().unwrap().run(move |_host| async move {
///     llm.complete(ChatRequest::new("m", vec![Message::user("Weather in Paris?")])).await
/// }).unwrap();
/// assert_eq!(report.output.unwrap().text, "Sunny.");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Llm;

impl Llm {
    /// Returns a replay actor over the fixture file at `path` (simtape or Harn format).
    pub fn replay(path: impl AsRef<std::path::Path>) -> Result<LlmActor, super::FixtureError> {
        Fixture::load(path.as_ref()).map(Llm::from_fixture)
    }

    /// Returns a replay actor over fixture `text`; `source` names it in errors.
    pub fn replay_str(source: &str, text: &str) -> Result<LlmActor, super::FixtureError> {
        Fixture::parse(source, text).map(Llm::from_fixture)
    }

    /// Returns an actor answered by `backend`: how a crate outside the core (the gateway's
    /// record mode) plugs in a backend that reaches the outside world.
    pub fn from_backend(backend: impl ModelBackend + 'static) -> LlmActor {
        LlmActor {
            backend: Box::new(backend),
            faults: FaultRules::default(),
            outage: None,
            memo: Memo::default(),
            observed: None,
            calls: 0,
            handover: None,
        }
    }

    /// Returns a replay actor over a parsed fixture.
    pub fn from_fixture(fixture: Fixture) -> LlmActor {
        Llm::from_backend(Replay {
            used: vec![false; fixture.entries.len()],
            fixture: std::sync::Arc::new(fixture),
            run_calls: 0,
            scope_calls: BTreeMap::new(),
        })
    }
}

impl LlmActor {
    /// Sets the injected failures (`[[faults.llm]]`): a call an HTTP rule picks is answered
    /// with [`LlmError::Http`] (the rule's status, message and `retry_after_ms`) after
    /// [`super::faults::LLM_FAULT_LATENCY_NS`], and never reaches the backend; a call a stream
    /// rule picks is answered as usual, with the rule's [`StreamFault`] on its reply. See
    /// `cap/llm/faults.rs` for the draws.
    ///
    /// ```
    /// use simtape::cap::llm::{ChatRequest, Llm, LlmError, LlmHandle, Message};
    /// use simtape::cap::fault_rules::{LlmFault, LlmFaultKind, Trigger};
    /// let fixture = "{\"simtape_llm\":1}\n{\"response\":{\"text\":\"Hi.\"}}\n";
    /// let fault = LlmFault {
    ///     trigger: Trigger::OnCall(1),
    ///     kind: LlmFaultKind::Http {
    ///         status: 429,
    ///         retry_after_ms: Some(2_000),
    ///         message: "rate limited".to_string(),
    ///         lasts_ns: None,
    ///     },
    /// };
    /// let actor = Llm::replay_str("inline", fixture).unwrap().with_faults(vec![fault]);
    /// let mut builder = simtape::Sim::builder();
    /// let llm = LlmHandle::new(builder.actor("llm", actor));
    /// let report = builder.build().unwrap().run(move |_host| async move {
    ///     let ask = || ChatRequest::new("m", vec![Message::user("Hello")]);
    ///     (llm.complete(ask()).await, llm.complete(ask()).await)
    /// }).unwrap();
    /// let (first, second) = report.output;
    /// assert!(matches!(first, Err(LlmError::Http { status: 429, retry_after_ms: Some(2_000), .. })));
    /// assert_eq!(second.unwrap().text, "Hi.");
    /// ```
    pub fn with_faults(mut self, faults: Vec<LlmFault>) -> LlmActor {
        self.faults = FaultRules::new(faults);
        self
    }

    /// Hands the model over to `then`'s backend from the run's call `from_call` on (1-based,
    /// counting every call, faulted ones too); this actor's fault rules keep applying to every
    /// call. `then`'s backend is told of each call answered before it takes over
    /// ([`ModelBackend::answered_elsewhere`]), so a fixture's `turn` matches count the run's
    /// calls.
    ///
    /// ```
    /// use simtape::cap::llm::{ChatRequest, Llm, LlmHandle, Message};
    /// let fixture = |text: &str| format!("{{\"simtape_llm\":1}}\n{{\"response\":{{\"text\":\"{text}\"}}}}\n");
    /// let actor = Llm::replay_str("before", &fixture("old"))
    ///     .unwrap()
    ///     .handing_over(2, Llm::replay_str("after", &fixture("new")).unwrap());
    /// let mut builder = simtape::Sim::builder();
    /// let llm = LlmHandle::new(builder.actor("llm", actor));
    /// let report = builder.build().unwrap().run(move |_host| async move {
    ///     let ask = || ChatRequest::new("m", vec![Message::user("Hello")]);
    ///     (llm.complete(ask()).await.unwrap().text, llm.complete(ask()).await.unwrap().text)
    /// }).unwrap();
    /// assert_eq!(report.output, ("old".to_string(), "new".to_string()));
    /// ```
    pub fn handing_over(mut self, from_call: u64, then: LlmActor) -> LlmActor {
        self.handover = Some(Handover {
            from_call,
            backend: then.backend,
        });
        self
    }

    /// Returns the lines of `once` entries not used yet (a test may require none), of both
    /// sides of a handover.
    pub fn unused_once_lines(&self) -> Vec<u64> {
        let mut lines = self.backend.unused_once_lines();
        if let Some(handover) = &self.handover {
            lines.extend(handover.backend.unused_once_lines());
        }
        lines
    }
}

impl Actor for LlmActor {
    type Request = ChatRequest;
    type Response = LlmReply;

    fn operation(&self, _: &ChatRequest) -> &'static str {
        "complete"
    }

    fn handle(&mut self, request: &ChatRequest, cx: &mut ActorContext<'_>) -> Answer<LlmReply> {
        self.calls = self.calls.saturating_add(1);
        let observed = self.memo.observe(request);
        let digest = observed.digest.clone();
        let input_bytes = observed.input_bytes;
        self.observed = Some(observed);
        let fired_after = match fire(
            &mut self.faults,
            &mut self.outage,
            cx.now_ns,
            &digest,
            cx.rng,
        ) {
            Some(FaultEffect::Reply(response)) => {
                return Answer {
                    latency_ns: super::faults::LLM_FAULT_LATENCY_NS,
                    response: *response,
                }
            }
            Some(FaultEffect::After(kind)) => Some(kind),
            None => None,
        };
        let mut answer = match &mut self.handover {
            Some(handover) if self.calls >= handover.from_call => {
                handover.backend.answer(request, digest, input_bytes, cx)
            }
            Some(handover) => {
                handover.backend.answered_elsewhere(request);
                self.backend.answer(request, digest, input_bytes, cx)
            }
            None => self.backend.answer(request, digest, input_bytes, cx),
        };
        if let Some(kind) = fired_after {
            super::faults::after(&kind, &mut answer.response);
        }
        answer
    }

    fn encode_request(&mut self, request: &ChatRequest, body: &mut Vec<u8>) -> bool {
        let observed = match self.observed.take() {
            Some(observed) => observed,
            None => self.memo.observe(request),
        };
        let record = RequestRecord {
            model: Cow::Borrowed(&request.model),
            scope: request.scope.as_deref().map(Cow::Borrowed),
            messages: request.messages.len() as u64,
            kept: observed.kept as u64,
            new: Cow::Borrowed(&request.messages[observed.kept..]),
            tools_digest: Cow::Borrowed(&observed.tools_digest),
            tools: observed
                .tools_changed
                .then_some(Cow::Borrowed(&request.tools[..])),
        };
        rmp_serde::encode::write(body, &record).expect("a request record always encodes");
        true
    }
}

impl ModelBackend for Replay {
    fn answer(
        &mut self,
        request: &ChatRequest,
        request_digest: String,
        input_bytes: u64,
        cx: &mut ActorContext<'_>,
    ) -> Answer<LlmReply> {
        let turns = self.count_call(request);
        let match_text = MatchText::of(request);
        let Some(index) = self.select(request, &match_text, turns) else {
            let error = LlmError::Unmatched {
                digest: request_digest.clone(),
                last_message_head: head(request.last_message().unwrap_or("")),
            };
            return Answer {
                latency_ns: 0,
                response: LlmReply {
                    request_digest,
                    entry_line: None,
                    alternative: None,
                    usage: None,
                    result: Err(error),
                    stream_fault: None,
                },
            };
        };
        let entry = &self.fixture.entries[index];
        if entry.mode == Reuse::Once {
            self.used[index] = true;
        }
        let (latency_ns, alternative, result) = match &entry.outcome {
            Outcome::Fail(failure) => {
                let error = LlmError::Http {
                    status: failure.status,
                    message: failure.message.clone(),
                    retry_after_ms: failure.retry_after_ms,
                };
                (entry.latency.latency_ns(0, cx.rng), None, Err(error))
            }
            Outcome::Respond(alternatives) => {
                let picked = pick(alternatives, cx);
                let rule = self.fixture.usage_rule;
                let asked = Asked {
                    request,
                    match_text: &match_text,
                    input_bytes,
                    turns,
                };
                let response = respond(&alternatives[picked].response, &asked, rule);
                let latency_ns = entry
                    .latency
                    .latency_ns(response.usage.output_tokens, cx.rng);
                (latency_ns, Some(picked as u64), Ok(response))
            }
        };
        Answer {
            latency_ns,
            response: LlmReply {
                request_digest,
                entry_line: Some(entry.line),
                alternative,
                usage: result.as_ref().ok().map(|r| r.usage),
                result,
                stream_fault: None,
            },
        }
    }

    fn answered_elsewhere(&mut self, request: &ChatRequest) {
        self.count_call(request);
    }

    fn unused_once_lines(&self) -> Vec<u64> {
        self.fixture
            .entries
            .iter()
            .zip(&self.used)
            .filter(|(entry, used)| entry.mode == Reuse::Once && !**used)
            .map(|(entry, _)| entry.line)
            .collect()
    }

    fn clone_backend(&self) -> Box<dyn ModelBackend> {
        Box::new(self.clone())
    }
}

impl Replay {
    /// Counts this call in the run and in its scope, returning both turn numbers.
    fn count_call(&mut self, request: &ChatRequest) -> Turns {
        self.run_calls = self.run_calls.saturating_add(1);
        let scope = self.scope_calls.entry(request.scope.clone()).or_insert(0);
        *scope = scope.saturating_add(1);
        Turns {
            run: self.run_calls,
            scope: *scope,
        }
    }

    /// Returns the entry that answers: the lowest scope rank, then the earliest in the fixture.
    fn select(
        &self,
        request: &ChatRequest,
        match_text: &MatchText<'_>,
        turns: Turns,
    ) -> Option<usize> {
        let scope = request.scope.as_deref();
        self.fixture
            .entries
            .iter()
            .enumerate()
            .filter(|(index, _)| !self.used[*index])
            .filter_map(|(index, entry)| Some((entry.scope.rank(scope)?, index, entry)))
            .filter(|(_, _, entry)| entry.matcher.matches(request, match_text, turns))
            .map(|(rank, index, _)| (rank, index))
            .min()
            .map(|(_, index)| index)
    }
}

/// Picks an alternative by weight; a single alternative draws nothing from the stream.
fn pick(alternatives: &[Alternative], cx: &mut ActorContext<'_>) -> usize {
    if alternatives.len() == 1 {
        return 0;
    }
    let weights: Vec<u64> = alternatives.iter().map(|a| a.weight).collect();
    cx.rng
        .weighted_index(&weights)
        .expect("the fixture parser rejects alternatives whose weights total 0 or overflow")
}

/// What an answer is computed from besides its fixture response.
struct Asked<'a> {
    request: &'a ChatRequest,
    match_text: &'a MatchText<'a>,
    /// The usage rule's input bytes of the request.
    input_bytes: u64,
    turns: Turns,
}

fn respond(spec: &ResponseSpec, asked: &Asked<'_>, rule: UsageRule) -> ChatResponse {
    let Asked {
        request,
        match_text,
        input_bytes,
        turns,
    } = *asked;
    let tool_calls: Vec<ToolCall> = spec
        .tool_calls
        .iter()
        .enumerate()
        .map(|(index, call)| ToolCall {
            // Generated ids depend only on the turn, so they are the same on every replay.
            id: call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{}_{index}", turns.run)),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        })
        .collect();
    let stop_reason = spec.stop_reason.clone().unwrap_or_else(|| {
        if tool_calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        }
        .to_owned()
    });
    let mut response = ChatResponse {
        model: spec.model.clone().unwrap_or_else(|| request.model.clone()),
        text: spec.text.clone(),
        tool_calls,
        stop_reason,
        usage: Usage::default(),
        thinking: spec.thinking.as_ref().map(thinking),
    };
    let (input_default, output_default) = match rule {
        UsageRule::BytesOver4 => (
            tokens_of_bytes(input_bytes),
            tokens_of_bytes(response.output_bytes()),
        ),
        UsageRule::Harn => (match_text.get().len() as u64, 30),
    };
    response.usage = Usage {
        input_tokens: spec.usage.input_tokens.unwrap_or(input_default),
        output_tokens: spec.usage.output_tokens.unwrap_or(output_default),
    };
    response
}

/// Returns the thinking block a fixture asks for. A signature the fixture leaves out is derived
/// from the text, so it is the same on every replay and on every machine.
fn thinking(spec: &ThinkingSpec) -> Thinking {
    match spec {
        ThinkingSpec::Text(text) => Thinking {
            text: text.clone(),
            signature: format!("simtape:{}", crate::tape::sha256_hex(text.as_bytes())),
        },
        ThinkingSpec::Sealed { text, signature } => Thinking {
            text: text.clone(),
            signature: signature.clone(),
        },
    }
}

/// Returns the first lines of `text`, bounded in lines and characters.
fn head(text: &str) -> String {
    let lines: Vec<&str> = text.lines().take(UNMATCHED_HEAD_LINES_MAX).collect();
    let joined = lines.join("\n");
    match joined.char_indices().nth(UNMATCHED_HEAD_CHARS_MAX) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}

/// The typed handle pipeline code calls the model through.
#[derive(Debug, Clone, Copy)]
pub struct LlmHandle(pub ActorRef<LlmActor>);

impl LlmHandle {
    /// Wraps the actor reference returned by `Builder::actor`.
    pub fn new(actor: ActorRef<LlmActor>) -> LlmHandle {
        LlmHandle(actor)
    }

    /// Calls the model: the answer, or an HTTP error, or [`LlmError::Unmatched`].
    pub async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        self.0.call(request).await.result
    }

    /// Calls the model like [`LlmHandle::complete`] and hands the request back, so a loop can
    /// append the next turn's messages to it instead of copying the conversation each call.
    pub async fn complete_returning(
        &self,
        request: ChatRequest,
    ) -> (ChatRequest, Result<ChatResponse, LlmError>) {
        let (request, reply) = self.0.call_returning(request).await;
        (request, reply.result)
    }

    /// Calls the model and returns the whole reply record (digest, entry, alternative).
    pub async fn complete_with_reply(&self, request: ChatRequest) -> LlmReply {
        self.0.call(request).await
    }
}
