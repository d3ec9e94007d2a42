//! The virtual latency of a model call and the token rule for answers without given usage.
//!
//! Both are integer arithmetic, so a fixture gives the same latencies on every machine; the
//! only randomness is the optional jitter, drawn from the LLM actor's own stream.

use serde::{Deserialize, Serialize};

use crate::rng::RngStream;

/// `latency = base_ms + per_output_token_us × output_tokens + jitter`, in virtual time.
///
/// The jitter is uniform in `0..=jitter_ms` milliseconds (whole nanoseconds), drawn only when
/// `jitter_ms > 0`, so a fixture without jitter draws nothing.
///
/// ```
/// use simtape::cap::llm::LatencyModel;
/// let model = LatencyModel { base_ms: 100, per_output_token_us: 2_000, jitter_ms: 0 };
/// let mut rng = simtape::rng::RngStream::fork(1, "llm");
/// assert_eq!(model.latency_ns(10, &mut rng), 120_000_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyModel {
    /// Fixed cost of every call (time to first token), in milliseconds.
    pub base_ms: u64,
    /// Cost of each output token, in microseconds.
    pub per_output_token_us: u64,
    /// Upper bound of the uniform jitter, in milliseconds.
    pub jitter_ms: u64,
}

impl Default for LatencyModel {
    /// Returns 250 ms + 10 ms per output token, no jitter: a plausible hosted model.
    fn default() -> Self {
        LatencyModel {
            base_ms: 250,
            per_output_token_us: 10_000,
            jitter_ms: 0,
        }
    }
}

/// A partial latency model: each given field overrides the fixture's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LatencyOverride {
    /// Overrides [`LatencyModel::base_ms`].
    pub(crate) base_ms: Option<u64>,
    /// Overrides [`LatencyModel::per_output_token_us`].
    pub(crate) per_output_token_us: Option<u64>,
    /// Overrides [`LatencyModel::jitter_ms`].
    pub(crate) jitter_ms: Option<u64>,
}

impl LatencyOverride {
    /// Returns `base` with this override's fields applied.
    pub(crate) fn apply(&self, base: LatencyModel) -> LatencyModel {
        LatencyModel {
            base_ms: self.base_ms.unwrap_or(base.base_ms),
            per_output_token_us: self.per_output_token_us.unwrap_or(base.per_output_token_us),
            jitter_ms: self.jitter_ms.unwrap_or(base.jitter_ms),
        }
    }
}

impl LatencyModel {
    /// Returns the latency of an answer with `output_tokens` tokens, in nanoseconds (saturating).
    pub fn latency_ns(&self, output_tokens: u64, rng: &mut RngStream) -> u64 {
        let base_ns = self.base_ms.saturating_mul(1_000_000);
        let tokens_ns = self
            .per_output_token_us
            .saturating_mul(1_000)
            .saturating_mul(output_tokens);
        let jitter_ns = match self.jitter_ms {
            0 => 0,
            ms => rng.range_inclusive(0, ms.saturating_mul(1_000_000)),
        };
        base_ns.saturating_add(tokens_ns).saturating_add(jitter_ns)
    }
}

/// How token usage is computed when an answer does not give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UsageRule {
    /// `ceil(bytes / 4)` of the input (messages, tool calls, tool definitions) and of the
    /// output (text, tool-call names and JSON arguments): the usual rule of thumb for English.
    BytesOver4,
    /// Harn's defaults: input = bytes of the match text, output = 30.
    Harn,
}

/// Returns `ceil(bytes / 4)`.
pub fn tokens_of_bytes(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}
