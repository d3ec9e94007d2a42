//! `simtape mcp eval`: scores n final states of one world against its goal.
//!
//! With c passing states out of n, it gives pass@k and pass^k for every k in 1..=n
//! (mcp-llm.md §6), exactly, with the estimators of [`crate::estimate`]. `n` is capped by
//! [`simtape_mcp::limits::EVAL_STATES_MAX`] so every C(n, k) fits.
//!
//! It lives here, above `simtape-mcp`, because it decides what runs came to (the layering is
//! core ← mcp ← eval ← agent ← serve ← cli): the world and its scoring are MCP's, pass@k and
//! the reports are eval's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use simtape_mcp::limits::EVAL_STATES_MAX;
use simtape_mcp::world::{score, Scored, World};

use crate::estimate::{Fraction, KRow};

/// One scored state file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunScore {
    /// The state file.
    pub state: PathBuf,
    /// Its score.
    #[serde(flatten)]
    pub scored: Scored,
}

/// How often one path failed across the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathFailures {
    /// The JSON pointer.
    pub path: String,
    /// `goal` (an assertion failed) or `collateral` (changed outside what the goal allows).
    pub reason: String,
    /// In how many runs.
    pub runs: u64,
}

/// The scores of n final states of one world: pass rate, pass@k and pass^k, failures by
/// path, each state's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorldEvalReport {
    /// The world's name.
    pub world: String,
    /// n, the number of states.
    pub n: u64,
    /// c, the number that passed.
    pub c: u64,
    /// c/n exact.
    pub pass_rate: String,
    /// c/n as a decimal.
    pub pass_rate_value: f64,
    /// pass@k and pass^k for k = 1..=n.
    pub k: Vec<KRow>,
    /// Failures per path, most frequent first (ties in path order).
    pub failures: Vec<PathFailures>,
    /// Each state's score.
    pub runs: Vec<RunScore>,
}

/// Why states cannot be scored: a usage error, fatal to the eval only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// No state was given.
    #[error("eval needs at least one --state")]
    NoStates,
    /// More states than the estimators keep exact.
    #[error("eval takes at most {EVAL_STATES_MAX} states, got {given}")]
    TooManyStates {
        /// How many were given.
        given: usize,
    },
}

// Every binomial of pass@k and pass^k stays exact up to the estimators' bound.
const _: () = assert!(EVAL_STATES_MAX as u64 <= crate::estimate::TRIALS_EXACT_MAX);

/// Scores states (path, parsed JSON) against the world's goal.
pub fn evaluate(world: &World, states: &[(PathBuf, Value)]) -> Result<WorldEvalReport, EvalError> {
    if states.is_empty() {
        return Err(EvalError::NoStates);
    }
    if states.len() > EVAL_STATES_MAX {
        return Err(EvalError::TooManyStates {
            given: states.len(),
        });
    }
    let spec = &world.spec;
    let runs: Vec<RunScore> = states
        .iter()
        .map(|(path, state)| RunScore {
            state: path.clone(),
            scored: score(&spec.goal, &spec.initial_state, state),
        })
        .collect();
    let n = runs.len() as u64;
    let c = runs.iter().filter(|r| r.scored.passed).count() as u64;
    let k = (1..=n).map(|k| KRow::new(n, c, k)).collect();
    let rate = Fraction::new(u128::from(c), u128::from(n));
    Ok(WorldEvalReport {
        world: spec.name.clone(),
        n,
        c,
        pass_rate: rate.to_string(),
        pass_rate_value: rate.to_f64(),
        k,
        failures: failures(&runs),
        runs,
    })
}

fn failures(runs: &[RunScore]) -> Vec<PathFailures> {
    let mut counts: BTreeMap<(String, &str), u64> = BTreeMap::new();
    for run in runs {
        for assertion in run.scored.assertions.iter().filter(|a| !a.passed) {
            *counts.entry((assertion.path.clone(), "goal")).or_default() += 1;
        }
        for change in &run.scored.collateral_damage {
            *counts
                .entry((change.path.clone(), "collateral"))
                .or_default() += 1;
        }
    }
    let mut list: Vec<PathFailures> = counts
        .into_iter()
        .map(|((path, reason), runs)| PathFailures {
            path,
            reason: reason.into(),
            runs,
        })
        .collect();
    // Stable sort: equal counts keep the BTreeMap's path order.
    list.sort_by_key(|failure| std::cmp::Reverse(failure.runs));
    list
}

impl WorldEvalReport {
    /// Renders the report for people.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "eval {}: {} of {} run(s) passed, pass rate {} = {:.4}",
            self.world, self.c, self.n, self.pass_rate, self.pass_rate_value
        );
        let _ = writeln!(out, "{:>4}  {:<24}  pass^k", "k", "pass@k");
        for row in &self.k {
            let (at, hat) = row.cells();
            let _ = writeln!(out, "{:>4}  {at:<24}  {hat}", row.k);
        }
        if !self.failures.is_empty() {
            let _ = writeln!(out, "failures by path:");
            for failure in &self.failures {
                let _ = writeln!(
                    out,
                    "  {} ({}): {} run(s)",
                    failure.path, failure.reason, failure.runs
                );
            }
        }
        let _ = writeln!(out, "runs:");
        for run in &self.runs {
            let verdict = if run.scored.passed { "PASS" } else { "FAIL" };
            let _ = write!(out, "  {verdict} {}", run.state.display());
            let failed = run.scored.failed_paths();
            if !failed.is_empty() {
                let _ = write!(out, ": {}", failed.join(", "));
            }
            out.push('\n');
        }
        out
    }
}
