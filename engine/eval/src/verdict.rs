//! The verdict of one run and the verifier results it is decided from.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The verdict of one run.
///
/// * **pass**: at least one verifier ran and every verifier held ("no tests, no pass");
/// * **fail**: the run completed, but a verifier did not hold, or none ran;
/// * **blocked**: a policy stopped the run ("no pretending"): the agent's egress was denied
///   by the network policy, a path escaped the io boundary (the `[fs]` root), or a tool a
///   gate needs is disabled; what the verifiers would say is unknown;
/// * **error**: the run could not complete (deadlock, limit, panic, a failed scripted step,
///   an unmatched replay); no verifier ran.
///
/// It displays as the tape footer writes it:
///
/// ```
/// use simtape_eval::Verdict;
/// let fail = Verdict::Fail { verifier: "answer".into(), saw: "expected to contain \"done\", found \"\"".into() };
/// assert_eq!(fail.to_string(), "fail: answer: expected to contain \"done\", found \"\"");
/// assert_eq!(fail.label(), "fail");
/// assert_eq!(fail.reason().as_deref(), Some("answer: expected to contain \"done\", found \"\""));
/// assert_eq!(Verdict::Pass.to_string(), "pass");
/// let blocked = Verdict::Blocked { policy: "fs_escape".into(), reason: "`../x` escapes the root".into() };
/// assert_eq!(blocked.to_string(), "blocked: `../x` escapes the root");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every verifier held, and at least one ran.
    Pass,
    /// A verifier did not hold (the first, in file order), or none ran (`(none)`).
    Fail {
        /// The verifier's name.
        verifier: String,
        /// What it saw.
        saw: String,
    },
    /// A policy stopped the run.
    Blocked {
        /// Which policy: `net_denied`, `fs_escape` or `tool_disabled`.
        policy: String,
        /// What it stopped.
        reason: String,
    },
    /// The run could not complete.
    Error {
        /// What stopped it.
        reason: String,
    },
}

/// What kind of verdict a run had, without its reason: what a sweep's per-seed record keeps
/// (serialized `"pass"`, `"fail"`, `"blocked"` or `"error"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictKind {
    /// The run completed, at least one verifier ran and every verifier held.
    Pass,
    /// The run completed but a verifier did not hold, or none ran.
    Fail,
    /// A policy stopped the run: denied egress, an fs escape, a disabled tool a gate needs.
    Blocked,
    /// The run could not complete: deadlock, limit, task panic, failed step, unmatched
    /// replay.
    Error,
}

impl VerdictKind {
    /// Returns `"pass"`, `"fail"`, `"blocked"` or `"error"`.
    pub fn label(self) -> &'static str {
        match self {
            VerdictKind::Pass => "pass",
            VerdictKind::Fail => "fail",
            VerdictKind::Blocked => "blocked",
            VerdictKind::Error => "error",
        }
    }
}

/// The verifier name of the failure "no verifier ran".
pub const NO_VERIFIER: &str = "(none)";
/// What the failure "no verifier ran" saw.
pub const NO_VERIFIER_SAW: &str = "no verifier ran: no tests, no pass";

impl Verdict {
    /// Returns the kind of the verdict.
    pub fn kind(&self) -> VerdictKind {
        match self {
            Verdict::Pass => VerdictKind::Pass,
            Verdict::Fail { .. } => VerdictKind::Fail,
            Verdict::Blocked { .. } => VerdictKind::Blocked,
            Verdict::Error { .. } => VerdictKind::Error,
        }
    }

    /// Returns `"pass"`, `"fail"`, `"blocked"` or `"error"`.
    pub fn label(&self) -> &'static str {
        self.kind().label()
    }

    /// Returns what a fail, blocked or error verdict says after its label (`<verifier>:
    /// <saw>`, or what stopped the run), `None` for a pass.
    pub fn reason(&self) -> Option<String> {
        match self {
            Verdict::Pass => None,
            Verdict::Fail { verifier, saw } => Some(format!("{verifier}: {saw}")),
            Verdict::Blocked { reason, .. } | Verdict::Error { reason } => Some(reason.clone()),
        }
    }

    /// Returns the verdict of a completed run from its verifiers' results: the first that
    /// did not hold fails the run; no result at all fails it too.
    ///
    /// ```
    /// use simtape_eval::{Verdict, VerifierResult, NO_VERIFIER};
    /// let held = VerifierResult { name: "a".into(), line: 3, held: true, saw: "ok".into() };
    /// assert_eq!(Verdict::of(&[held]), Verdict::Pass);
    /// assert!(matches!(Verdict::of(&[]), Verdict::Fail { verifier, .. } if verifier == NO_VERIFIER));
    /// ```
    pub fn of(results: &[VerifierResult]) -> Verdict {
        if results.is_empty() {
            return Verdict::Fail {
                verifier: NO_VERIFIER.to_string(),
                saw: NO_VERIFIER_SAW.to_string(),
            };
        }
        match results.iter().find(|result| !result.held) {
            Some(failed) => Verdict::Fail {
                verifier: failed.name.clone(),
                saw: failed.saw.clone(),
            },
            None => Verdict::Pass,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Pass => f.write_str("pass"),
            Verdict::Fail { verifier, saw } => write!(f, "fail: {verifier}: {saw}"),
            Verdict::Blocked { reason, .. } => write!(f, "blocked: {reason}"),
            Verdict::Error { reason } => write!(f, "error: {reason}"),
        }
    }
}

/// One verifier's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifierResult {
    /// The verifier's name (`name = "…"`, or `<kind> <target>`).
    pub name: String,
    /// The line of its `[[verify]]` entry.
    pub line: u64,
    /// Whether it held.
    pub held: bool,
    /// What it saw: the evidence when it held, the mismatch when it did not.
    pub saw: String,
}
