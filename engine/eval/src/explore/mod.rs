//! Exploring instead of sampling: the search `simtape explore` runs. A uniform sweep draws
//! every seed the same way, so a failure that needs three faults to line up shows once in
//! tens of thousands of runs. The explorer plans runs three ways:
//!
//! * **swarm**: each run turns a random subset of the scenario's fault rules off and scales
//!   the rates of the others (the [`Swarm`] settings, decisions the run's overrides carry,
//!   so every run replays alone);
//! * **novelty**: a run that reached something no earlier run did (a fault rule firing on a
//!   new target, a new count of faults on one actor, of retries or of model calls, a
//!   property hit, a failure cluster) joins a corpus, and half of the later runs fork from a
//!   corpus run just after one of its faults: its decisions up to there, fresh draws after;
//! * **uniform**: fresh seeds, nothing else (the baseline a bench compares with).
//!
//! The explorer only decides; its caller runs the [`PlannedRun`]s it plans and folds back what
//! each run [`Observation`]. Runs are planned in batches of [`BATCH`] from what was known before
//! the batch and folded in plan order, so the same exploration seed gives the same runs and
//! the same report however many runs go at once.
//!
//! ```
//! use simtape_eval::explore::{Explorer, Site, Strategy};
//! let sites = [Site { stream: "llm".into(), rules: vec![0] }];
//! let mut explorer = Explorer::new(7, Strategy::Swarm, &sites);
//! let batch = explorer.plan(8);
//! assert_eq!(batch.len(), 8);
//! assert!(batch.iter().all(|trial| trial.overrides.len() == 1));
//! ```

use std::collections::{BTreeMap, BTreeSet};

pub mod formats;

use serde::Serialize;
use simtape::decision::{swarm_name, Decision, FiredRule, Swarm};
use simtape::rng::{Ratio, RngStream};

use crate::branch::prefix;
use crate::sweep::{ClusterKey, SeedResult};

/// Runs planned at once: the unit of parallel work and of what the plan can know.
pub const BATCH: usize = 8;

/// How the explorer plans its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Fresh seeds only.
    Uniform,
    /// Fresh seeds, each with a random subset of the fault rules on at scaled rates.
    Swarm,
    /// Swarm runs, and forks from the runs that reached something new.
    Guided,
}

impl Strategy {
    /// The names `--strategy` takes.
    pub const NAMES: [&'static str; 3] = ["uniform", "swarm", "guided"];

    /// The strategy named `name`.
    pub fn named(name: &str) -> Option<Strategy> {
        match name {
            "uniform" => Some(Strategy::Uniform),
            "swarm" => Some(Strategy::Swarm),
            "guided" => Some(Strategy::Guided),
            _ => None,
        }
    }

    /// The name `--strategy` takes.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Uniform => "uniform",
            Strategy::Swarm => "swarm",
            Strategy::Guided => "guided",
        }
    }
}

/// One actor's fault rules, as a swarm run sets them: the stream they draw from (the actor's
/// name) and which of them are `rate` rules (the ones a swarm run sets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The actor's stream name (`llm`, `fs`, `process`, `mcp:<server>`).
    pub stream: String,
    /// The indices of its `rate` rules among all its rules.
    pub rules: Vec<usize>,
}

/// Where a planned run comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// A fresh seed.
    Uniform,
    /// A fresh seed with swarm settings.
    Swarm,
    /// A fork of run `parent`, its decisions kept before record `at`.
    Fork {
        /// The parent run's number.
        parent: u64,
        /// The record the fork branched at.
        at: u64,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Uniform => f.write_str("a fresh seed"),
            Origin::Swarm => f.write_str("a swarm run"),
            Origin::Fork { parent, at } => write!(f, "a fork of run {parent} at record {at}"),
        }
    }
}

/// One run to make: at `seed`, with `overrides` (swarm settings, a fork's kept decisions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRun {
    /// The run's number in the exploration, from 1.
    pub run: u64,
    /// The seed.
    pub seed: u64,
    /// The decisions the run takes as given.
    pub overrides: Vec<Decision>,
    /// Where it comes from.
    pub origin: Origin,
}

/// What one run did, as the explorer reads it.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The run's result, as a sweep records it.
    pub result: SeedResult,
    /// Every decision the run took, in order (from its decision book).
    pub taken: Vec<Decision>,
    /// Every fault rule that fired, in order.
    pub fired: Vec<FiredRule>,
}

impl Observation {
    /// What a run with `result` did, from the decision book it ran with.
    pub fn read(result: SeedResult, book: &simtape::decision::DecisionBook) -> Observation {
        Observation {
            result,
            taken: book.taken(),
            fired: book.fired(),
        }
    }

    /// The things this run reached, each a short stable text: what novelty is counted in.
    pub fn features(&self) -> BTreeSet<String> {
        let mut features = BTreeSet::new();
        let mut per_stream: BTreeMap<&str, u64> = BTreeMap::new();
        for fired in &self.fired {
            features.insert(format!(
                "fault {}#{} on {}",
                fired.stream, fired.rule, fired.target
            ));
            *per_stream.entry(&fired.stream).or_default() += 1;
        }
        for (stream, count) in per_stream {
            features.insert(format!("{count} fault(s) on {stream}"));
        }
        let result = &self.result;
        if let Some(key) = ClusterKey::of(result) {
            features.insert(format!("failure {key}"));
        }
        if let Some(retries) = result.retries {
            features.insert(format!("{retries} retries"));
        }
        if let Some(calls) = result.model_calls {
            features.insert(format!("{calls} model calls"));
        }
        for property in result.properties.iter().filter(|p| p.hit) {
            features.insert(format!("property {}", property.name));
        }
        features
    }
}

/// A run in the corpus: one that reached something new, and where to fork it.
#[derive(Debug, Clone)]
struct Entry {
    run: u64,
    taken: Vec<Decision>,
    /// The records to branch at: just after each fault that fired (else after each
    /// decision), so a fork keeps what the parent reached and redraws the rest.
    points: Vec<u64>,
}

/// A failure cluster the exploration found.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterFound {
    /// The cluster.
    pub cluster: ClusterKey,
    /// The run that found it first (runs to first failure).
    pub first_run: u64,
    /// How many runs failed in it.
    pub runs: u64,
    /// The first failing run's seed.
    pub seed: u64,
    /// Every decision the first failing run took: with the seed, the failure replays alone.
    #[serde(skip)]
    pub decisions: Vec<Decision>,
    /// Where the first failing run came from.
    pub origin: Origin,
}

/// One point of the coverage curve: after run `run`, `features` things reached in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Coverage {
    /// The run.
    pub run: u64,
    /// Distinct things reached by the runs up to it.
    pub features: u64,
}

/// What an exploration found, in the order it found it.
#[derive(Debug, Clone, Serialize)]
pub struct ExploreReport {
    /// The exploration seed.
    pub seed: u64,
    /// The strategy.
    pub strategy: Strategy,
    /// Runs made.
    pub runs: u64,
    /// Runs that failed.
    pub failed: u64,
    /// Of the runs, how many were forks of corpus runs.
    pub forks: u64,
    /// Runs in the corpus at the end.
    pub corpus: u64,
    /// Distinct things reached.
    pub features: u64,
    /// The failure clusters, by first run.
    pub clusters: Vec<ClusterFound>,
    /// The coverage curve: a point at each run that reached something new.
    pub coverage: Vec<Coverage>,
}

impl ExploreReport {
    /// The totals in one line: runs, forks, failures, things reached, the corpus.
    pub fn totals(&self) -> String {
        format!(
            "{} runs ({} forks), {} failed; {} things reached, {} runs in the corpus",
            self.runs, self.forks, self.failed, self.features, self.corpus
        )
    }
}

/// The search's state: what was reached, the corpus, the clusters, and its own stream.
#[derive(Debug)]
pub struct Explorer {
    seed: u64,
    strategy: Strategy,
    sites: Vec<Site>,
    rng: RngStream,
    planned: u64,
    folded: u64,
    failed: u64,
    forks: u64,
    seen: BTreeSet<String>,
    corpus: Vec<Entry>,
    clusters: BTreeMap<ClusterKey, ClusterFound>,
    coverage: Vec<Coverage>,
}

impl Explorer {
    /// An exploration from `seed` of a scenario whose fault rules are `sites`.
    pub fn new(seed: u64, strategy: Strategy, sites: &[Site]) -> Explorer {
        Explorer {
            seed,
            strategy,
            sites: sites
                .iter()
                .filter(|site| !site.rules.is_empty())
                .cloned()
                .collect(),
            rng: RngStream::fork(seed, "explore"),
            planned: 0,
            folded: 0,
            failed: 0,
            forks: 0,
            seen: BTreeSet::new(),
            corpus: Vec::new(),
            clusters: BTreeMap::new(),
            coverage: Vec::new(),
        }
    }

    /// Plans the next `count` runs from what the runs folded so far reached.
    pub fn plan(&mut self, count: usize) -> Vec<PlannedRun> {
        (0..count).map(|_| self.plan_one()).collect()
    }

    fn plan_one(&mut self) -> PlannedRun {
        self.planned += 1;
        let run = self.planned;
        let seed = self.rng.next_u64();
        let half = Ratio::new(1, 2).expect("1/2 is a ratio");
        let fork =
            self.strategy == Strategy::Guided && !self.corpus.is_empty() && self.rng.chance(half);
        if fork {
            let entry = &self.corpus[self.rng.below(self.corpus.len() as u64) as usize];
            let at = entry.points[self.rng.below(entry.points.len() as u64) as usize];
            return PlannedRun {
                run,
                seed,
                overrides: prefix(&entry.taken, at),
                origin: Origin::Fork {
                    parent: entry.run,
                    at,
                },
            };
        }
        if self.strategy == Strategy::Uniform {
            return PlannedRun {
                run,
                seed,
                overrides: Vec::new(),
                origin: Origin::Uniform,
            };
        }
        let mut overrides = Vec::new();
        for site in &self.sites {
            for &rule in &site.rules {
                // Each rule is on in half the runs; an `on` rule's rate is scaled by one of
                // the seven powers of two from 1/8 to 8, uniformly.
                let level = if self.rng.chance(half) {
                    Swarm::OFF.value()
                } else {
                    1 + self.rng.below(Swarm::LEVELS - 1)
                };
                overrides.push(Decision {
                    name: swarm_name(&site.stream, rule),
                    value: level,
                    draw: None,
                    record: None,
                });
            }
        }
        PlannedRun {
            run,
            seed,
            overrides,
            origin: Origin::Swarm,
        }
    }

    /// Folds what `trial`'s run did into the search; returns how many things it reached
    /// first. Trials are folded in the order they were planned.
    pub fn fold(&mut self, trial: &PlannedRun, observed: &Observation) -> usize {
        self.folded += 1;
        if matches!(trial.origin, Origin::Fork { .. }) {
            self.forks += 1;
        }
        if let Some(cluster) = ClusterKey::of(&observed.result) {
            self.failed += 1;
            self.clusters
                .entry(cluster.clone())
                .and_modify(|found| found.runs += 1)
                .or_insert_with(|| ClusterFound {
                    cluster,
                    first_run: trial.run,
                    runs: 1,
                    seed: trial.seed,
                    decisions: observed.taken.clone(),
                    origin: trial.origin,
                });
        }
        let new: Vec<String> = observed
            .features()
            .into_iter()
            .filter(|feature| !self.seen.contains(feature))
            .collect();
        if new.is_empty() {
            return 0;
        }
        self.seen.extend(new.iter().cloned());
        self.coverage.push(Coverage {
            run: trial.run,
            features: self.seen.len() as u64,
        });
        let mut points: Vec<u64> = observed
            .fired
            .iter()
            .filter_map(|fired| fired.record)
            .collect();
        if points.is_empty() {
            points = observed.taken.iter().filter_map(|d| d.record).collect();
        }
        points.dedup();
        if !points.is_empty() {
            self.corpus.push(Entry {
                run: trial.run,
                taken: observed.taken.clone(),
                // Just after the record: the decision taken at it is kept.
                points: points.into_iter().map(|record| record + 1).collect(),
            });
        }
        new.len()
    }

    /// The runs folded so far.
    pub fn runs(&self) -> u64 {
        self.folded
    }

    /// The clusters found so far, by first run.
    pub fn clusters(&self) -> Vec<&ClusterFound> {
        let mut found: Vec<&ClusterFound> = self.clusters.values().collect();
        found.sort_by_key(|found| found.first_run);
        found
    }

    /// The report of the runs folded so far.
    pub fn report(&self) -> ExploreReport {
        ExploreReport {
            seed: self.seed,
            strategy: self.strategy,
            runs: self.folded,
            failed: self.failed,
            forks: self.forks,
            corpus: self.corpus.len() as u64,
            features: self.seen.len() as u64,
            clusters: self.clusters().into_iter().cloned().collect(),
            coverage: self.coverage.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(seed: u64, failing: bool, fired: &[(&str, u64)]) -> Observation {
        let verdict = match failing {
            true => crate::Verdict::Error {
                reason: "lost".into(),
            },
            false => crate::Verdict::Pass,
        };
        let result = SeedResult::of(&simtape::RunSummary::unstarted(seed), &verdict, None);
        Observation {
            result,
            taken: fired
                .iter()
                .map(|(_, record)| Decision {
                    name: format!("llm#{record}"),
                    value: 0,
                    draw: None,
                    record: Some(*record),
                })
                .collect(),
            fired: fired
                .iter()
                .map(|(target, record)| FiredRule {
                    stream: "llm".into(),
                    rule: 0,
                    target: target.to_string(),
                    record: Some(*record),
                })
                .collect(),
        }
    }

    #[test]
    fn a_run_that_reaches_something_new_is_forked_from_after_its_faults() {
        // Goal: novelty puts a run in the corpus, and guided plans fork it just after one of
        // its faults, keeping the decisions up to there and its swarm settings.
        let sites = [Site {
            stream: "llm".into(),
            rules: vec![0, 1],
        }];
        let mut explorer = Explorer::new(1, Strategy::Guided, &sites);
        let first = explorer.plan(1).remove(0);
        assert_eq!(first.origin, Origin::Swarm);
        assert_eq!(first.overrides.len(), 2);
        let two = observed(first.seed, false, &[("*", 4), ("*", 9)]);
        // The rule firing on `*`, and two faults on llm.
        assert_eq!(explorer.fold(&first, &two), 2);
        assert_eq!(explorer.fold(&first, &two), 0);
        let forks: Vec<PlannedRun> = explorer
            .plan(40)
            .into_iter()
            .filter(|trial| matches!(trial.origin, Origin::Fork { .. }))
            .collect();
        assert!(
            (8..32).contains(&forks.len()),
            "{} forks of 40",
            forks.len()
        );
        for trial in &forks {
            let Origin::Fork { parent, at } = trial.origin else {
                unreachable!()
            };
            assert_eq!(parent, 1);
            assert!(at == 5 || at == 10, "{at}");
            let kept = if at == 5 { 1 } else { 2 };
            assert_eq!(trial.overrides.len(), kept);
        }
    }

    #[test]
    fn the_same_seed_plans_the_same_runs_and_clusters_count_from_their_first_run() {
        // Goal: an exploration is a function of its seed and what its runs did.
        let sites = [Site {
            stream: "fs".into(),
            rules: vec![0, 2, 3],
        }];
        let plans = |seed| Explorer::new(seed, Strategy::Swarm, &sites).plan(16);
        assert_eq!(plans(3), plans(3));
        assert_ne!(plans(3), plans(4));
        let off = plans(3)
            .iter()
            .flat_map(|trial| &trial.overrides)
            .filter(|d| d.value == 0)
            .count();
        assert!((8..40).contains(&off), "{off} of 48 settings off");
        let mut explorer = Explorer::new(3, Strategy::Uniform, &sites);
        let trials = explorer.plan(3);
        assert!(trials.iter().all(|t| t.overrides.is_empty()));
        explorer.fold(&trials[0], &observed(1, false, &[]));
        explorer.fold(&trials[1], &observed(2, true, &[]));
        explorer.fold(&trials[2], &observed(3, true, &[]));
        let report = explorer.report();
        assert_eq!((report.runs, report.failed), (3, 2));
        assert_eq!(report.clusters.len(), 1);
        assert_eq!(
            (report.clusters[0].first_run, report.clusters[0].runs),
            (2, 2)
        );
        assert_eq!(
            report.coverage,
            [Coverage {
                run: 2,
                features: 1
            }]
        );
    }

    /// A Rust pipeline with three fault points, a virtual millisecond apart: it fails when all
    /// three fire in one run. Returns what the run did, run with `overrides`.
    fn three_fault_points(seed: u64, overrides: &[Decision]) -> Observation {
        let book = simtape::decision::DecisionBook::new(overrides);
        let mut builder = simtape::Sim::builder();
        builder
            .seed(seed)
            .decisions(std::sync::Arc::clone(&book), None);
        let pause = std::time::Duration::from_millis(1);
        let report = builder
            .build()
            .unwrap()
            .run(move |host| async move {
                let first = simtape::buggify!();
                host.sleep(pause).await;
                let second = simtape::buggify!();
                host.sleep(pause).await;
                let third = simtape::buggify!();
                first && second && third
            })
            .unwrap();
        let verdict = match report.output {
            true => crate::Verdict::Fail {
                verifier: "pipeline".into(),
                saw: "all three fault points fired".into(),
            },
            false => crate::Verdict::Pass,
        };
        Observation::read(SeedResult::of(&report.summary, &verdict, None), &book)
    }

    #[test]
    fn a_rust_pipelines_fault_points_are_explored_and_shrunk_like_faults() {
        // Goal: `buggify!` sites are faults to the explorer and to shrink: a firing puts its
        // run in the corpus, a fork just after it fires the site again (its decisions are
        // kept) and draws the later sites afresh; the failure that needs all three sites is
        // found, and its shrink keeps only the three sites' decisions.
        let mut explorer = Explorer::new(0, Strategy::Guided, &[]);
        let mut refired = 0;
        let found = loop {
            assert!(explorer.runs() < 20_000, "no failure in 20,000 runs");
            let trials = explorer.plan(BATCH);
            for trial in &trials {
                let seen = three_fault_points(trial.seed, &trial.overrides);
                if let Origin::Fork { at, .. } = trial.origin {
                    // The parent's firings before the branch point happen again.
                    let kept: BTreeSet<&str> = trial
                        .overrides
                        .iter()
                        .filter_map(|d| d.name.rsplit_once('#').map(|(site, _)| site))
                        .collect();
                    refired += usize::from(seen.fired.iter().any(|fired| {
                        fired.record.is_some_and(|record| record < at)
                            && kept.contains(fired.stream.as_str())
                    }));
                }
                explorer.fold(trial, &seen);
            }
            if let Some(found) = explorer.clusters().first() {
                break (*found).clone();
            }
        };
        let report = explorer.report();
        assert!(report.forks > 0 && refired > 0, "{report:?}");
        assert!(
            report.coverage.len() >= 3,
            "each site's firing is something reached: {report:?}"
        );
        let rerun = |decisions: &[Decision]| -> Result<crate::shrink::Trial, ()> {
            let seen = three_fault_points(found.seed, decisions);
            Ok(crate::shrink::Trial {
                failure: seen.result.reason.clone(),
                taken: seen.taken,
            })
        };
        let reason = three_fault_points(found.seed, &found.decisions)
            .result
            .reason
            .expect("the found run fails again from its decisions");
        let shrunk = crate::shrink::shrink(&found.decisions, &reason, 200, rerun).unwrap();
        let sites: BTreeSet<&str> = shrunk
            .matter()
            .map(|d| {
                d.name
                    .rsplit_once('#')
                    .map_or(d.name.as_str(), |(site, _)| site)
            })
            .collect();
        assert_eq!(sites.len(), 3, "{:?}", shrunk.decisions);
        assert!(
            sites.iter().all(|site| site.starts_with("buggify:")),
            "{sites:?}"
        );
    }
}
