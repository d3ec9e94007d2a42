//! The sweep report: one record per (scenario, seed), a summary per scenario, and the merge
//! of shard reports into the report one machine would give.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use simtape::RunSummary;

use super::{SeedRange, Shard};
use crate::estimate::{binomial_checked, Fraction, KRow};
use crate::{Verdict, VerdictKind};

/// The report's format tag; a reader refuses any other.
pub const FORMAT: &str = "simtape-sweep/1";

/// The version of the engine that ran the seeds (the workspace shares one version), so the
/// shards of a sweep run by different engines never merge.
pub const ENGINE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The k the summary estimates pass@k and pass^k for (plus n itself), when k ≤ n.
const K_VALUES: [u64; 4] = [1, 2, 5, 10];

/// A whole sweep (or one shard of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// Always [`FORMAT`].
    pub format: String,
    /// The engine that ran the seeds ([`ENGINE_VERSION`]); empty in a report written before
    /// reports carried it.
    #[serde(default)]
    pub engine: String,
    /// The seed range the sweep was asked for (all shards share it).
    pub seeds: SeedRange,
    /// The shard this report covers; `None` for the whole range.
    pub shard: Option<Shard>,
    /// True when the sweep was stopped before every seed ran.
    pub partial: bool,
    /// One entry per scenario, sorted by name (one per agent, `S@AGENT`, when a sweep runs
    /// several agents).
    pub scenarios: Vec<ScenarioResults>,
    /// Every two agents of a scenario run by several, compared seed by seed; derived from
    /// `scenarios` (so outside the digest) and absent when no scenario has agents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<super::agents::AgentPair>,
    /// The hex SHA-256 over everything above but the summaries (which the results decide):
    /// a report edited by hand no longer matches it, and `merge` refuses it. Empty in a
    /// report written before reports carried it.
    #[serde(default)]
    pub digest: String,
}

/// What a report's digest covers, borrowed from it in one fixed field order.
#[derive(Serialize)]
struct Digested<'a> {
    format: &'a str,
    engine: &'a str,
    seeds: SeedRange,
    shard: Option<Shard>,
    partial: bool,
    scenarios: Vec<DigestedScenario<'a>>,
}

#[derive(Serialize)]
struct DigestedScenario<'a> {
    name: &'a str,
    path: &'a str,
    sha256: &'a str,
    results: &'a [SeedResult],
}

/// Every seed of one scenario, and their summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResults {
    /// The scenario's name.
    pub name: String,
    /// The scenario file, as given on the command line.
    pub path: String,
    /// The SHA-256 of the scenario, so shards of different scenario files never merge.
    pub sha256: String,
    /// The agent that ran it, when the sweep ran several (`--agents`, `[[agent.variant]]`);
    /// `name` is then `SCENARIO@AGENT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Derived from `results`.
    pub summary: ScenarioSummary,
    /// One record per seed, sorted by seed.
    pub results: Vec<SeedResult>,
}

/// Why a seed did not pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// A short machine-readable kind, e.g. `deadlock`, `step_failed`.
    pub kind: String,
    /// The whole message.
    pub message: String,
}

impl Reason {
    /// Returns the first line of the message, the part failures are grouped by.
    pub fn first_line(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }

    /// The failure cluster: the kind and the first line. Two runs in one cluster fail the
    /// same way (a sweep groups them together; a shrink keeps only such runs).
    pub fn cluster(&self) -> (&str, &str) {
        (&self.kind, self.first_line())
    }
}

/// One (scenario, seed) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedResult {
    /// The seed.
    pub seed: u64,
    /// What the run decided.
    pub verdict: VerdictKind,
    /// `None` exactly when the verdict is `pass`.
    pub reason: Option<Reason>,
    /// Virtual time at the end, in nanoseconds.
    pub end_ns: u64,
    /// Timer events popped.
    pub events: u64,
    /// The kept tape of a failing seed (with `--out`).
    pub tape: Option<String>,
    /// The command that reproduces a failing seed.
    pub replay: Option<String>,
    /// The model calls the run's agent got answered (its turns); `None` without an agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_calls: Option<u64>,
    /// How a `[harness]` run went; left out of the report for other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<crate::harness::HarnessOutcome>,
    /// How many calls the agent retried after an error (a model's 429 or 5xx, an MCP error
    /// it may retry): the faults it met and survived; `None` without an agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// Each property of the scenario and whether this run hit it (what each saw is left
    /// out); absent when the scenario has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<crate::property::PropertyResult>,
}

impl SeedResult {
    /// Returns the record of one seed's run from its summary and verdict; `failure_kind` is
    /// the short kind of what stopped an `error` run (`deadlock`, `step_failed`, …). The kept
    /// tape and the reproduce command are the caller's to add.
    ///
    /// ```
    /// use simtape::RunSummary;
    /// use simtape_eval::sweep::SeedResult;
    /// use simtape_eval::{Verdict, VerdictKind};
    /// let verdict = Verdict::Error { reason: "deadlock at t=1ms".into() };
    /// let result = SeedResult::of(&RunSummary::unstarted(3), &verdict, Some("deadlock"));
    /// assert_eq!(result.verdict, VerdictKind::Error);
    /// assert_eq!(result.reason.unwrap().kind, "deadlock");
    /// ```
    pub fn of(summary: &RunSummary, verdict: &Verdict, failure_kind: Option<&str>) -> SeedResult {
        let kind = match verdict {
            Verdict::Pass => None,
            Verdict::Fail { .. } => Some("verifier"),
            Verdict::Blocked { policy, .. } => Some(policy.as_str()),
            Verdict::Error { .. } => Some(failure_kind.unwrap_or("error")),
        };
        let reason = kind.zip(verdict.reason()).map(|(kind, message)| Reason {
            kind: kind.to_string(),
            message,
        });
        SeedResult {
            seed: summary.seed,
            verdict: verdict.kind(),
            reason,
            end_ns: summary.end_ns,
            events: summary.events,
            tape: None,
            replay: None,
            model_calls: None,
            harness: None,
            retries: None,
            properties: Vec::new(),
        }
    }
}

/// The per-scenario numbers, derived from its results only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    /// The seeds that ran.
    pub runs: u64,
    /// The seeds that passed.
    pub passed: u64,
    /// The exact pass rate, e.g. `"39/40"`; `None` with no runs.
    pub pass_rate: Option<String>,
    /// The pass rate as a decimal.
    pub pass_rate_value: Option<f64>,
    /// pass@k and pass^k over seeds (each seed one trial), for k in {1, 2, 5, 10, n}, k ≤ n,
    /// where the exact u128 arithmetic does not overflow.
    pub k: Vec<KRow>,
    /// Failing seeds grouped by (kind, first line of the message), most frequent first.
    pub failures: Vec<FailureGroup>,
    /// Sessions to done, per-feature pass rates, wasted sessions and broken invariants, for a
    /// `[harness]` scenario; left out of the report for others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<crate::harness::HarnessSummary>,
    /// The agent's retries over the runs, when the scenario has an agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<RetryTotals>,
    /// Each property over the runs; absent when the scenario has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<crate::property::PropertyTally>,
}

/// The agent's retries over the runs of a scenario: the faults it met and retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryTotals {
    /// Retries over every run.
    pub total: u64,
    /// The runs with at least one retry.
    pub runs: u64,
    /// The most retries of one run.
    pub max: u32,
}

impl RetryTotals {
    /// Sums the retries of `results`; `None` when no result counts them (no agent).
    fn of(results: &[SeedResult]) -> Option<RetryTotals> {
        let counted: Vec<u32> = results.iter().filter_map(|r| r.retries).collect();
        (!counted.is_empty()).then(|| RetryTotals {
            total: counted.iter().map(|&n| u64::from(n)).sum(),
            runs: counted.iter().filter(|&&n| n > 0).count() as u64,
            max: counted.iter().copied().max().unwrap_or(0),
        })
    }
}

/// The failing seeds that share a reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureGroup {
    /// The reasons' kind.
    pub kind: String,
    /// The first line of their message.
    pub message: String,
    /// How many seeds.
    pub count: u64,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
}

impl ScenarioSummary {
    /// Summarizes `results`.
    pub fn of(results: &[SeedResult]) -> ScenarioSummary {
        let runs = results.len() as u64;
        let passed = results
            .iter()
            .filter(|r| r.verdict == VerdictKind::Pass)
            .count() as u64;
        let rate = (runs > 0).then(|| Fraction::new(u128::from(passed), u128::from(runs)));
        ScenarioSummary {
            runs,
            passed,
            pass_rate: rate.map(|r| r.to_string()),
            pass_rate_value: rate.map(Fraction::to_f64),
            k: k_rows(runs, passed),
            failures: failure_groups(results),
            harness: crate::harness::HarnessSummary::of(
                results
                    .iter()
                    .filter_map(|r| r.harness.as_ref().map(|h| (r.seed, h))),
            ),
            retries: RetryTotals::of(results),
            properties: crate::property::PropertyTally::of(
                results.iter().map(|r| (r.seed, r.properties.as_slice())),
            ),
        }
    }
}

fn k_rows(n: u64, c: u64) -> Vec<KRow> {
    let mut ks: Vec<u64> = K_VALUES.iter().copied().chain([n]).collect();
    ks.retain(|&k| k >= 1 && k <= n && binomial_checked(n, k).is_some());
    ks.sort_unstable();
    ks.dedup();
    ks.into_iter().map(|k| KRow::new(n, c, k)).collect()
}

fn failure_groups(results: &[SeedResult]) -> Vec<FailureGroup> {
    let mut groups: BTreeMap<(&str, &str), Vec<u64>> = BTreeMap::new();
    for result in results {
        if let Some(reason) = &result.reason {
            groups
                .entry(reason.cluster())
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

impl ScenarioResults {
    /// Returns one scenario's results, sorted by seed, with their summary.
    pub fn new(name: String, path: String, sha256: String, mut results: Vec<SeedResult>) -> Self {
        results.sort_by_key(|r| r.seed);
        ScenarioResults {
            name,
            path,
            sha256,
            agent: None,
            summary: ScenarioSummary::of(&results),
            results,
        }
    }

    /// Returns the results as run by `agent` (the caller names them `SCENARIO@AGENT`).
    pub fn with_agent(self, agent: &str) -> Self {
        ScenarioResults {
            agent: Some(agent.to_string()),
            ..self
        }
    }
}

impl SweepReport {
    /// Returns the report of a sweep (or of its shard `shard`) over `seeds`; `partial` when
    /// it stopped before every seed ran. `scenarios` must be sorted by name.
    pub fn new(
        seeds: SeedRange,
        shard: Option<Shard>,
        partial: bool,
        scenarios: Vec<ScenarioResults>,
    ) -> SweepReport {
        assert!(
            scenarios.windows(2).all(|pair| pair[0].name < pair[1].name),
            "a sweep's scenarios are sorted by distinct names"
        );
        SweepReport {
            format: FORMAT.to_string(),
            engine: ENGINE_VERSION.to_string(),
            seeds,
            shard,
            agents: super::agents::compare(&scenarios),
            partial,
            scenarios,
            digest: String::new(),
        }
        .sealed()
    }

    /// Returns the report with its digest set.
    fn sealed(mut self) -> SweepReport {
        self.digest = self.content_digest();
        self
    }

    /// Returns the digest of what the report holds now (see [`SweepReport::digest`]). The
    /// summaries are left out: they are derived from the results, and their decimals need
    /// not read back bit for bit.
    pub fn content_digest(&self) -> String {
        let digested = Digested {
            format: &self.format,
            engine: &self.engine,
            seeds: self.seeds,
            shard: self.shard,
            partial: self.partial,
            scenarios: self
                .scenarios
                .iter()
                .map(|s| DigestedScenario {
                    name: &s.name,
                    path: &s.path,
                    sha256: &s.sha256,
                    results: &s.results,
                })
                .collect(),
        };
        let bytes = serde_json::to_vec(&digested).expect("a report serializes");
        simtape::tape::sha256_hex(&bytes)
    }

    /// Every `sometimes` or `reachable` property no run hit, with its scenario's name: each
    /// fails the sweep, since the sweep never reached what it was written for.
    pub fn unmet_properties(&self) -> Vec<(&str, &crate::property::PropertyTally)> {
        self.scenarios
            .iter()
            .flat_map(|s| {
                s.summary
                    .properties
                    .iter()
                    .filter(|tally| tally.unmet())
                    .map(move |tally| (s.name.as_str(), tally))
            })
            .collect()
    }

    /// Returns whether every seed that ran passed.
    pub fn all_passed(&self) -> bool {
        self.scenarios
            .iter()
            .all(|s| s.summary.passed == s.summary.runs)
    }

    /// Returns the number of runs.
    pub fn runs(&self) -> u64 {
        self.scenarios.iter().map(|s| s.summary.runs).sum()
    }
}

/// Why shard reports do not merge. Each is fatal to the merge only: the reports are left as
/// they were. `report` is the 1-based position of the offending report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No report was given.
    #[error("merge needs at least one report")]
    Empty,
    /// More shards than this machine can count.
    #[error("too many shards")]
    TooManyShards,
    /// A report of another format.
    #[error("report {report}: format {found:?}, expected {FORMAT:?}")]
    Format {
        /// Which report.
        report: usize,
        /// Its format tag.
        found: String,
    },
    /// A report of another sweep (seed range or shard count).
    #[error("report {report}: seeds {seeds} shard {shard} do not belong to the sweep of seeds {sweep_seeds} in {count} shard(s)")]
    OtherSweep {
        /// Which report.
        report: usize,
        /// Its seed range.
        seeds: SeedRange,
        /// Its shard.
        shard: Shard,
        /// The first report's seed range.
        sweep_seeds: SeedRange,
        /// The first report's shard count.
        count: u64,
    },
    /// Two reports of the same shard.
    #[error("report {report}: shard {shard} appears twice")]
    Duplicate {
        /// Which report.
        report: usize,
        /// The shard.
        shard: Shard,
    },
    /// A report of another engine version.
    #[error("report {report}: run by engine {found:?}, report 1 by {expected:?}")]
    OtherEngine {
        /// Which report.
        report: usize,
        /// Its engine version.
        found: String,
        /// The first report's.
        expected: String,
    },
    /// A report whose content does not match its digest: edited after it was written (a
    /// verdict changed by hand, a seed removed), or written without one.
    #[error("report {report}: {}", match digest.is_empty() {
        true => "it carries no digest (written by an older simtape?); run its shard again".to_string(),
        false => format!("its results do not match its digest {digest} (edited after it was written?); run its shard again"),
    })]
    Doctored {
        /// Which report.
        report: usize,
        /// The digest it carries.
        digest: String,
    },
    /// A report of other scenarios (names, paths or digests).
    #[error("report {report}: its scenarios differ from report 1's")]
    OtherScenarios {
        /// Which report.
        report: usize,
    },
    /// A shard no report covers.
    #[error("shard {index}/{count} is missing")]
    Missing {
        /// The missing shard's index.
        index: usize,
        /// The shard count.
        count: u64,
    },
}

/// Joins the reports of the shards of one sweep into the report of the whole sweep: the
/// bytes one machine would have written for it. The shards must share the seed range, the
/// shard count and the scenarios, and cover every shard exactly once.
pub fn merge(reports: Vec<SweepReport>) -> Result<SweepReport, MergeError> {
    let first = reports.first().ok_or(MergeError::Empty)?;
    let seeds = first.seeds;
    let count = first.shard.unwrap_or(Shard::ALL).count;
    let mut covered = vec![false; usize::try_from(count).map_err(|_| MergeError::TooManyShards)?];
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
        let number = position + 1;
        if report.format != FORMAT {
            return Err(MergeError::Format {
                report: number,
                found: report.format.clone(),
            });
        }
        if report.digest.is_empty() || report.digest != report.content_digest() {
            return Err(MergeError::Doctored {
                report: number,
                digest: report.digest.clone(),
            });
        }
        if report.engine != first.engine {
            return Err(MergeError::OtherEngine {
                report: number,
                found: report.engine.clone(),
                expected: first.engine.clone(),
            });
        }
        if report.seeds != seeds || shard.count != count {
            return Err(MergeError::OtherSweep {
                report: number,
                seeds: report.seeds,
                shard,
                sweep_seeds: seeds,
                count,
            });
        }
        let slot = &mut covered[usize::try_from(shard.index).expect("index < count")];
        if std::mem::replace(slot, true) {
            return Err(MergeError::Duplicate {
                report: number,
                shard,
            });
        }
        if !same_scenarios(&scenarios, &report.scenarios) {
            return Err(MergeError::OtherScenarios { report: number });
        }
        partial |= report.partial;
        for (into, from) in scenarios.iter_mut().zip(&report.scenarios) {
            into.results.extend(from.results.iter().cloned());
        }
    }
    if let Some(index) = covered.iter().position(|c| !c) {
        return Err(MergeError::Missing { index, count });
    }
    for scenario in &mut scenarios {
        scenario.results.sort_by_key(|r| r.seed);
        scenario.summary = ScenarioSummary::of(&scenario.results);
    }
    Ok(SweepReport {
        format: FORMAT.to_string(),
        engine: first.engine.clone(),
        seeds,
        shard: None,
        partial,
        agents: super::agents::compare(&scenarios),
        scenarios,
        digest: String::new(),
    }
    .sealed())
}

impl MergeError {
    /// Returns the 1-based position of the report the error is about, if it is about one.
    pub fn report(&self) -> Option<usize> {
        match self {
            MergeError::Format { report, .. }
            | MergeError::OtherSweep { report, .. }
            | MergeError::Duplicate { report, .. }
            | MergeError::OtherEngine { report, .. }
            | MergeError::Doctored { report, .. }
            | MergeError::OtherScenarios { report } => Some(*report),
            MergeError::Empty | MergeError::TooManyShards | MergeError::Missing { .. } => None,
        }
    }
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
            verdict: if pass {
                VerdictKind::Pass
            } else {
                VerdictKind::Error
            },
            reason: (!pass).then(|| Reason {
                kind: "deadlock".into(),
                message: "deadlock at t=1ms\ndetail".into(),
            }),
            end_ns: seed,
            events: 1,
            tape: None,
            replay: None,
            model_calls: None,
            harness: None,
            retries: Some(seed as u32 % 3),
            properties: Vec::new(),
        }
    }

    #[test]
    fn summary_counts_estimates_and_groups() {
        // Goal: the summary's rate, k rows and failure groups come out exact.
        let results: Vec<SeedResult> = (0..4).map(|s| result(s, s % 2 == 0)).collect();
        let summary = ScenarioSummary::of(&results);
        assert_eq!(summary.pass_rate.as_deref(), Some("1/2"));
        let ks: Vec<u64> = summary.k.iter().map(|row| row.k).collect();
        assert_eq!(ks, [1, 2, 4]);
        assert_eq!(summary.k[1].pass_at_k, "5/6");
        assert_eq!(summary.failures.len(), 1);
        assert_eq!(summary.failures[0].message, "deadlock at t=1ms");
        assert_eq!(summary.failures[0].seeds, [1, 3]);
        let retries = summary.retries.unwrap();
        assert_eq!((retries.total, retries.runs, retries.max), (3, 2, 2));
        assert_eq!(ScenarioSummary::of(&[]).pass_rate, None);
    }

    fn shard(index: u64, seeds: &[u64]) -> SweepReport {
        let results = seeds.iter().map(|&s| result(s, s % 2 == 0)).collect();
        let scenario = ScenarioResults::new("a".into(), "a.toml".into(), "ab12".into(), results);
        let seeds_range = SeedRange { start: 0, end: 4 };
        SweepReport::new(
            seeds_range,
            Some(Shard { index, count: 2 }),
            false,
            vec![scenario],
        )
    }

    #[test]
    fn merge_refuses_a_report_edited_after_it_was_written() {
        // Goal: a shard whose verdict was edited by hand (summary recomputed or not), or that
        // carries no digest, is refused and named; untouched shards merge, and the merged
        // report carries its own digest.
        let (zero, one) = (shard(0, &[0, 2]), shard(1, &[1, 3]));
        let merged = merge(vec![zero.clone(), one.clone()]).unwrap();
        assert_eq!(merged.digest, merged.content_digest());
        assert_eq!(merged.engine, ENGINE_VERSION);
        let mut doctored = one.clone();
        let seed = &mut doctored.scenarios[0].results[0];
        (seed.verdict, seed.reason) = (VerdictKind::Pass, None);
        doctored.scenarios[0].summary = ScenarioSummary::of(&doctored.scenarios[0].results);
        let error = merge(vec![zero.clone(), doctored]).unwrap_err();
        assert_eq!(error.report(), Some(2));
        assert!(error
            .to_string()
            .starts_with("report 2: its results do not match its digest"));
        let mut unsigned = one.clone();
        unsigned.digest.clear();
        let error = merge(vec![unsigned, zero.clone()]).unwrap_err();
        assert!(
            error.to_string().contains("report 1: it carries no digest"),
            "{error}"
        );
        let mut newer = one;
        newer.engine = "9.9.9".into();
        let error = merge(vec![zero, newer.sealed()]).unwrap_err();
        assert!(
            matches!(error, MergeError::OtherEngine { report: 2, .. }),
            "{error}"
        );
    }
}
