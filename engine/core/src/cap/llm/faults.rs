//! Injected model-call failures (`[[faults.llm]]`). A call an HTTP rule picks is answered
//! with [`LlmError::Http`], the error a fixture's `error` entry gives, without reaching the
//! backend: no fixture entry is used, no turn is counted, no provider is called. A call a
//! stream rule picks is answered by the backend as usual, and its reply carries the
//! [`StreamFault`] (`LlmReply::stream_fault`): `simtape serve` breaks the answer's event
//! stream there; a caller that does not stream gets the whole answer.
//!
//! `on_call = n` fires on the n-th model call of the run (from 1, counting faulted calls and
//! retries). `rate` draws from the LLM actor's own stream with the discipline of
//! `cap/fault_rules.rs`: every call takes one `chance` per rate rule, before the backend's own
//! draws, whatever fires. Hence:
//! - a plan without rate rules draws nothing: the backend's alternative picks and latency
//!   jitter are exactly those of a run without faults;
//! - each rate rule moves the backend's later draws by one `chance` per call;
//! - a call an HTTP rule faults takes none of the backend's draws (it picks no alternative
//!   and has no jitter), so later calls draw where the faulted call would have;
//! - a call a stream rule faults takes the backend's draws as an unfaulted call does (where
//!   the stream breaks is drawn by serve from a stream of its own, never from this one).
//!
//! An HTTP rule with `lasts` starts an outage when it fires: every call until then (virtual
//! time) gets the same error. A call in an outage is answered by it alone: no rule counts it
//! or draws for it, and the backend is not asked. The outage ends at its deadline; the next
//! call is counted and drawn for as usual.
//!
//! This module owns the kinds of `[[faults.llm]]` ([`LlmFaultKind`]): their keys ([`KINDS`],
//! [`decode_kind`], read through the scenario decoder's [`RuleKeys`]) and what each does
//! (`fire` before the backend, `after` on its answer). A new kind is added here alone
//! (and in its docs).

use serde::Serialize;

use super::actor::{LlmError, LlmReply};
use crate::cap::fault_rules::{FaultRules, LlmFault, RuleKeys, ANY_TARGET};
use crate::rng::RngStream;

/// What an LLM fault does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmFaultKind {
    /// The call is answered with an HTTP error instead of the fixture's response.
    Http {
        /// The HTTP status (default 429).
        status: u16,
        /// The provider's retry hint, when it gives one.
        retry_after_ms: Option<u64>,
        /// The error message.
        message: String,
        /// An outage: when set, every later model call for this long (virtual nanoseconds,
        /// from the call that fired) gets the same error, as from a provider that stays
        /// overloaded for a while.
        lasts_ns: Option<u64>,
    },
    /// The call is answered as usual, and a streamed answer breaks on the way
    /// (`simtape serve`); an answer that is not streamed arrives whole.
    Stream(StreamFault),
    /// The answer is cut at the model's token limit, as a provider ends a reply that reaches
    /// `max_tokens`: at most this many output tokens of text arrive (the usage rule's 4 bytes
    /// a token), without tool calls, with stop reason `max_tokens`. A shorter answer arrives
    /// whole.
    Truncated {
        /// The output tokens the answer may have.
        max_tokens: u64,
    },
}

/// A streamed answer that breaks: after some of its server-sent events, the stream is cut
/// or stalls, and never sends its final events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamFault {
    /// How it breaks.
    pub mode: StreamMode,
    /// How many events arrive before it breaks (at most all but the last); `None` draws a
    /// number from 1 to all but the last, seeded per request.
    pub after_events: Option<u64>,
}

/// How a stream breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamMode {
    /// The connection closes mid-body (no final events, no end of the chunked body).
    Cut,
    /// The stream stops sending and never finishes; the connection stays open until the
    /// client gives up or the session ends.
    Stall,
}

impl StreamMode {
    /// Returns the mode's name in the scenario format (`cut`, `stall`).
    pub fn name(self) -> &'static str {
        match self {
            StreamMode::Cut => "cut",
            StreamMode::Stall => "stall",
        }
    }
}

impl StreamFault {
    /// Returns how many of a stream's `events` are sent before it breaks: `after_events`,
    /// at most `events - 1` (the final event never arrives), or, without it, a number from
    /// 1 to `events - 1` drawn from `rng`. A stream has at least two events.
    ///
    /// ```
    /// use simtape::cap::fault_rules::{StreamFault, StreamMode};
    /// use simtape::rng::RngStream;
    /// let mut rng = RngStream::fork(0, "doc");
    /// let given = StreamFault { mode: StreamMode::Cut, after_events: Some(40) };
    /// assert_eq!(given.events_sent(9, &mut rng), 8);
    /// let seeded = StreamFault { mode: StreamMode::Stall, after_events: None };
    /// assert!((1..=8).contains(&seeded.events_sent(9, &mut rng)));
    /// ```
    pub fn events_sent(&self, events: u64, rng: &mut RngStream) -> u64 {
        assert!(
            events >= 2,
            "every provider's stream has a first and a final event"
        );
        match self.after_events {
            Some(after) => after.min(events - 1),
            None => rng.range_inclusive(1, events - 1),
        }
    }
}

/// A kind of `[[faults.llm]]` rule as the scenario format writes it: the key that marks it
/// (`None`: the rule without a marking key) and every key it takes besides the trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindKeys {
    /// The key whose presence selects the kind.
    pub marker: Option<&'static str>,
    /// The keys of a rule of this kind, the trigger's included.
    pub keys: &'static [&'static str],
}

/// The kinds of `[[faults.llm]]` rules, marked ones first; the last is the default.
pub const KINDS: [KindKeys; 3] = [
    KindKeys {
        marker: Some("stream"),
        keys: &["on_call", "rate", "stream", "after_events"],
    },
    KindKeys {
        marker: Some("max_tokens"),
        keys: &["on_call", "rate", "max_tokens"],
    },
    KindKeys {
        marker: None,
        keys: &[
            "on_call",
            "rate",
            "status",
            "retry_after",
            "message",
            "lasts",
            "stream",
        ],
    },
];
/// The status of an HTTP rule that names none.
const STATUS_DEFAULT: i64 = 429;

/// Decodes the kind of a `[[faults.llm]]` rule from `keys` (the trigger already taken);
/// returns it (`None` after a reported problem) and the kind's keys, for the message about a
/// key no kind takes.
pub fn decode_kind(keys: &mut dyn RuleKeys) -> (Option<LlmFaultKind>, KindKeys) {
    let kind = KINDS
        .iter()
        .find(|kind| kind.marker.is_none_or(|marker| keys.has(marker)))
        .copied()
        .expect("the last kind has no marker");
    let decoded = match kind.marker {
        Some("stream") => stream_fault(keys).map(LlmFaultKind::Stream),
        Some("max_tokens") => {
            let what = "a number of output tokens from 0";
            let max_tokens = keys.integer("max_tokens", (0, i64::MAX), what);
            max_tokens.map(|n| LlmFaultKind::Truncated {
                max_tokens: n.expect("the marker selected this kind") as u64,
            })
        }
        _ => http_fault(keys),
    };
    (decoded, kind)
}

/// The rest of a rule that answers with an HTTP error.
fn http_fault(keys: &mut dyn RuleKeys) -> Option<LlmFaultKind> {
    let status = keys.integer("status", (400, 599), "an integer from 400 to 599");
    let retry_after_ms = keys.duration_ms("retry_after");
    let message = keys.text("message", "an error message");
    let lasts_ns = keys
        .duration_ms("lasts")
        .map(|ms| ms.map(|ms| ms.saturating_mul(1_000_000)));
    keys.refuse(
        "after_events",
        "`after_events` needs `stream = \"cut\"` or `stream = \"stall\"`",
    );
    let status = status?.unwrap_or(STATUS_DEFAULT) as u16;
    Some(LlmFaultKind::Http {
        status,
        retry_after_ms: retry_after_ms?,
        message: message?.unwrap_or_else(|| format!("injected fault: HTTP {status}")),
        lasts_ns: lasts_ns?,
    })
}

/// The rest of a rule that breaks a stream (`stream` is its mode); `after_events` only here.
fn stream_fault(keys: &mut dyn RuleKeys) -> Option<StreamFault> {
    let mode = keys.choice(
        "stream",
        &["cut", "stall"],
        "a stream fault `cut` or `stall`",
    );
    let after_events = keys.integer("after_events", (0, i64::MAX), "a number of events from 0");
    let mode = match mode?.expect("the marker selected this kind") {
        "cut" => StreamMode::Cut,
        _ => StreamMode::Stall,
    };
    Some(StreamFault {
        mode,
        after_events: after_events?.map(|n| n as u64),
    })
}

/// The virtual latency of a faulted model call: an error comes back quickly, but not at once.
pub const LLM_FAULT_LATENCY_NS: u64 = 20_000_000;

/// What a fired rule asks of a call.
pub(crate) enum FaultEffect {
    /// Answer with this error reply; the backend is not asked. Boxed: a reply is large and a
    /// fired fault is the rare case.
    Reply(Box<LlmReply>),
    /// Answer from the backend, then let [`after`] change the reply as this kind says.
    After(LlmFaultKind),
}

/// An outage a `lasts` rule started: the error every call before `until_ns` gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outage {
    /// Virtual time it ends at.
    until_ns: u64,
    status: u16,
    message: String,
    retry_after_ms: Option<u64>,
}

/// Counts one model call at `now_ns` and returns what the outage under way, or the rule of
/// `faults` that fires on it, asks, if anything.
pub(crate) fn fire(
    faults: &mut FaultRules<LlmFault>,
    outage: &mut Option<Outage>,
    now_ns: u64,
    request_digest: &str,
    rng: &mut RngStream,
) -> Option<FaultEffect> {
    if let Some(under_way) = outage.as_ref().filter(|o| now_ns < o.until_ns) {
        let (status, message) = (under_way.status, under_way.message.clone());
        return Some(error_reply(
            request_digest,
            status,
            message,
            under_way.retry_after_ms,
        ));
    }
    *outage = None;
    let rule = faults.fire(ANY_TARGET, rng)?;
    let (status, message, retry_after_ms) = match &rule.kind {
        LlmFaultKind::Stream(_) | LlmFaultKind::Truncated { .. } => {
            return Some(FaultEffect::After(rule.kind.clone()))
        }
        LlmFaultKind::Http {
            status,
            retry_after_ms,
            message,
            lasts_ns,
        } => {
            if let Some(lasts_ns) = lasts_ns {
                *outage = Some(Outage {
                    until_ns: now_ns.saturating_add(*lasts_ns),
                    status: *status,
                    message: message.clone(),
                    retry_after_ms: *retry_after_ms,
                });
            }
            (*status, message.clone(), *retry_after_ms)
        }
    };
    Some(error_reply(request_digest, status, message, retry_after_ms))
}

/// Changes the backend's `reply` to a call a rule of `kind` fired on ([`FaultEffect::After`]).
pub(crate) fn after(kind: &LlmFaultKind, reply: &mut LlmReply) {
    // Only an answer is changed; an error goes out as it is.
    if reply.result.is_err() {
        return;
    }
    match kind {
        LlmFaultKind::Stream(stream) => reply.stream_fault = Some(*stream),
        LlmFaultKind::Truncated { max_tokens } => {
            let Ok(answer) = &mut reply.result else {
                return;
            };
            if answer.usage.output_tokens <= *max_tokens {
                return;
            }
            // The usage rule counts 4 bytes a token; the cut keeps whole characters.
            let bytes = usize::try_from(max_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
            let mut cut = bytes.min(answer.text.len());
            while !answer.text.is_char_boundary(cut) {
                cut -= 1;
            }
            answer.text.truncate(cut);
            answer.tool_calls.clear();
            answer.stop_reason = "max_tokens".to_string();
            answer.usage.output_tokens = *max_tokens;
            reply.usage = Some(answer.usage);
        }
        LlmFaultKind::Http { .. } => {}
    }
}

/// The reply of a faulted call: an HTTP error, the backend not asked.
fn error_reply(
    request_digest: &str,
    status: u16,
    message: String,
    retry_after_ms: Option<u64>,
) -> FaultEffect {
    FaultEffect::Reply(Box::new(LlmReply {
        request_digest: request_digest.to_string(),
        entry_line: None,
        alternative: None,
        usage: None,
        result: Err(LlmError::Http {
            status,
            message,
            retry_after_ms,
        }),
        stream_fault: None,
    }))
}

#[cfg(test)]
mod tests {
    use crate::cap::llm::{ChatRequest, Llm, LlmHandle, Message};
    use crate::scenario::Scenario;

    #[test]
    fn a_truncated_answer_stops_at_its_token_limit() {
        // Goal: `max_tokens = 3` cuts the answer on the call it fires on to 12 bytes of text,
        // no tool calls, stop reason max_tokens and 3 output tokens; other calls arrive whole.
        let dir = crate::testing::unit_test_dir("llm-truncated");
        std::fs::create_dir_all(&dir).unwrap();
        let fixture = "{\"simtape_llm\":1}\n{\"mode\":\"sticky\",\"response\":{\"text\":\"The capital of France is Paris.\",\"tool_calls\":[{\"name\":\"f\",\"arguments\":{}}]}}\n";
        std::fs::write(dir.join("llm.jsonl"), fixture).unwrap();
        let source = "[scenario]\nname = \"t\"\n[llm]\nfixture = \"llm.jsonl\"\n[[faults.llm]]\non_call = 1\nmax_tokens = 3\n[[task]]\nname = \"t\"\nsteps = [{ ask = \"hi\" }]\n";
        let scenario = Scenario::parse(source, &dir.join("t.toml")).unwrap();
        let faults = &scenario.faults().llm;
        let actor =
            Llm::from_fixture(crate::cap::llm::Fixture::load(&dir.join("llm.jsonl")).unwrap())
                .with_faults(faults.clone());
        let mut builder = crate::Sim::builder();
        let llm = LlmHandle::new(builder.actor("llm", actor));
        let report = builder
            .build()
            .unwrap()
            .run(move |_host| async move {
                let ask = || ChatRequest::new("m", vec![Message::user("Capital of France?")]);
                (llm.complete(ask()).await, llm.complete(ask()).await)
            })
            .unwrap();
        let (cut, whole) = report.output;
        let (cut, whole) = (cut.unwrap(), whole.unwrap());
        assert_eq!(cut.text, "The capital ");
        assert!(cut.tool_calls.is_empty());
        assert_eq!(cut.stop_reason, "max_tokens");
        assert_eq!(cut.usage.output_tokens, 3);
        assert_eq!(whole.text, "The capital of France is Paris.");
        assert_eq!(whole.tool_calls.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
