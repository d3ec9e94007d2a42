//! What a multi-session harness run (`[harness]`) leaves for reports, and what a sweep makes
//! of many: sessions to done, per-feature pass rates, wasted sessions, broken invariants.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One harness run's end: how it went, beside its verifier results.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HarnessOutcome {
    /// Task sessions started (the initializer not counted).
    pub sessions: u32,
    /// Sessions the crash fault killed.
    pub crashed: u32,
    /// Sessions that ended without validating every feature they took on (crashes included).
    pub wasted: u32,
    /// Whether the completion gate held.
    pub done: bool,
    /// Each feature and whether it ended passing.
    pub features: BTreeMap<String, bool>,
    /// The first invariant broken (by name), if any.
    pub broken: Option<String>,
}

/// A sweep's harness numbers over one scenario's seeds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HarnessSummary {
    /// Runs whose harness ended done.
    pub done: u64,
    /// How many runs were done after each number of sessions (sessions → runs).
    pub sessions_to_done: BTreeMap<u32, u64>,
    /// Each feature's pass rate over the runs, exact (`"998/1000"`).
    pub feature_pass_rates: BTreeMap<String, String>,
    /// Sessions that ended without validating their features, over every run.
    pub wasted_sessions: u64,
    /// Sessions the crash fault killed, over every run.
    pub crashed_sessions: u64,
    /// Each invariant broken, with the seeds that broke it.
    pub broken: BTreeMap<String, Vec<u64>>,
}

impl HarnessSummary {
    /// Summarizes `(seed, outcome)` pairs; `None` when no run was a harness run.
    pub fn of<'a>(
        outcomes: impl IntoIterator<Item = (u64, &'a HarnessOutcome)>,
    ) -> Option<HarnessSummary> {
        let mut summary = HarnessSummary::default();
        let mut runs = 0u64;
        let mut passing: BTreeMap<&str, u64> = BTreeMap::new();
        for (seed, outcome) in outcomes {
            runs += 1;
            if outcome.done {
                summary.done += 1;
                *summary
                    .sessions_to_done
                    .entry(outcome.sessions)
                    .or_default() += 1;
            }
            for (feature, passes) in &outcome.features {
                *passing.entry(feature).or_default() += u64::from(*passes);
            }
            summary.wasted_sessions += u64::from(outcome.wasted);
            summary.crashed_sessions += u64::from(outcome.crashed);
            if let Some(name) = &outcome.broken {
                summary.broken.entry(name.clone()).or_default().push(seed);
            }
        }
        summary.feature_pass_rates = passing
            .into_iter()
            .map(|(feature, passed)| (feature.to_owned(), format!("{passed}/{runs}")))
            .collect();
        (runs > 0).then_some(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_counts_sessions_to_done_features_and_broken_invariants() {
        let done = |sessions, crashed| HarnessOutcome {
            sessions,
            crashed,
            wasted: crashed,
            done: true,
            features: [("a".to_string(), true), ("b".to_string(), true)].into(),
            broken: None,
        };
        let broken = HarnessOutcome {
            sessions: 4,
            done: false,
            features: [("a".to_string(), true), ("b".to_string(), false)].into(),
            broken: Some("harness: no feature passes without validation".into()),
            ..HarnessOutcome::default()
        };
        let runs = [
            (0, done(2, 0)),
            (1, done(3, 1)),
            (2, done(2, 0)),
            (7, broken),
        ];
        let summary = HarnessSummary::of(runs.iter().map(|(s, o)| (*s, o))).unwrap();
        assert_eq!(summary.done, 3);
        assert_eq!(summary.sessions_to_done, [(2, 2), (3, 1)].into());
        assert_eq!(summary.feature_pass_rates["a"], "4/4");
        assert_eq!(summary.feature_pass_rates["b"], "3/4");
        assert_eq!(summary.crashed_sessions, 1);
        assert_eq!(
            summary.broken["harness: no feature passes without validation"],
            vec![7]
        );
        assert_eq!(HarnessSummary::of([]), None);
    }
}
