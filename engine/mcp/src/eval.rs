//! `simtape mcp eval`: scores n final states of one world against its goal.
//!
//! With c passing states out of n, for every k in 1..=n (mcp-llm.md §6):
//!
//! * pass@k = 1 − C(n−c, k) / C(n, k): the chance at least one of k trials passes (Chen et al.
//!   2021, the unbiased estimator, not the biased 1 − (1 − c/n)^k);
//! * pass^k = C(c, k) / C(n, k): the chance all k trials pass (τ-bench, Yao et al. 2024).
//!
//! Both are computed exactly as reduced fractions of `u128`s ([`Fraction`]); decimals appear
//! only when rendering. `n` is capped by [`crate::limits::EVAL_STATES_MAX`] so C(n, k) fits.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::EVAL_STATES_MAX;
use crate::world::{score, Scored, World};

/// An exact non-negative fraction, always reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fraction {
    /// The numerator.
    pub numerator: u128,
    /// The denominator, never 0.
    pub denominator: u128,
}

impl Fraction {
    /// Returns `numerator / denominator` reduced. The denominator must not be 0.
    ///
    /// ```
    /// use simtape_mcp::eval::Fraction;
    /// assert_eq!(Fraction::new(10, 12).to_string(), "5/6");
    /// assert_eq!(Fraction::new(4, 4).to_string(), "1");
    /// ```
    pub fn new(numerator: u128, denominator: u128) -> Fraction {
        assert!(denominator > 0, "a fraction needs a non-zero denominator");
        let divisor = gcd(numerator, denominator);
        Fraction {
            numerator: numerator / divisor,
            denominator: denominator / divisor,
        }
    }

    /// Returns the value as a float, for display only.
    pub fn to_f64(self) -> f64 {
        self.numerator as f64 / self.denominator as f64
    }
}

impl std::fmt::Display for Fraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.denominator == 1 {
            write!(f, "{}", self.numerator)
        } else {
            write!(f, "{}/{}", self.numerator, self.denominator)
        }
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// Returns C(n, k) exactly (0 when k > n). Exact for n up to [`EVAL_STATES_MAX`]: each step
/// multiplies C(n, i) by n − i before dividing, and C(n, i)·n stays far below 2^128 there.
///
/// ```
/// use simtape_mcp::eval::binomial;
/// assert_eq!(binomial(4, 2), 6);
/// assert_eq!(binomial(2, 3), 0);
/// ```
pub fn binomial(n: u64, k: u64) -> u128 {
    binomial_checked(n, k).expect("C(n, k) fits in u128 for n up to EVAL_STATES_MAX")
}

/// Returns C(n, k) exactly, or `None` when it (or a step towards it) overflows `u128`.
/// When `binomial_checked(n, k)` is `Some`, [`pass_at_k`] and [`pass_hat_k`] at `(n, c, k)`
/// are exact for every `c ≤ n`: their other binomials are smaller, step by step. Seed sweeps
/// use it to keep only the k whose estimates are exact.
///
/// ```
/// use simtape_mcp::eval::binomial_checked;
/// assert_eq!(binomial_checked(10_000, 10).is_some(), true);
/// assert_eq!(binomial_checked(1_000_000, 10), None);
/// ```
pub fn binomial_checked(n: u64, k: u64) -> Option<u128> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    let mut value: u128 = 1;
    for i in 0..k {
        value = value.checked_mul(u128::from(n - i))? / u128::from(i + 1);
    }
    Some(value)
}

/// Returns pass@k = 1 − C(n−c, k)/C(n, k).
///
/// ```
/// use simtape_mcp::eval::pass_at_k;
/// assert_eq!(pass_at_k(4, 2, 2).to_string(), "5/6");
/// ```
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Fraction {
    let all = binomial(n, k);
    Fraction::new(all - binomial(n - c, k), all)
}

/// Returns pass^k = C(c, k)/C(n, k).
///
/// ```
/// use simtape_mcp::eval::pass_hat_k;
/// assert_eq!(pass_hat_k(4, 2, 2).to_string(), "1/6");
/// ```
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Fraction {
    Fraction::new(binomial(c, k), binomial(n, k))
}

/// One k's estimates, exact and as decimals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KRow {
    /// k.
    pub k: u64,
    /// pass@k as an exact fraction, e.g. `"5/6"`.
    pub pass_at_k: String,
    /// pass@k as a decimal.
    pub pass_at_k_value: f64,
    /// pass^k as an exact fraction.
    pub pass_hat_k: String,
    /// pass^k as a decimal.
    pub pass_hat_k_value: f64,
}

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

/// The eval report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
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

/// Scores states (path, parsed JSON) against the world's goal. Errors name the problem.
pub fn evaluate(world: &World, states: &[(PathBuf, Value)]) -> Result<EvalReport, String> {
    if states.is_empty() {
        return Err("eval needs at least one --state".into());
    }
    if states.len() > EVAL_STATES_MAX {
        return Err(format!(
            "eval takes at most {EVAL_STATES_MAX} states, got {}",
            states.len()
        ));
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
    let k = (1..=n)
        .map(|k| {
            let (at, hat) = (pass_at_k(n, c, k), pass_hat_k(n, c, k));
            KRow {
                k,
                pass_at_k: at.to_string(),
                pass_at_k_value: at.to_f64(),
                pass_hat_k: hat.to_string(),
                pass_hat_k_value: hat.to_f64(),
            }
        })
        .collect();
    let rate = Fraction::new(u128::from(c), u128::from(n));
    Ok(EvalReport {
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

impl EvalReport {
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
            let at = format!("{} = {:.4}", row.pass_at_k, row.pass_at_k_value);
            let hat = format!("{} = {:.4}", row.pass_hat_k, row.pass_hat_k_value);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimators_match_hand_computed_values() {
        // Goal: the unbiased estimators give the textbook values, exactly.
        assert_eq!(pass_at_k(4, 2, 1), Fraction::new(1, 2));
        assert_eq!(pass_hat_k(4, 2, 1), Fraction::new(1, 2));
        assert_eq!(pass_at_k(4, 2, 3), Fraction::new(1, 1));
        assert_eq!(pass_hat_k(4, 2, 3), Fraction::new(0, 1));
        assert_eq!(pass_at_k(5, 0, 5), Fraction::new(0, 1));
        assert_eq!(pass_hat_k(5, 5, 5), Fraction::new(1, 1));
        // C(100, 50) is about 1.0e29: exact, no overflow at the cap.
        assert_eq!(binomial(100, 50), 100_891_344_545_564_193_334_812_497_256);
        assert_eq!(pass_hat_k(100, 99, 99), Fraction::new(1, 100));
    }
}
