//! The harness's invariants, checked on the state files after every session, and the
//! verifier results they and the completion gate become. Each broken invariant is a named
//! FAIL, listed before the gate, so it is what a failing verdict names.

use std::collections::{BTreeMap, BTreeSet};

use simtape::cap::fs::FsHandle;
use simtape_eval::harness::HarnessOutcome;
use simtape_eval::VerifierResult;

use super::files::{self, Checkpoint, FeatureList, CHECKPOINTS, FEATURE_LIST, PROGRESS};
use super::policy::HarnessSpec;
use crate::ctx::Ctx;
use crate::log::AgentEvent;

/// The invariants' names, as their verifier results read.
pub(crate) const INVARIANT_VALIDATED: &str = "harness: no feature passes without validation";
pub(crate) const INVARIANT_HANDOFF: &str =
    "harness: every session ends with a checkpoint or a crash report";
pub(crate) const INVARIANT_RESUME: &str =
    "harness: a session after a crash starts from the last good checkpoint";
pub(crate) const INVARIANT_PROGRESS: &str = "harness: the progress log is append-only";
pub(crate) const GATE: &str = "harness: done (every required feature passing)";

/// What the harness keeps outside the files, to check them against.
#[derive(Debug, Default)]
pub(crate) struct Book {
    /// Features with a held validation record.
    pub(crate) validated: BTreeSet<String>,
    /// Sessions the crash fault killed.
    pub(crate) crashed: BTreeSet<u32>,
    /// The progress log as the last session left it.
    pub(crate) progress: String,
    /// The invariants broken so far, each with where it broke.
    pub(crate) broken: BTreeMap<&'static str, String>,
}

impl Book {
    /// Notes that `name` broke (the first break of each is kept).
    pub(crate) fn broke(&mut self, name: &'static str, saw: String) {
        self.broken.entry(name).or_insert(saw);
    }
}

/// Why the session loop stopped.
pub(crate) enum Stop {
    Done,
    RunsSpent,
    RetriesSpent,
    FailFast(String),
    /// The state cannot be gone on from (a feature list the agent garbled, a manifest gone).
    Halted(String),
}

/// Checks the invariants after `session`; the first break of each is kept, with the session.
/// A state file the agent made unreadable breaks the invariant that reads it.
pub(crate) async fn check_invariants(fs: &FsHandle, session: u32, book: &mut Book) {
    let mut broken = Vec::new();
    match files::read_json::<FeatureList>(fs, FEATURE_LIST).await {
        Ok(Some(list)) => {
            let unvalidated: Vec<&str> = list
                .features
                .iter()
                .filter(|e| e.passes && !book.validated.contains(&e.id))
                .map(|e| e.id.as_str())
                .collect();
            if !unvalidated.is_empty() {
                broken.push((
                    INVARIANT_VALIDATED,
                    format!(
                        "after session {session}: {} passing with no held validation record",
                        unvalidated.join(", ")
                    ),
                ));
            }
        }
        Ok(None) => broken.push((
            INVARIANT_VALIDATED,
            format!("after session {session}: {FEATURE_LIST} is gone"),
        )),
        Err(error) => broken.push((
            INVARIANT_VALIDATED,
            format!("after session {session}: {error}"),
        )),
    }
    match files::read_lines::<Checkpoint>(fs, CHECKPOINTS).await {
        Ok(checkpoints) => {
            let ended: BTreeSet<u32> = checkpoints.iter().map(|c| c.session).collect();
            let lost: Vec<String> = (0..=session)
                .filter(|s| !ended.contains(s) && !book.crashed.contains(s))
                .map(|s| s.to_string())
                .collect();
            if !lost.is_empty() {
                broken.push((
                    INVARIANT_HANDOFF,
                    format!(
                        "session(s) {} left neither a checkpoint nor a crash report",
                        lost.join(", ")
                    ),
                ));
            }
        }
        Err(error) => broken.push((
            INVARIANT_HANDOFF,
            format!("after session {session}: {error}"),
        )),
    }
    match files::read_text(fs, PROGRESS).await {
        Ok(progress) if progress.starts_with(&book.progress) => book.progress = progress,
        Ok(progress) => {
            broken.push((
                INVARIANT_PROGRESS,
                format!("after session {session}: earlier lines of {PROGRESS} were changed"),
            ));
            book.progress = progress;
        }
        Err(error) => broken.push((
            INVARIANT_PROGRESS,
            format!("after session {session}: {error}"),
        )),
    }
    for (name, saw) in broken {
        book.broke(name, saw);
    }
}

/// The harness's verifier results: each invariant, then the gate.
pub(crate) async fn results(
    stop: &Stop,
    outcome: &HarnessOutcome,
    unvalidated: &[String],
    book: &Book,
    spec: &HarnessSpec,
    ctx: &Ctx,
) -> Vec<VerifierResult> {
    let line = spec.policy.line;
    let gate_saw = match stop {
        Stop::Done if !unvalidated.is_empty() => format!(
            "declared done after {} session(s) with {} passing unvalidated",
            outcome.sessions,
            unvalidated.join(", ")
        ),
        Stop::Done => format!(
            "every required feature passing after {} session(s)",
            outcome.sessions
        ),
        Stop::RunsSpent => format!(
            "not done after max_runs = {} session(s)",
            spec.policy.max_runs
        ),
        Stop::RetriesSpent => format!(
            "stopped: retry_budget = {} spent after {} session(s)",
            spec.policy.retry_budget, outcome.sessions
        ),
        Stop::FailFast(why) => format!("stopped (fail fast): {why}"),
        Stop::Halted(why) => format!("stopped: {why}"),
    };
    let pending: Vec<&str> = outcome
        .features
        .iter()
        .filter(|(_, passes)| !**passes)
        .map(|(id, _)| id.as_str())
        .collect();
    let gate_saw = if outcome.done || pending.is_empty() {
        gate_saw
    } else {
        format!("{gate_saw}; pending: {}", pending.join(", "))
    };
    // The invariants first: when one broke, it is what the verdict names.
    let mut results = Vec::new();
    for name in [
        INVARIANT_VALIDATED,
        INVARIANT_HANDOFF,
        INVARIANT_RESUME,
        INVARIANT_PROGRESS,
    ] {
        let (held, saw) = match book.broken.get(name) {
            Some(saw) => (false, saw.clone()),
            None => (true, "held after every session".to_string()),
        };
        results.push(VerifierResult {
            name: name.into(),
            line,
            held,
            saw,
        });
    }
    results.push(VerifierResult {
        name: GATE.into(),
        line,
        held: outcome.done,
        saw: gate_saw,
    });
    for result in &results {
        ctx.record(AgentEvent::Verifier {
            name: result.name.clone(),
            held: result.held,
            saw: result.saw.clone(),
        })
        .await;
    }
    results
}
