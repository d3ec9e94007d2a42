//! `simtape report diff OLD NEW`: two sweep reports compared, as data. Per scenario: the
//! failure clusters that are new, resolved or ongoing; the pass rate and pass^k of each side
//! with 95 % intervals; and, since a seed draws the same faults in both sweeps, the exact
//! paired test on the seeds both ran ([`crate::paired`]). When the seed sets differ only the
//! common seeds are compared, and the diff says how many were left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cluster::ClusterKey;
use super::report::{ScenarioResults, SeedResult, SweepReport};
use crate::estimate::{binomial_checked, ConfidenceInterval, KRow};
use crate::paired::{sign_test, Shift, SignTest};
use crate::VerdictKind;

/// The diff's format tag.
pub const DIFF_FORMAT: &str = "simtape-sweep-diff/1";

/// The k the diff gives pass^k for, when k ≤ the common seeds.
const K_VALUES: [u64; 4] = [1, 2, 5, 10];

/// Two sweeps compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepDiff {
    /// Always [`DIFF_FORMAT`].
    pub format: String,
    /// The scenarios both reports ran, by name.
    pub scenarios: Vec<ScenarioDiff>,
    /// Scenarios only the old report ran.
    pub only_old: Vec<String>,
    /// Scenarios only the new report ran.
    pub only_new: Vec<String>,
}

/// One scenario in both sweeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioDiff {
    /// The scenario's name.
    pub name: String,
    /// Whether the scenario's source changed between the sweeps (its digest differs): the
    /// change being measured, usually.
    pub scenario_changed: bool,
    /// The seeds both sweeps ran: everything below is over these.
    pub common_seeds: u64,
    /// Seeds only the old sweep ran (left out).
    pub only_old_seeds: u64,
    /// Seeds only the new sweep ran (left out).
    pub only_new_seeds: u64,
    /// The old sweep on the common seeds.
    pub old: SweepSide,
    /// The new sweep on the common seeds.
    pub new: SweepSide,
    /// Every cluster of either side, new first, then resolved, then ongoing.
    pub clusters: Vec<ClusterChange>,
    /// The exact paired test: `b` seeds passed before and not after, `c` the reverse.
    pub paired: SignTest,
}

/// One sweep's numbers on the common seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSide {
    /// The seeds compared.
    pub runs: u64,
    /// Those that passed.
    pub passed: u64,
    /// pass^k at k = 1 (the pass rate) and the other k, each with its interval.
    pub k: Vec<PassHatK>,
}

/// pass^k with its 95 % interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassHatK {
    /// k.
    pub k: u64,
    /// The exact unbiased estimate, e.g. `"1967/24975"`.
    pub pass_hat_k: String,
    /// The estimate as a decimal.
    pub pass_hat_k_value: f64,
    /// The pass rate's Wilson interval raised to the k-th power.
    pub interval: ConfidenceInterval,
}

/// Whether a cluster is new, gone or still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterStatus {
    /// Only the new sweep has it.
    New,
    /// Only the old sweep has it.
    Resolved,
    /// Both have it.
    Ongoing,
}

impl ClusterStatus {
    /// Returns the status as printed.
    pub fn label(self) -> &'static str {
        match self {
            ClusterStatus::New => "new",
            ClusterStatus::Resolved => "resolved",
            ClusterStatus::Ongoing => "ongoing",
        }
    }
}

/// One failure cluster across the two sweeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterChange {
    /// New, resolved or ongoing.
    pub status: ClusterStatus,
    /// The cluster.
    pub cluster: ClusterKey,
    /// Its seeds in the old sweep (common seeds only).
    pub old_seeds: Vec<u64>,
    /// Its seeds in the new sweep (common seeds only).
    pub new_seeds: Vec<u64>,
}

impl SweepDiff {
    /// Compares two sweep reports.
    pub fn of(old: &SweepReport, new: &SweepReport) -> SweepDiff {
        let names = |report: &SweepReport| -> BTreeMap<String, usize> {
            (report.scenarios.iter().enumerate())
                .map(|(i, s)| (s.name.clone(), i))
                .collect()
        };
        let (old_names, new_names) = (names(old), names(new));
        let scenarios = old_names
            .iter()
            .filter_map(|(name, &i)| {
                let j = *new_names.get(name)?;
                Some(scenario_diff(&old.scenarios[i], &new.scenarios[j]))
            })
            .collect();
        let only = |a: &BTreeMap<String, usize>, b: &BTreeMap<String, usize>| {
            a.keys()
                .filter(|name| !b.contains_key(*name))
                .cloned()
                .collect()
        };
        SweepDiff {
            format: DIFF_FORMAT.to_string(),
            scenarios,
            only_old: only(&old_names, &new_names),
            only_new: only(&new_names, &old_names),
        }
    }

    /// Returns whether the new sweep is worse: a new failure cluster, or a paired test that
    /// says less robust.
    pub fn worse(&self) -> bool {
        self.scenarios.iter().any(|s| {
            s.paired.direction == Shift::LessRobust
                || s.clusters.iter().any(|c| c.status == ClusterStatus::New)
        })
    }
}

fn scenario_diff(old: &ScenarioResults, new: &ScenarioResults) -> ScenarioDiff {
    let by_seed = |s: &ScenarioResults| -> BTreeMap<u64, SeedResult> {
        s.results.iter().map(|r| (r.seed, r.clone())).collect()
    };
    let (old_seeds, new_seeds) = (by_seed(old), by_seed(new));
    let common: Vec<(&SeedResult, &SeedResult)> = old_seeds
        .iter()
        .filter_map(|(seed, a)| Some((a, new_seeds.get(seed)?)))
        .collect();
    let passed = |r: &SeedResult| r.verdict == VerdictKind::Pass;
    let b = common
        .iter()
        .filter(|(a, z)| passed(a) && !passed(z))
        .count() as u64;
    let c = common
        .iter()
        .filter(|(a, z)| !passed(a) && passed(z))
        .count() as u64;
    let runs = common.len() as u64;
    ScenarioDiff {
        name: old.name.clone(),
        scenario_changed: old.sha256 != new.sha256,
        common_seeds: runs,
        only_old_seeds: old_seeds.len() as u64 - runs,
        only_new_seeds: new_seeds.len() as u64 - runs,
        old: side(common.iter().map(|(a, _)| *a)),
        new: side(common.iter().map(|(_, z)| *z)),
        clusters: clusters(&common),
        paired: sign_test(b, c),
    }
}

fn side<'a>(results: impl Iterator<Item = &'a SeedResult>) -> SweepSide {
    let (mut runs, mut passed) = (0u64, 0u64);
    for result in results {
        runs += 1;
        passed += u64::from(result.verdict == VerdictKind::Pass);
    }
    let k = if runs == 0 {
        Vec::new()
    } else {
        let interval = ConfidenceInterval::wilson(runs, passed);
        K_VALUES
            .iter()
            .filter(|&&k| k <= runs && binomial_checked(runs, k).is_some())
            .map(|&k| {
                let row = KRow::new(runs, passed, k);
                PassHatK {
                    k,
                    pass_hat_k: row.pass_hat_k,
                    pass_hat_k_value: row.pass_hat_k_value,
                    interval: interval.power(k),
                }
            })
            .collect()
    };
    SweepSide { runs, passed, k }
}

fn clusters(common: &[(&SeedResult, &SeedResult)]) -> Vec<ClusterChange> {
    let mut seeds: BTreeMap<ClusterKey, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for (old, new) in common {
        if let Some(key) = ClusterKey::of(old) {
            seeds.entry(key).or_default().0.push(old.seed);
        }
        if let Some(key) = ClusterKey::of(new) {
            seeds.entry(key).or_default().1.push(new.seed);
        }
    }
    let mut list: Vec<ClusterChange> = seeds
        .into_iter()
        .map(|(cluster, (old_seeds, new_seeds))| ClusterChange {
            status: match (old_seeds.is_empty(), new_seeds.is_empty()) {
                (true, _) => ClusterStatus::New,
                (_, true) => ClusterStatus::Resolved,
                _ => ClusterStatus::Ongoing,
            },
            cluster,
            old_seeds,
            new_seeds,
        })
        .collect();
    // Stable: within a status, the clusters keep their key order.
    list.sort_by_key(|change| change.status);
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{Reason, SeedRange};

    fn result(seed: u64, failure: Option<&str>) -> SeedResult {
        SeedResult {
            seed,
            verdict: match failure {
                None => VerdictKind::Pass,
                Some(_) => VerdictKind::Fail,
            },
            reason: failure.map(|message| Reason {
                kind: "verifier".into(),
                message: message.into(),
            }),
            end_ns: 0,
            events: 0,
            tape: None,
            replay: None,
            model_calls: None,
            harness: None,
            retries: None,
            properties: Vec::new(),
        }
    }

    fn report(results: Vec<SeedResult>) -> SweepReport {
        let scenario = ScenarioResults::new("s".into(), "s.toml".into(), "ab".into(), results);
        SweepReport::new(SeedRange { start: 0, end: 6 }, None, false, vec![scenario])
    }

    #[test]
    fn clusters_are_new_resolved_or_ongoing_on_the_common_seeds() {
        // Goal: a cluster only before is resolved, only after is new, in both ongoing; the
        // paired counts come from the seeds both ran; a seed one side lacks is left out.
        let old = report(vec![
            result(0, Some("budget: out of retries")),
            result(1, Some("budget: out of retries")),
            result(2, Some("race: lost edit")),
            result(3, None),
            result(5, Some("only old")),
        ]);
        let new = report(vec![
            result(0, None),
            result(1, None),
            result(2, Some("race: lost edit")),
            result(3, Some("timeout")),
            result(4, None),
        ]);
        let diff = SweepDiff::of(&old, &new);
        let scenario = &diff.scenarios[0];
        assert_eq!(
            (
                scenario.common_seeds,
                scenario.only_old_seeds,
                scenario.only_new_seeds
            ),
            (4, 1, 1)
        );
        let statuses: Vec<(ClusterStatus, &str)> = scenario
            .clusters
            .iter()
            .map(|c| (c.status, c.cluster.reason.as_str()))
            .collect();
        assert_eq!(
            statuses,
            [
                (ClusterStatus::New, "timeout"),
                (ClusterStatus::Resolved, "budget: out of retries"),
                (ClusterStatus::Ongoing, "race: lost edit"),
            ]
        );
        assert_eq!((scenario.paired.b, scenario.paired.c), (1, 2));
        assert_eq!((scenario.old.passed, scenario.new.passed), (1, 2));
        assert!(diff.worse(), "a new cluster makes the new sweep worse");
    }
}
