//! Injected model-call failures (`[[faults.llm]]`): a call a rule picks is answered with
//! [`LlmError::Http`], the error a fixture's `error` entry gives, without reaching the
//! backend: no fixture entry is used, no turn is counted, no provider is called.
//!
//! `on_call = n` fires on the n-th model call of the run (from 1, counting faulted calls and
//! retries). `rate` draws from the LLM actor's own stream with the discipline of
//! `cap/fault_rules.rs`: every call takes one `chance` per rate rule, before the backend's own
//! draws, whatever fires. Hence:
//! - a plan without rate rules draws nothing: the backend's alternative picks and latency
//!   jitter are exactly those of a run without faults;
//! - each rate rule moves the backend's later draws by one `chance` per call;
//! - a faulted call takes none of the backend's draws (it picks no alternative and has no
//!   jitter), so later calls draw where the faulted call would have.

use super::actor::{LlmError, LlmReply};
use crate::cap::fault_rules::LlmFault;
use crate::cap::fault_rules::{FaultRules, ANY_TARGET};
use crate::rng::RngStream;

/// The virtual latency of a faulted model call: an error comes back quickly, but not at once.
pub const LLM_FAULT_LATENCY_NS: u64 = 20_000_000;

/// Counts one model call and returns the reply of the rule of `faults` that fires on it, if
/// any.
pub(crate) fn fault_reply(
    faults: &mut FaultRules<LlmFault>,
    request_digest: &str,
    rng: &mut RngStream,
) -> Option<LlmReply> {
    let rule = faults.fire(ANY_TARGET, rng)?;
    Some(LlmReply {
        request_digest: request_digest.to_string(),
        entry_line: None,
        alternative: None,
        usage: None,
        result: Err(LlmError::Http {
            status: rule.status,
            message: rule.message.clone(),
            retry_after_ms: rule.retry_after_ms,
        }),
    })
}
