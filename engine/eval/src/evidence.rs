//! The run-and-test evidence contract of `simtape run --evidence DIR`, as data: the gate
//! commands and how to replay them (`GATES.json`), the run's plan (`evidence/plan.json`),
//! what the gates and verifiers gave (`evidence/tests.json`), the SHA-256 of every artifact
//! (`evidence/artifacts.json`), and the normalizer of `evidence/run_log.txt`.
//!
//! Every path in these documents is relative (to the scenario file's directory, or to the
//! evidence directory), every list is in a stable order, and the log carries no wall-clock
//! time, duration, process id or absolute path, so two runs of one seed give the same bytes.
//! Render them with [`crate::run_json::to_json_pretty`].

use serde::Serialize;
use simtape::cap::process::Normalizer;

use crate::run_json::ArtifactJson;
use crate::{Verdict, VerdictKind, VerifierResult};

/// The format tag of `GATES.json`.
pub const GATES_FORMAT: &str = "simtape-gates/1";
/// The format tag of `evidence/plan.json`.
pub const PLAN_FORMAT: &str = "simtape-plan/1";
/// The format tag of `evidence/tests.json`.
pub const TESTS_FORMAT: &str = "simtape-tests/1";
/// The format tag of `evidence/artifacts.json`.
pub const ARTIFACTS_FORMAT: &str = "simtape-artifacts/1";

/// `GATES.json`: every gate command and how to replay the run that ran them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GatesJson {
    /// Always [`GATES_FORMAT`].
    pub format: &'static str,
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The `[fs]` root the run may touch, relative to the scenario file; `None` without one.
    pub io_boundary: Option<String>,
    /// Whether the network policy allows no connection at all.
    pub offline: bool,
    /// The gates, in file order.
    pub commands: Vec<GateCommand>,
    /// The command that replays the run (gates included), from the evidence directory.
    pub replay: String,
}

/// One gate command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateCommand {
    /// The verifier's name.
    pub name: String,
    /// The exact argv: the program, then its arguments.
    pub argv: Vec<String>,
    /// Where it runs: the io boundary's directory (an agent program's gates run in a copy of
    /// it), or `process` (inside the simulation, through `[process]`).
    pub cwd: String,
    /// The exit code the gate expects.
    pub expect_exit: i32,
}

/// `evidence/plan.json`: the run's manifest, as planned before it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanJson {
    /// Always [`PLAN_FORMAT`].
    pub format: &'static str,
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// The gates' argvs, in file order.
    pub gate_commands: Vec<Vec<String>>,
    /// What the run may touch.
    pub io_boundary: IoBoundary,
    /// What it may dial.
    pub network: NetworkPlan,
    /// What environment it sees.
    pub env_policy: EnvPolicy,
    /// Its bounds.
    pub timeout_caps: TimeoutCaps,
    /// The evidence files, sorted.
    pub artifact_paths: Vec<String>,
}

/// The io boundary of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IoBoundary {
    /// The `[fs]` root, relative to the scenario file; `None`: no file access at all.
    pub root: Option<String>,
    /// How writes land: `overlay` (in memory, the root never written), `scratch copy` (an
    /// agent program works in a copy of the root), or `none`.
    pub writes: &'static str,
}

/// The network policy of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetworkPlan {
    /// No rule allows anything: every connection is denied.
    pub offline: bool,
    /// The allow rules, in order (deny by default).
    pub allow: Vec<String>,
}

/// What environment a run sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvPolicy {
    /// The simulation reads no environment variable: always `none`.
    pub simulation: &'static str,
    /// The variables an agent program gets on top of simtape's own (names only, sorted: the
    /// values may be secrets); `None` without an agent program.
    pub agent_program_sets: Option<Vec<String>>,
}

/// The bounds of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimeoutCaps {
    /// Virtual time at most, in nanoseconds.
    pub virtual_time_max_ns: u64,
    /// Timer events at most.
    pub events_max: u64,
    /// Tape bytes at most.
    pub tape_bytes_max: u64,
    /// An agent program's wall-clock timeout, in milliseconds.
    pub agent_timeout_ms: Option<u64>,
    /// Each of an agent program's gates' wall-clock timeout, in milliseconds.
    pub gate_timeout_ms: Option<u64>,
}

/// `evidence/tests.json`: what every gate and verifier gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestsJson {
    /// Always [`TESTS_FORMAT`].
    pub format: &'static str,
    /// The run's verdict.
    pub verdict: VerdictKind,
    /// What a verdict other than pass says.
    pub reason: Option<String>,
    /// How many verifiers ran: a pass needs at least one.
    pub executed_verifiers: usize,
    /// The gates, in file order.
    pub gates: Vec<GateTest>,
    /// Every verifier's result, in file order.
    pub verifiers: Vec<VerifierResult>,
}

impl TestsJson {
    /// Returns the tests document of a run with `verdict` and `verifiers`.
    ///
    /// Panics on a pass without an executed verifier: [`Verdict::of`] never gives one, and
    /// evidence that claimed it would be a lie.
    pub fn new(verdict: &Verdict, verifiers: &[VerifierResult], gates: Vec<GateTest>) -> Self {
        assert!(
            verdict.kind() != VerdictKind::Pass || !verifiers.is_empty(),
            "no tests, no pass"
        );
        TestsJson {
            format: TESTS_FORMAT,
            verdict: verdict.kind(),
            reason: verdict.reason(),
            executed_verifiers: verifiers.len(),
            gates,
            verifiers: verifiers.to_vec(),
        }
    }
}

/// One gate: what it ran, and how it went on the base tree and on the final one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateTest {
    /// The verifier's name.
    pub name: String,
    /// The exact argv.
    pub argv: Vec<String>,
    /// The exit code it expects.
    pub expect_exit: i32,
    /// Its exit code on the final tree; `None` when it did not run or a signal ended it.
    pub exit_code: Option<i32>,
    /// Why it did not run on the final tree, when it did not.
    pub error: Option<String>,
    /// Whether it gave the expected exit code on the final tree.
    pub passing_after: Option<bool>,
    /// Its exit code on the base tree, run before the agent's changes.
    pub before_exit_code: Option<i32>,
    /// Whether it did not give the expected exit code on the base tree; `None` when it
    /// was not run there (`before` says why).
    pub failing_before: Option<bool>,
    /// Why it was not run on the base tree, when it was not.
    pub before: Option<String>,
}

/// One run of a gate: its exit code, or why it did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateExit {
    /// The exit code, when it ended with one.
    pub code: Option<i32>,
    /// Why it did not run.
    pub error: Option<String>,
}

/// A gate's run on the base tree, for [`GateTest::new`]: what it came to, or why it was not
/// run there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseRun<'a> {
    /// It ran (or failed to start, as its exit says).
    Ran(&'a GateExit),
    /// It was not run on the base tree, for this reason (a replay, a base run that stopped
    /// before it).
    NotRun(&'a str),
}

impl GateTest {
    /// Returns a gate's test: `after` on the final tree (`None`: it never ran), `before` on
    /// the base tree or why it was not run there.
    pub fn new(command: &GateCommand, after: Option<&GateExit>, before: BaseRun<'_>) -> GateTest {
        let expect = command.expect_exit;
        let (before_exit_code, failing_before, before) = match before {
            BaseRun::Ran(run) if run.error.is_none() => {
                (run.code, Some(run.code != Some(expect)), None)
            }
            BaseRun::Ran(run) => (None, None, run.error.clone()),
            BaseRun::NotRun(why) => (None, None, Some(why.to_string())),
        };
        GateTest {
            name: command.name.clone(),
            argv: command.argv.clone(),
            expect_exit: expect,
            exit_code: after.and_then(|run| run.code),
            error: after.map_or(
                Some("it did not run: the run stopped first".into()),
                |run| run.error.clone(),
            ),
            passing_after: after
                .filter(|run| run.error.is_none())
                .map(|run| run.code == Some(expect)),
            before_exit_code,
            failing_before,
            before,
        }
    }
}

/// `evidence/artifacts.json`: every artifact with its size and SHA-256, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArtifactsJson {
    /// Always [`ARTIFACTS_FORMAT`].
    pub format: &'static str,
    /// The artifacts, sorted by their path inside the evidence directory.
    pub artifacts: Vec<ArtifactJson>,
}

impl ArtifactsJson {
    /// Returns the document of `artifacts`, sorted by path.
    pub fn new(mut artifacts: Vec<ArtifactJson>) -> ArtifactsJson {
        artifacts.sort_by(|a, b| a.file.cmp(&b.file));
        ArtifactsJson {
            format: ARTIFACTS_FORMAT,
            artifacts,
        }
    }
}

/// Returns `text` with what differs between runs taken out, one line at a time, each ended
/// by a newline: the places in `places` (an absolute path and the name to show instead),
/// then any other absolute path, wall-clock times and dates, durations and process ids. The
/// rules are the core's one text normalizer ([`Normalizer`], docs/process.md).
///
/// ```
/// use simtape_eval::evidence::normalize_log;
/// let raw = "2026-11-25T08:30:24Z pid 4242 wrote /home/ci/x/out.txt in 1.5s";
/// let places = [("/home/ci/x".to_string(), "<scenario>".to_string())];
/// assert_eq!(normalize_log(raw, &places), "<timestamp> pid <pid> wrote <scenario>/out.txt in <duration>\n");
/// ```
pub fn normalize_log(text: &str, places: &[(String, String)]) -> String {
    let normalizer = places.iter().fold(
        Normalizer::new().absolute_paths(),
        |normalizer, (path, name)| normalizer.place(path.as_str(), name.as_str()),
    );
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(&normalizer.text(line));
        out.push('\n');
    }
    out
}

/// Returns the words of `text` that [`normalize_log`] would change: empty for a log that
/// is normalized ("no unscrubbed nondeterministic fields").
pub fn unscrubbed(text: &str) -> Vec<String> {
    Normalizer::new().absolute_paths().changed_words(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_log_has_unscrubbed_fields_and_its_normal_form_has_none() {
        // Goal: times, durations, process ids and absolute paths are each found in a raw log
        // and replaced; words that only look alike (a version, a count, a relative path)
        // stay.
        let raw = "[2026-11-25T08:30:24.120Z] started (pid=4242) in /tmp/simtape-agent-1/work\n\
                   took 12ms, then 1.5s; PID 77 exited\n\
                   v1.2.3 wrote 3 files to src/lib.rs at 08:30:25";
        let found = unscrubbed(raw);
        assert_eq!(
            found,
            [
                "[2026-11-25T08:30:24.120Z]",
                "(pid=4242)",
                "/tmp/simtape-agent-1/work",
                "12ms,",
                "1.5s;",
                "77",
                "08:30:25"
            ]
        );
        let places = [("/tmp/simtape-agent-1".to_string(), "<work>".to_string())];
        let normal = normalize_log(raw, &places);
        assert_eq!(
            normal,
            "[<timestamp>] started (pid=<pid>) in <work>/work\n\
             took <duration>, then <duration>; PID <pid> exited\n\
             v1.2.3 wrote 3 files to src/lib.rs at <timestamp>\n"
        );
        assert!(unscrubbed(&normal).is_empty(), "{:?}", unscrubbed(&normal));
    }

    #[test]
    fn a_gate_is_failing_before_and_passing_after() {
        // Goal: the before and after runs of a gate become failing_before / passing_after;
        // a gate not run on the base tree says why, with no verdict of its own.
        let command = GateCommand {
            name: "tests".into(),
            argv: vec!["python3".into(), "-m".into(), "unittest".into()],
            cwd: "work".into(),
            expect_exit: 0,
        };
        let (failed, passed) = (
            GateExit {
                code: Some(1),
                error: None,
            },
            GateExit {
                code: Some(0),
                error: None,
            },
        );
        let test = GateTest::new(&command, Some(&passed), BaseRun::Ran(&failed));
        assert_eq!(
            (
                test.failing_before,
                test.passing_after,
                test.before_exit_code
            ),
            (Some(true), Some(true), Some(1))
        );
        let unrun = GateTest::new(&command, None, BaseRun::NotRun("replayed"));
        assert_eq!((unrun.failing_before, unrun.passing_after), (None, None));
        assert_eq!(unrun.before.as_deref(), Some("replayed"));
        assert!(unrun.error.is_some());
    }
}
