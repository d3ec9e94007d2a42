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

use super::actor::{LlmError, LlmReply};
use crate::cap::fault_rules::{FaultRules, LlmFault, LlmFaultKind, StreamFault, ANY_TARGET};
use crate::rng::RngStream;

/// The virtual latency of a faulted model call: an error comes back quickly, but not at once.
pub const LLM_FAULT_LATENCY_NS: u64 = 20_000_000;

/// What a fired rule asks of a call.
pub(crate) enum Fired {
    /// Answer with this error reply; the backend is not asked. Boxed: a reply is large and a
    /// fired fault is the rare case.
    Reply(Box<LlmReply>),
    /// Answer from the backend; a streamed answer breaks as this says.
    Stream(StreamFault),
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
) -> Option<Fired> {
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
        LlmFaultKind::Stream(stream) => return Some(Fired::Stream(*stream)),
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

/// The reply of a faulted call: an HTTP error, the backend not asked.
fn error_reply(
    request_digest: &str,
    status: u16,
    message: String,
    retry_after_ms: Option<u64>,
) -> Fired {
    Fired::Reply(Box::new(LlmReply {
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
