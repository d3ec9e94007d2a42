//! The JSON of one run: what `simtape run --json` prints ([`RunCommandJson`]) and what
//! `simtape run --evidence` writes as `verdict.json` ([`EvidenceVerdict`]). Both share
//! [`RunJson`]. Render them with [`to_json_pretty`]: its keys come out sorted at every level,
//! as these documents have always had them.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use simtape::cap::fs::FsDiff;
use simtape::RunSummary;

use crate::{Verdict, VerdictKind, VerifierResult};

/// What every JSON document of one run says: the verdict and why, each verifier's result,
/// the run's summary, its outcomes and the agent's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunJson {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// `pass`, `fail`, `blocked` or `error`.
    pub verdict: VerdictKind,
    /// What a fail or error verdict says after its label ([`Verdict::reason`]).
    pub reason: Option<String>,
    /// What stopped an `error` run.
    pub error: Option<FailureJson>,
    /// Each verifier's result, in file order.
    pub verifiers: Vec<VerifierResult>,
    /// Each property's result, in file order; absent when the scenario has none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<crate::property::PropertyResult>,
    /// Virtual time at the end, in nanoseconds.
    pub end_ns: u64,
    /// Timer events popped.
    pub events: u64,
    /// Records written.
    pub records: u64,
    /// The run's fingerprint, 16 hex digits.
    pub fingerprint: String,
    /// The tape's size, when there is a tape.
    pub tape_bytes: Option<u64>,
    /// The tape's final chain hash, 16 hex digits.
    pub final_hash: Option<String>,
    /// Every scripted `outcome` that ran, in order.
    pub outcomes: Vec<OutcomeJson>,
    /// The agent's numbers, when the scenario has `[agent]`.
    pub agent: Option<AgentJson>,
    /// How an agent program was contained: `namespaces` (simtape's sandbox) or `off` (on
    /// the host, unconfined); absent for the built-in agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
}

/// What stopped a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailureJson {
    /// A short machine-readable kind (`deadlock`, `step_failed`, `llm_unmatched`, …).
    pub kind: String,
    /// The whole message.
    pub message: String,
}

/// One scripted outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutcomeJson {
    /// The outcome's name.
    pub name: String,
    /// Its value.
    pub value: Value,
}

/// The agent loop's numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentJson {
    /// Model turns.
    pub turns: usize,
    /// Tool calls, over all turns.
    pub tool_calls: usize,
    /// Model-call retries.
    pub retries: u32,
    /// What ended the loop.
    pub end: &'static str,
    /// The final answer, when there was one.
    pub answer: Option<String>,
}

impl RunJson {
    /// Returns the JSON of a run of `scenario` from its summary and verdict; the
    /// verifiers, outcomes and agent numbers start empty.
    ///
    /// ```
    /// use simtape::RunSummary;
    /// use simtape_eval::run_json::{to_json_pretty, RunJson};
    /// use simtape_eval::Verdict;
    /// let json = RunJson::new("hello", &RunSummary::unstarted(7), &Verdict::Pass, None);
    /// assert!(to_json_pretty(&json).contains("\"fingerprint\": \"0000000000000000\""));
    /// ```
    pub fn new(
        scenario: &str,
        summary: &RunSummary,
        verdict: &Verdict,
        error: Option<FailureJson>,
    ) -> RunJson {
        let tape = summary.tape.as_ref();
        RunJson {
            scenario: scenario.to_string(),
            seed: summary.seed,
            verdict: verdict.kind(),
            reason: verdict.reason(),
            error,
            verifiers: Vec::new(),
            properties: Vec::new(),
            end_ns: summary.end_ns,
            events: summary.events,
            records: summary.records,
            fingerprint: format!("{:016x}", summary.fingerprint),
            tape_bytes: tape.map(|t| t.bytes),
            final_hash: tape.map(|t| format!("{:016x}", t.final_hash)),
            outcomes: Vec::new(),
            agent: None,
            sandbox: None,
        }
    }
}

/// What `simtape run --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunCommandJson {
    /// The run.
    #[serde(flatten)]
    pub run: RunJson,
    /// The tape file, when the tape went to a file.
    pub tape: Option<String>,
    /// The fs diff's counts, when the scenario has `[fs]`.
    pub fs_diff: Option<FsDiffJson>,
    /// The command that reproduces the run.
    pub reproduce: String,
}

/// The counts of an fs diff and the file it was written to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsDiffJson {
    /// Files added.
    pub added: usize,
    /// Files modified.
    pub modified: usize,
    /// Files deleted.
    pub deleted: usize,
    /// Where `--emit-diff` wrote the diff.
    pub path: Option<String>,
}

impl FsDiffJson {
    /// Returns the counts of `diff`, written to `written` if anywhere.
    pub fn new(diff: &FsDiff, written: Option<&Path>) -> FsDiffJson {
        FsDiffJson {
            added: diff.added.len(),
            modified: diff.modified.len(),
            deleted: diff.deleted.len(),
            path: written.map(|p| p.display().to_string()),
        }
    }
}

/// What `simtape run --evidence` writes as `verdict.json`: the run, the scenario's digest,
/// the reproduce command and the agent's whole transcript.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceVerdict<'a, T> {
    /// The run.
    #[serde(flatten)]
    pub run: RunJson,
    /// The SHA-256 of the scenario source.
    pub scenario_sha256: String,
    /// The command that reproduces the run.
    pub reproduce: String,
    /// The agent's transcript, when the scenario has `[agent]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<&'a T>,
}

/// Returns `document` as pretty JSON with the keys of every object sorted (through
/// `serde_json::Value`, whose map is ordered by key), which keeps the bytes independent of
/// the order fields are declared in.
pub fn to_json_pretty(document: &impl Serialize) -> String {
    let value = serde_json::to_value(document).expect("run documents serialize");
    serde_json::to_string_pretty(&value).expect("JSON values serialize")
}

/// What `simtape run --evidence` writes as `manifest.json`: every artifact with its size and
/// SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceManifest {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The artifacts, in the order they were written.
    pub artifacts: Vec<ArtifactJson>,
}

/// One artifact of the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArtifactJson {
    /// Its file name inside the evidence directory.
    pub file: String,
    /// Its size.
    pub bytes: usize,
    /// The SHA-256 of its bytes, hex.
    pub sha256: String,
}

/// What `simtape check --json` prints: whether the scenario is valid, its name and pinned
/// seeds, or every problem found, in source order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckJson {
    /// No problem found.
    pub ok: bool,
    /// The scenario's name, when it is valid.
    pub scenario: Option<String>,
    /// Its pinned seeds, when it is valid.
    pub seeds: Vec<u64>,
    /// The problems.
    pub problems: Vec<ProblemJson>,
}

impl CheckJson {
    /// Returns the result of a valid scenario.
    pub fn valid(scenario: &str, seeds: &[u64]) -> CheckJson {
        CheckJson {
            ok: true,
            scenario: Some(scenario.to_string()),
            seeds: seeds.to_vec(),
            problems: Vec::new(),
        }
    }

    /// Returns the result of a scenario with `problems`.
    pub fn invalid(problems: Vec<ProblemJson>) -> CheckJson {
        CheckJson {
            ok: false,
            scenario: None,
            seeds: Vec::new(),
            problems,
        }
    }
}

/// One problem of a scenario file, where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProblemJson {
    /// The file, as named.
    pub file: String,
    /// The line, from 1 (0: the whole file).
    pub line: usize,
    /// The column, from 1 (0: the whole file).
    pub column: usize,
    /// The field path (`task[1].steps[0].sleep`), empty for syntax errors.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_documents_keep_their_keys_sorted() {
        // Goal: the bytes of run --json and verdict.json do not depend on field order: every
        // object's keys come out sorted, nested ones and flattened ones included.
        let verdict = Verdict::Fail {
            verifier: "answer".into(),
            saw: "nothing".into(),
        };
        let mut run = RunJson::new("s", &RunSummary::unstarted(3), &verdict, None);
        run.verifiers.push(VerifierResult {
            name: "answer".into(),
            line: 9,
            held: false,
            saw: "nothing".into(),
        });
        let text = to_json_pretty(&RunCommandJson {
            run,
            tape: None,
            fs_diff: None,
            reproduce: "simtape run s.toml --seed 3".into(),
        });
        let keys: Vec<&str> = text
            .lines()
            .filter(|line| line.starts_with("  \""))
            .map(|line| line.trim().split('"').nth(1).unwrap())
            .collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        assert!(keys.contains(&"reproduce") && keys.contains(&"verdict"));
        assert!(text.contains("\"held\": false,\n      \"line\": 9,"));
        assert!(text.contains("\"reason\": \"answer: nothing\""));
    }
}
