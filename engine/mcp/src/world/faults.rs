//! Fault injection: which call fails, and how.
//!
//! A fault rule names a tool (or `*` for every tool) and a trigger: `on_call` (the n-th call
//! to that tool, or the n-th call of any tool for `*`) or `rate`, an integer ratio such as
//! `"1/5"` or a percentage `"20%"` (no floats, so the same seed gives the same faults on every
//! platform). `probability` is the old name of `rate`, still read and deprecated. Which rule
//! fires is the core's one fault engine (`simtape::cap::fault_rules`): every rate rule a call
//! matches takes one `chance`, in rule order, whether or not an earlier rule fired, from the
//! world's stream (inside a simulation the MCP actor's own `RngStream`; served on its own,
//! a stream forked from the world seed). The first rule in spec order that triggers wins.
//!
//! What each kind does lives here too (`FaultKind::before`, `FaultKind::after`), beside
//! its `[[faults.mcp]]` keys ([`KINDS`], [`decode_kind`]): a new kind is added in this module
//! alone (and its docs).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use simtape::cap::fault_rules::{self, trigger_of, Trigger, ANY_TARGET};
use simtape::rng::Ratio;
use simtape::scenario::decoder::{integer, required_text, retry_after, text, Decoder, Fields};

use super::server::{tool_error, TIMEOUT_CODE};
use crate::era;

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
    /// Run the call as usual (its effects land), and answer only the first `chars` characters
    /// of its text, without `structuredContent`, as a server that hit its output limit would.
    Truncated {
        /// How many characters of the answer's text arrive.
        chars: usize,
    },
}

/// A timeout fault's wait when the rule gives none.
pub const TIMEOUT_DEFAULT_MS: u64 = 30_000;

/// The fault kinds of a scenario's `[[faults.mcp]]` rules, with the keys each adds beside the
/// rule's own (`server`, `tool`, the trigger, `kind`); [`decode_kind`] reads them.
pub const KINDS: [(&str, &[&str]); 5] = [
    ("rpc_error", &["code", "message", "retry_after"]),
    ("timeout", &["after"]),
    ("tool_error", &["message"]),
    ("partial_write", &["ops"]),
    ("truncated", &["chars"]),
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
        "truncated" => {
            const WHAT: &str = "how many characters of the answer arrive, an integer from 0";
            let chars = match fields.take("chars") {
                Some(chars) => decoded.integer(&chars, 0, i64::MAX, WHAT),
                None => {
                    decoded.missing(fields, "chars", WHAT);
                    None
                }
            };
            Some(FaultKind::Truncated {
                chars: usize::try_from(chars?).unwrap_or(usize::MAX),
            })
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

/// What a fault does before the tool's effects run.
#[derive(Debug)]
pub(super) enum Before {
    /// Answer this (the call's outcome, its answer) instead; nothing is applied.
    Answer(&'static str, Result<Value, era::EnvelopeError>),
    /// Run the call with at most this many operations landing, keep what landed, and answer
    /// [`FaultKind::limited`].
    Limit(usize),
    /// Run the call as usual, then let [`FaultKind::after`] change its answer.
    Run,
}

impl FaultKind {
    /// Returns what the fault does before the tool's effects run.
    pub(super) fn before(&self) -> Before {
        match self {
            FaultKind::RpcError {
                code,
                message,
                data,
            } => Before::Answer("rpc_error", Err((*code, message.clone(), data.clone()))),
            FaultKind::Timeout { after_ms } => {
                let message = format!("Request timed out after {after_ms} ms (simulated)");
                let data = serde_json::json!({"timeoutMs": after_ms, "simulated": true});
                Before::Answer("timeout", Err((TIMEOUT_CODE, message, Some(data))))
            }
            FaultKind::ToolError { message } => {
                Before::Answer("tool_error", Ok(tool_error(message)))
            }
            FaultKind::PartialWrite { ops, .. } => Before::Limit(*ops),
            FaultKind::Truncated { .. } => Before::Run,
        }
    }

    /// Returns the answer of a call [`Before::Limit`] cut short, when the tool has `effects`
    /// operations.
    pub(super) fn limited(&self, effects: usize) -> (&'static str, Value) {
        let (ops, message) = match self {
            FaultKind::PartialWrite { ops, message } => (*ops, message.as_deref()),
            _ => (effects, None),
        };
        let landed = ops.min(effects);
        let text = message.map(str::to_string).unwrap_or_else(|| {
            format!(
                "partial write: {landed} of {effects} operations applied, then the server failed"
            )
        });
        ("partial_write", tool_error(&text))
    }

    /// Returns what a call that ran as usual answers under this fault: its `outcome` and
    /// `result`, or what the fault makes of them.
    pub(super) fn after(&self, outcome: &'static str, result: Value) -> (&'static str, Value) {
        match self {
            FaultKind::Truncated { chars } => {
                let text = result["content"][0]["text"].as_str().unwrap_or("");
                let cut: String = text.chars().take(*chars).collect();
                let answer = serde_json::json!({
                    "content": [{"type": "text", "text": cut}],
                    "isError": false,
                });
                ("truncated", answer)
            }
            _ => (outcome, result),
        }
    }

    /// Returns the fault kind's name as written in specs and reports.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::RpcError { .. } => "rpc_error",
            FaultKind::Timeout { .. } => "timeout",
            FaultKind::ToolError { .. } => "tool_error",
            FaultKind::PartialWrite { .. } => "partial_write",
            FaultKind::Truncated { .. } => "truncated",
        }
    }
}

/// One fault rule: a tool (or `*`), a trigger and what happens. A world spec writes the
/// trigger as `on_call` or `rate` (`probability`, deprecated, is read as `rate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RuleText", into = "RuleText")]
pub struct ToolFault {
    /// The tool this rule applies to, or `*` for all.
    pub tool: String,
    /// When it fires.
    pub trigger: Trigger,
    /// What happens when the rule fires.
    pub fault: FaultKind,
}

impl fault_rules::FaultRule for ToolFault {
    fn target(&self) -> &str {
        &self.tool
    }

    fn trigger(&self) -> Trigger {
        self.trigger
    }
}

/// A rule as a spec writes it; [`ToolFault`] checks and types it once, when the spec loads.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleText {
    #[serde(default = "any_tool")]
    tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    on_call: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "probability",
        deserialize_with = "rate"
    )]
    rate: Option<Ratio>,
    fault: FaultKind,
}

impl TryFrom<RuleText> for ToolFault {
    type Error = fault_rules::TriggerError;

    fn try_from(text: RuleText) -> Result<ToolFault, Self::Error> {
        Ok(ToolFault {
            tool: text.tool,
            trigger: trigger_of(text.on_call, text.rate)?,
            fault: text.fault,
        })
    }
}

impl From<ToolFault> for RuleText {
    fn from(rule: ToolFault) -> RuleText {
        let (on_call, rate) = match rule.trigger {
            Trigger::OnCall(call) => (Some(call), None),
            Trigger::Rate(ratio) => (None, Some(ratio)),
        };
        RuleText {
            tool: rule.tool,
            on_call,
            rate,
            fault: rule.fault,
        }
    }
}

fn any_tool() -> String {
    ANY_TARGET.into()
}

/// Returns a deprecation note for each rule of the world spec `text` that writes its rate
/// under the old name `probability` (read as `rate`), naming the rule by its JSON pointer;
/// empty when there is none, or when `text` is not a spec (loading reports that).
///
/// ```
/// use simtape_mcp::world::faults::deprecations;
/// let text = r#"{"faults": [{"on_call": 1}, {"probability": "1/5"}]}"#;
/// assert_eq!(deprecations(text), ["/faults/1: `probability` is deprecated, write `rate`"]);
/// ```
pub fn deprecations(text: &str) -> Vec<String> {
    let Ok(spec) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let rules = spec.get("faults").and_then(Value::as_array);
    rules
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, rule)| rule.get(fault_rules::RATE_ALIAS_DEPRECATED).is_some())
        .map(|(index, _)| format!("/faults/{index}: `probability` is deprecated, write `rate`"))
        .collect()
}

/// Reads a rule's `rate` as the spec writes it (`"n/d"` or `"n%"`, or `null` for none) with
/// the core's one ratio parser; a bad ratio is a shape error, so serde places it at its line
/// and column.
fn rate<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Ratio>, D::Error> {
    let Some(text) = Option::<String>::deserialize(deserializer)? else {
        return Ok(None);
    };
    match Ratio::parse(&text) {
        Some(ratio) => Ok(Some(ratio)),
        None => Err(serde::de::Error::custom(format_args!(
            "`rate`: `{text}` is not a ratio `n/d` (0 <= n <= d, d > 0) or a percentage `n%`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use simtape::cap::fault_rules::FaultRules;
    use simtape::rng::RngStream;

    fn rule(tool: &str, on_call: Option<u64>, rate: Option<&str>) -> ToolFault {
        ToolFault {
            tool: tool.into(),
            trigger: trigger_of(on_call, rate.map(|text| Ratio::parse(text).unwrap())).unwrap(),
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
            let mut plan = FaultRules::new(rules.to_vec());
            let mut rng = RngStream::fork(seed, "test");
            (1..=400)
                .map(|_| plan.fire("t", &mut rng).is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let fired = run(7).iter().filter(|f| **f).count();
        assert!((60..140).contains(&fired), "{fired} of 400 at 1/4");
    }

    #[test]
    fn a_rate_is_parsed_once_as_written_and_probability_is_its_old_name() {
        // Goal: a spec's `"n/d"` loads as that exact ratio (not reduced: the draw divides by
        // d) with the core's one parser, so `"n%"` reads too; it writes back as `rate`; the
        // deprecated `probability` reads the same; anything else is refused at load.
        let text = r#"{"tool": "t", "rate": " 2 / 10 ", "fault": {"kind": "timeout"}}"#;
        let rule: ToolFault = serde_json::from_str(text).unwrap();
        assert_eq!(rule.trigger, Trigger::Rate(Ratio::new(2, 10).unwrap()));
        let written = serde_json::to_value(&rule).unwrap();
        assert_eq!(written["rate"], "2/10");
        assert!(written.get("probability").is_none());
        let old = r#"{"tool": "t", "probability": "25%", "fault": {"kind": "timeout"}}"#;
        let old: ToolFault = serde_json::from_str(old).unwrap();
        assert_eq!(old.trigger, Trigger::Rate(Ratio::new(25, 100).unwrap()));
        let on_call: ToolFault =
            serde_json::from_str(r#"{"on_call": 1, "rate": null, "fault": {"kind": "timeout"}}"#)
                .unwrap();
        assert_eq!(on_call.trigger, Trigger::OnCall(1));
        for bad in ["0.2", "3/2", "1/0"] {
            let text = format!(r#"{{"rate": "{bad}", "fault": {{"kind": "timeout"}}}}"#);
            let error = serde_json::from_str::<ToolFault>(&text)
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(&format!("`rate`: `{bad}` is not a ratio")),
                "{error}"
            );
        }
        for (bad, why) in [
            (
                r#"{"fault": {"kind": "timeout"}}"#,
                "give exactly one of `on_call` and `rate`",
            ),
            (
                r#"{"on_call": 0, "fault": {"kind": "timeout"}}"#,
                "calls count from 1",
            ),
        ] {
            let error = serde_json::from_str::<ToolFault>(bad)
                .unwrap_err()
                .to_string();
            assert!(error.contains(why), "{error}");
        }
    }

    #[test]
    fn on_call_counts_per_tool_or_overall() {
        // Goal: a named rule counts that tool's calls; `*` counts every call.
        let mut plan = FaultRules::new(vec![rule("b", Some(2), None), rule("*", Some(5), None)]);
        let mut rng = RngStream::fork(0, "test");
        let fired: Vec<bool> = ["a", "b", "a", "b", "a"]
            .iter()
            .map(|tool| plan.fire(tool, &mut rng).is_some())
            .collect();
        assert_eq!(fired, vec![false, false, false, true, true]);
    }

    #[test]
    fn a_truncated_answer_keeps_its_effects_and_loses_its_tail() {
        // Goal: a `truncated` rule lets the call land (the state changes) and answers only the
        // first `chars` characters of its text, without structuredContent; the call record
        // names the outcome and the fault.
        let spec = r#"{"name":"w","initial_state":{"n":1},"goal":{"assertions":[{"path":"/n","equals":2}]},
            "tools":[{"name":"set","inputSchema":{"type":"object","properties":{"v":{"type":"integer"}}},
                      "effects":[{"op":"set","path":"/n","value":"{{v}}"}],"result":{"n":"{{v}}","note":"set"}}],
            "faults":[{"tool":"set","on_call":1,"fault":{"kind":"truncated","chars":5}}]}"#;
        let world = super::super::World::parse(spec, std::path::Path::new("w.json")).unwrap();
        let mut server = super::super::WorldServer::new(world, 0);
        let call = serde_json::json!({"name": "set", "arguments": {"v": 2}});
        let answer = server.call_tool(&call).unwrap();
        assert_eq!(answer["content"][0]["text"], r#"{"n":"#);
        assert!(answer.get("structuredContent").is_none());
        assert_eq!(answer["isError"], false);
        assert_eq!(server.state(), &serde_json::json!({"n": 2}));
        let record = &server.calls()[0];
        assert_eq!(
            (record.outcome.as_str(), record.fault.as_deref()),
            ("truncated", Some("truncated"))
        );
        let whole = server.call_tool(&call).unwrap();
        assert_eq!(whole["structuredContent"]["note"], "set");
    }
}
