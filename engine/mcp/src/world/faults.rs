//! Fault injection: which call fails, and how.
//!
//! A fault rule names a tool (or `*` for every tool) and a trigger: `on_call` (the n-th call
//! to that tool, or the n-th call of any tool for `*`) or `probability`, an integer ratio such
//! as `"1/5"` (no floats, so the same seed gives the same faults on every platform). Each rule
//! draws from its own ChaCha stream (the world seed, stream number = the rule's index), and
//! draws once for every call it matches, whether or not an earlier rule fired: adding a rule
//! never shifts another rule's draws. The first rule in spec order that triggers wins.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use simtape::rng::Ratio;
use simtape::scenario::decoder::{integer, required_text, retry_after, text, Decoder, Fields};

/// What an injected fault does to a `tools/call`. This is the one list of MCP fault kinds:
/// a world spec's `faults` and a scenario's `[[faults.mcp]]` both decode to it, and
/// `WorldServer` applies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultKind {
    /// Answer a JSON-RPC error (e.g. code 429 or 503 with `data: {"retryAfterMs": 1000}`).
    /// Nothing is applied.
    RpcError {
        /// The JSON-RPC error code.
        code: i64,
        /// The error message.
        message: String,
        /// Optional error data (retry hints and the like).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    /// Answer at once with the timeout error a client would raise (code -32001), as if the
    /// call had hung for `after_ms`; no real time passes. Nothing is applied.
    Timeout {
        /// The simulated wait, reported in the error data.
        #[serde(default = "default_timeout_ms")]
        after_ms: u64,
    },
    /// Answer a tool error result (`isError: true`) with `message`. Nothing is applied.
    ToolError {
        /// The text of the error.
        message: String,
    },
    /// Apply only the first `ops` operations of the tool's effect (reads count), keep them,
    /// and answer a tool error, as a server that crashed mid-write would.
    PartialWrite {
        /// How many operations land.
        ops: usize,
        /// The text of the error (a default names how many operations landed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// A timeout fault's wait when the rule gives none.
pub const TIMEOUT_DEFAULT_MS: u64 = 30_000;

/// The fault kinds of a scenario's `[[faults.mcp]]` rules, with the keys each adds beside the
/// rule's own (`server`, `tool`, the trigger, `kind`); [`decode_kind`] reads them.
pub const KINDS: [(&str, &[&str]); 4] = [
    ("rpc_error", &["code", "message", "retry_after"]),
    ("timeout", &["after"]),
    ("tool_error", &["message"]),
    ("partial_write", &["ops"]),
];
/// The JSON-RPC error code of an `rpc_error` rule that names none.
const RPC_CODE_DEFAULT: i64 = 429;
/// The message of an `rpc_error` rule that names none.
const RPC_MESSAGE_DEFAULT: &str = "rate limited";

/// Decodes the keys of the `[[faults.mcp]]` kind `kind` (one of [`KINDS`]) from a scenario
/// file, with the core's decoder (problems placed at their file, line and field).
pub fn decode_kind(
    decoded: &mut Decoder,
    fields: &mut Fields<'_>,
    kind: &str,
) -> Option<FaultKind> {
    match kind {
        "rpc_error" => {
            let code = integer(
                decoded,
                fields,
                "code",
                (i64::MIN, i64::MAX),
                RPC_CODE_DEFAULT,
            );
            let message = text(decoded, fields, "message", "an error message");
            let retry_after_ms = retry_after(decoded, fields);
            Some(FaultKind::RpcError {
                code: code?,
                message: message?.unwrap_or_else(|| RPC_MESSAGE_DEFAULT.to_string()),
                // The world's error data carries the hint as MCP clients read it.
                data: retry_after_ms?.map(|ms| serde_json::json!({ "retryAfterMs": ms })),
            })
        }
        "timeout" => {
            let after_ms = match fields.take("after") {
                Some(after) => decoded.duration_ms(&after),
                None => Some(TIMEOUT_DEFAULT_MS),
            };
            Some(FaultKind::Timeout {
                after_ms: after_ms?,
            })
        }
        "tool_error" => {
            let message = required_text(decoded, fields, "message", "the tool error's text");
            Some(FaultKind::ToolError { message: message? })
        }
        _ => {
            const WHAT: &str = "how many operations land, an integer from 0";
            let ops = match fields.take("ops") {
                Some(ops) => decoded.integer(&ops, 0, i64::MAX, WHAT),
                None => {
                    decoded.missing(fields, "ops", WHAT);
                    None
                }
            };
            Some(FaultKind::PartialWrite {
                ops: usize::try_from(ops?).unwrap_or(usize::MAX),
                message: None,
            })
        }
    }
}

fn default_timeout_ms() -> u64 {
    TIMEOUT_DEFAULT_MS
}

impl FaultKind {
    /// Returns the fault kind's name as written in specs and reports.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::RpcError { .. } => "rpc_error",
            FaultKind::Timeout { .. } => "timeout",
            FaultKind::ToolError { .. } => "tool_error",
            FaultKind::PartialWrite { .. } => "partial_write",
        }
    }
}

/// One fault rule as written in a spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    /// The tool this rule applies to, or `*` for all.
    #[serde(default = "any_tool")]
    pub tool: String,
    /// Fire on this 1-based call number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_call: Option<u64>,
    /// Fire with this probability, written as an integer ratio such as `"1/5"` and parsed
    /// once, when the spec loads.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "probability"
    )]
    pub probability: Option<Ratio>,
    /// What happens when the rule fires.
    pub fault: FaultKind,
}

fn any_tool() -> String {
    "*".into()
}

/// Reads a rule's `probability` as the spec writes it (`"n/d"`, or `null` for none); a bad
/// ratio is a shape error, so serde places it at its line and column.
fn probability<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Ratio>, D::Error> {
    let Some(text) = Option::<String>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let ratio = parse_ratio(&text)
        .map_err(|error| serde::de::Error::custom(format_args!("`probability`: {error}")))?;
    Ok(Some(ratio))
}

/// A probability that is not an integer ratio. Not fatal: the spec is refused when it loads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an integer ratio `n/d` with 0 <= n <= d and d > 0")]
pub struct RatioError {
    /// The probability as written.
    pub text: String,
}

/// Parses `"n/d"` with `d > 0` and `n <= d`, as written (`"2/10"` stays two tenths). Only
/// this form: a world spec takes neither the scenario format's `"n%"` nor a bare `"1"`.
///
/// ```
/// use simtape::rng::Ratio;
/// use simtape_mcp::world::faults::parse_ratio;
/// assert_eq!(parse_ratio("1/5"), Ok(Ratio::new(1, 5).unwrap()));
/// assert!(parse_ratio("0.2").is_err());
/// assert!(parse_ratio("6/5").is_err());
/// ```
pub fn parse_ratio(text: &str) -> Result<Ratio, RatioError> {
    let bad = || RatioError {
        text: text.to_string(),
    };
    let (n, d) = text.split_once('/').ok_or_else(bad)?;
    let n: u64 = n.trim().parse().map_err(|_| bad())?;
    let d: u64 = d.trim().parse().map_err(|_| bad())?;
    Ratio::new(n, d).ok_or_else(bad)
}

#[derive(Debug, Clone)]
enum Trigger {
    OnCall(u64),
    Chance { ratio: Ratio, rng: Box<ChaCha12Rng> },
}

/// The fault rules of a world, with their random streams.
#[derive(Debug, Clone)]
pub struct FaultPlan {
    rules: Vec<(String, Trigger, FaultKind)>,
}

impl FaultPlan {
    /// Builds the plan. Rules were checked when the spec was loaded; a rule with neither or
    /// both triggers cannot reach here.
    pub fn new(rules: &[FaultRule], seed: u64) -> FaultPlan {
        let rules = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                let trigger = match (rule.on_call, rule.probability) {
                    (Some(n), None) => Trigger::OnCall(n),
                    (None, Some(ratio)) => {
                        let mut rng = ChaCha12Rng::seed_from_u64(seed);
                        rng.set_stream(index as u64);
                        Trigger::Chance {
                            ratio,
                            rng: Box::new(rng),
                        }
                    }
                    _ => unreachable!("the spec check demands exactly one trigger"),
                };
                (rule.tool.clone(), trigger, rule.fault.clone())
            })
            .collect();
        FaultPlan { rules }
    }

    /// Returns the fault for this call, if any: `tool_call` counts calls to `tool`, `call`
    /// counts all calls (both 1-based).
    pub fn pick(&mut self, tool: &str, tool_call: u64, call: u64) -> Option<FaultKind> {
        let mut fired = None;
        for (rule_tool, trigger, fault) in &mut self.rules {
            let number = match rule_tool.as_str() {
                "*" => call,
                name if name == tool => tool_call,
                _ => continue,
            };
            let triggered = match trigger {
                Trigger::OnCall(n) => *n == number,
                Trigger::Chance { ratio, rng } => {
                    // Lemire's multiply-shift maps 64 random bits onto [0, d) without floats.
                    let denominator = u128::from(ratio.denominator());
                    let draw = (u128::from(rng.next_u64()) * denominator) >> 64;
                    draw < u128::from(ratio.numerator())
                }
            };
            if triggered && fired.is_none() {
                fired = Some(fault.clone());
            }
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(tool: &str, on_call: Option<u64>, probability: Option<&str>) -> FaultRule {
        FaultRule {
            tool: tool.into(),
            on_call,
            probability: probability.map(|text| parse_ratio(text).unwrap()),
            fault: FaultKind::ToolError {
                message: "x".into(),
            },
        }
    }

    #[test]
    fn same_seed_same_faults_and_ratio_is_respected() {
        // Goal: probability faults repeat per seed, differ across seeds, and land near n/d.
        let rules = [rule("*", None, Some("1/4"))];
        let run = |seed| {
            let mut plan = FaultPlan::new(&rules, seed);
            (1..=400)
                .map(|c| plan.pick("t", c, c).is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let fired = run(7).iter().filter(|f| **f).count();
        assert!((60..140).contains(&fired), "{fired} of 400 at 1/4");
    }

    #[test]
    fn a_probability_is_parsed_once_as_written() {
        // Goal: a spec's `"n/d"` loads as that exact ratio (not reduced: the draw divides by
        // d), writes back as the same text, and anything else is refused at load.
        let text = r#"{"tool": "t", "probability": " 2 / 10 ", "fault": {"kind": "timeout"}}"#;
        let rule: FaultRule = serde_json::from_str(text).unwrap();
        assert_eq!(rule.probability, Ratio::new(2, 10));
        let written = serde_json::to_value(&rule).unwrap();
        assert_eq!(written["probability"], "2/10");
        let none: FaultRule = serde_json::from_str(
            r#"{"on_call": 1, "probability": null, "fault": {"kind": "timeout"}}"#,
        )
        .unwrap();
        assert_eq!(none.probability, None);
        for bad in ["25%", "1", "3/2", "1/0"] {
            let text = format!(r#"{{"probability": "{bad}", "fault": {{"kind": "timeout"}}}}"#);
            let error = serde_json::from_str::<FaultRule>(&text)
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(&format!("`probability`: `{bad}` is not an integer ratio")),
                "{error}"
            );
        }
    }

    #[test]
    fn on_call_counts_per_tool_or_overall() {
        // Goal: a named rule counts that tool's calls; `*` counts every call.
        let mut plan = FaultPlan::new(&[rule("b", Some(2), None), rule("*", Some(5), None)], 0);
        let fired: Vec<bool> = [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3)]
            .iter()
            .enumerate()
            .map(|(i, (tool, n))| plan.pick(tool, *n, i as u64 + 1).is_some())
            .collect();
        assert_eq!(fired, vec![false, false, false, true, true]);
    }
}
