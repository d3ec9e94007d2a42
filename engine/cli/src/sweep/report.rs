//! The sweep report: one record per (scenario, seed), a summary per scenario, and the merge
//! of shard reports into the report one machine would give.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use simtape_mcp::eval::{binomial_checked, pass_at_k, pass_hat_k, Fraction, KRow};

use super::{SeedRange, Shard};

/// The report's format tag; a reader refuses any other.
pub(crate) const FORMAT: &str = "simtape-sweep/1";

/// The k the summary estimates pass@k and pass^k for (plus n itself), when k ≤ n.
const K_VALUES: [u64; 4] = [1, 2, 5, 10];

/// A whole sweep (or one shard of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SweepReport {
    /// Always [`FORMAT`].
    pub(crate) format: String,
    /// The seed range the sweep was asked for (all shards share it).
    pub(crate) seeds: SeedRange,
    /// The shard this report covers; `None` for the whole range.
    pub(crate) shard: Option<Shard>,
    /// True when the sweep was stopped before every seed ran.
    pub(crate) partial: bool,
    /// One entry per scenario, sorted by name.
    pub(crate) scenarios: Vec<ScenarioResults>,
}

/// Every seed of one scenario, and their summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScenarioResults {
    /// The scenario's name.
    pub(crate) name: String,
    /// The scenario file, as given on the command line.
    pub(crate) path: String,
    /// The SHA-256 of the scenario, so shards of different scenario files never merge.
    pub(crate) sha256: String,
    /// Derived from `results`.
    pub(crate) summary: Summary,
    /// One record per seed, sorted by seed.
    pub(crate) results: Vec<SeedResult>,
}

/// What one seed's run decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    /// The run completed, at least one verifier ran and every verifier held.
    Pass,
    /// The run completed but a verifier did not hold, or none ran.
    Fail,
    /// The run could not complete: deadlock, limit, task panic, failed step, unmatched
    /// replay, denied egress, fs escape.
    Error,
}

/// Why a seed did not pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Reason {
    /// A short machine-readable kind, e.g. `deadlock`, `step_failed`.
    pub(crate) kind: String,
    /// The whole message.
    pub(crate) message: String,
}

impl Reason {
    /// Returns the first line of the message, the part failures are grouped by.
    pub(crate) fn first_line(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

/// One (scenario, seed) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SeedResult {
    pub(crate) seed: u64,
    pub(crate) verdict: Verdict,
    /// `None` exactly when the verdict is `pass`.
    pub(crate) reason: Option<Reason>,
    /// Virtual time at the end, in nanoseconds.
    pub(crate) end_ns: u64,
    /// Timer events popped.
    pub(crate) events: u64,
    /// The kept tape of a failing seed (with `--out`).
    pub(crate) tape: Option<String>,
    /// The command that reproduces a failing seed.
    pub(crate) replay: Option<String>,
}

/// The per-scenario numbers, derived from its results only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub(crate) runs: u64,
    pub(crate) passed: u64,
    /// The exact pass rate, e.g. `"39/40"`; `None` with no runs.
    pub(crate) pass_rate: Option<String>,
    pub(crate) pass_rate_value: Option<f64>,
    /// pass@k and pass^k over seeds (each seed one trial), for k in {1, 2, 5, 10, n}, k ≤ n,
    /// where the exact u128 arithmetic does not overflow.
    pub(crate) k: Vec<KRow>,
    /// Failing seeds grouped by (kind, first line of the message), most frequent first.
    pub(crate) failures: Vec<FailureGroup>,
}

/// The failing seeds that share a reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FailureGroup {
    pub(crate) kind: String,
    pub(crate) message: String,
    pub(crate) count: u64,
    pub(crate) seeds: Vec<u64>,
}

impl Summary {
    /// Summarizes `results`.
    pub(crate) fn of(results: &[SeedResult]) -> Summary {
        let runs = results.len() as u64;
        let passed = results
            .iter()
            .filter(|r| r.verdict == Verdict::Pass)
            .count() as u64;
        let rate = (runs > 0).then(|| Fraction::new(u128::from(passed), u128::from(runs)));
        Summary {
            runs,
            passed,
            pass_rate: rate.map(|r| r.to_string()),
            pass_rate_value: rate.map(Fraction::to_f64),
            k: k_rows(runs, passed),
            failures: failure_groups(results),
        }
    }
}

fn k_rows(n: u64, c: u64) -> Vec<KRow> {
    let mut ks: Vec<u64> = K_VALUES.iter().copied().chain([n]).collect();
    ks.retain(|&k| k >= 1 && k <= n && binomial_checked(n, k).is_some());
    ks.sort_unstable();
    ks.dedup();
    ks.into_iter()
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
        .collect()
}

fn failure_groups(results: &[SeedResult]) -> Vec<FailureGroup> {
    let mut groups: BTreeMap<(&str, &str), Vec<u64>> = BTreeMap::new();
    for result in results {
        if let Some(reason) = &result.reason {
            groups
                .entry((&reason.kind, reason.first_line()))
                .or_default()
                .push(result.seed);
        }
    }
    let mut list: Vec<FailureGroup> = groups
        .into_iter()
        .map(|((kind, message), seeds)| FailureGroup {
            kind: kind.to_string(),
            message: message.to_string(),
            count: seeds.len() as u64,
            seeds,
        })
        .collect();
    // Stable sort: equal counts keep the BTreeMap's (kind, message) order.
    list.sort_by_key(|group| std::cmp::Reverse(group.count));
    list
}

impl SweepReport {
    /// Returns whether every seed that ran passed.
    pub(crate) fn all_passed(&self) -> bool {
        self.scenarios
            .iter()
            .all(|s| s.summary.passed == s.summary.runs)
    }

    /// Returns the number of runs.
    pub(crate) fn runs(&self) -> u64 {
        self.scenarios.iter().map(|s| s.summary.runs).sum()
    }
}

/// Joins the reports of the shards of one sweep into the report of the whole sweep. The
/// shards must share the seed range, the shard count and the scenarios, and cover every
/// shard exactly once.
pub(crate) fn merge(reports: Vec<SweepReport>) -> Result<SweepReport, String> {
    let first = reports.first().ok_or("merge needs at least one report")?;
    let seeds = first.seeds;
    let count = first.shard.unwrap_or(Shard::ALL).count;
    let mut covered = vec![false; usize::try_from(count).map_err(|_| "too many shards")?];
    let mut scenarios: Vec<ScenarioResults> = first
        .scenarios
        .iter()
        .map(|s| ScenarioResults {
            results: Vec::new(),
            ..s.clone()
        })
        .collect();
    let mut partial = false;
    for (position, report) in reports.iter().enumerate() {
        let shard = report.shard.unwrap_or(Shard::ALL);
        let label = format!("report {}", position + 1);
        if report.format != FORMAT {
            return Err(format!(
                "{label}: format {:?}, expected {FORMAT:?}",
                report.format
            ));
        }
        if report.seeds != seeds || shard.count != count {
            return Err(format!(
                "{label}: seeds {} shard {shard} do not belong to the sweep of seeds {seeds} in {count} shard(s)",
                report.seeds
            ));
        }
        let slot = &mut covered[usize::try_from(shard.index).expect("index < count")];
        if std::mem::replace(slot, true) {
            return Err(format!("{label}: shard {shard} appears twice"));
        }
        if !same_scenarios(&scenarios, &report.scenarios) {
            return Err(format!("{label}: its scenarios differ from report 1's"));
        }
        partial |= report.partial;
        for (into, from) in scenarios.iter_mut().zip(&report.scenarios) {
            into.results.extend(from.results.iter().cloned());
        }
    }
    if let Some(missing) = covered.iter().position(|c| !c) {
        return Err(format!("shard {missing}/{count} is missing"));
    }
    for scenario in &mut scenarios {
        scenario.results.sort_by_key(|r| r.seed);
        scenario.summary = Summary::of(&scenario.results);
    }
    Ok(SweepReport {
        format: FORMAT.to_string(),
        seeds,
        shard: None,
        partial,
        scenarios,
    })
}

fn same_scenarios(a: &[ScenarioResults], b: &[ScenarioResults]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.name == y.name && x.path == y.path && x.sha256 == y.sha256)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(seed: u64, pass: bool) -> SeedResult {
        SeedResult {
            seed,
            verdict: if pass { Verdict::Pass } else { Verdict::Error },
            reason: (!pass).then(|| Reason {
                kind: "deadlock".into(),
                message: "deadlock at t=1ms\ndetail".into(),
            }),
            end_ns: seed,
            events: 1,
            tape: None,
            replay: None,
        }
    }

    #[test]
    fn summary_counts_estimates_and_groups() {
        // Goal: the summary's rate, k rows and failure groups come out exact.
        let results: Vec<SeedResult> = (0..4).map(|s| result(s, s % 2 == 0)).collect();
        let summary = Summary::of(&results);
        assert_eq!(summary.pass_rate.as_deref(), Some("1/2"));
        let ks: Vec<u64> = summary.k.iter().map(|row| row.k).collect();
        assert_eq!(ks, [1, 2, 4]);
        assert_eq!(summary.k[1].pass_at_k, "5/6");
        assert_eq!(summary.failures.len(), 1);
        assert_eq!(summary.failures[0].message, "deadlock at t=1ms");
        assert_eq!(summary.failures[0].seeds, [1, 3]);
        assert_eq!(Summary::of(&[]).pass_rate, None);
    }
}
