//! Properties: conditions judged in every run and over a sweep.
//!
//! A scenario's `[[property]]` names a condition over the run (a file's state, a tool called,
//! a retry made, the verdict) and how it must hold:
//!
//! | kind          | a run fails when         | a sweep (or `ci`) fails when |
//! |---------------|--------------------------|------------------------------|
//! | `always`      | the condition is false   | some run failed              |
//! | `unreachable` | the condition is true    | some run failed              |
//! | `sometimes`   | never                    | no run made it true          |
//! | `reachable`   | never                    | no run made it true          |
//!
//! A `sometimes` that no seed hit proves the sweep never reached the state it was written
//! for: a sweep in which no seed met a 429 says nothing about retries, so it does not pass.
//! `sometimes` is for states, `reachable` for events; both are judged the same way.
//!
//! ```
//! use simtape_eval::property::{PropertyKind, PropertyResult, PropertyTally};
//! let run = |hit| vec![PropertyResult { name: "a 429 survived".into(), kind: PropertyKind::Sometimes, hit, saw: String::new() }];
//! let tally = PropertyTally::of([(0, run(false).as_slice()), (1, run(false).as_slice())]);
//! assert_eq!(tally[0].hits, 0);
//! assert!(tally[0].unmet());
//! ```

use serde::{Deserialize, Serialize};

/// How a property must hold: the kinds the engine's macros evaluate, one type for both.
pub use simtape::property::PropertyKind;

/// A property in one run: whether its condition was true (`hit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyResult {
    /// The property's name.
    pub name: String,
    /// How it must hold.
    pub kind: PropertyKind,
    /// Whether the condition was true in this run (false for a run stopped before it was
    /// judged).
    pub hit: bool,
    /// What the condition saw: the evidence, or the first part that was false (left out of
    /// a sweep's records).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub saw: String,
}

impl PropertyResult {
    /// Whether this run alone fails the property (an `always` false, an `unreachable` true).
    pub fn violated(&self) -> bool {
        self.kind.violated_by(self.hit)
    }
}

/// Seeds a tally names, at most.
const SEEDS_NAMED_MAX: usize = 10;

/// A property over many runs: how many hit it, and the first seeds that did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyTally {
    /// The property's name.
    pub name: String,
    /// How it must hold.
    pub kind: PropertyKind,
    /// The runs that judged it.
    pub runs: u64,
    /// The runs whose condition was true.
    pub hits: u64,
    /// The runs that failed it (an `always` false, an `unreachable` true).
    pub violations: u64,
    /// The first seeds (at most 10) that hit it, or for `always` and `unreachable`, that
    /// failed it.
    pub seeds: Vec<u64>,
}

impl PropertyTally {
    /// Tallies the properties of `(seed, properties)` runs, in the order each property first
    /// appears.
    pub fn of<'a>(
        runs: impl IntoIterator<Item = (u64, &'a [PropertyResult])>,
    ) -> Vec<PropertyTally> {
        let mut tallies: Vec<PropertyTally> = Vec::new();
        for (seed, results) in runs {
            for result in results {
                let index = match tallies.iter().position(|t| t.name == result.name) {
                    Some(index) => index,
                    None => {
                        tallies.push(PropertyTally {
                            name: result.name.clone(),
                            kind: result.kind,
                            runs: 0,
                            hits: 0,
                            violations: 0,
                            seeds: Vec::new(),
                        });
                        tallies.len() - 1
                    }
                };
                let tally = &mut tallies[index];
                tally.runs += 1;
                tally.hits += u64::from(result.hit);
                tally.violations += u64::from(result.violated());
                let named = if tally.kind.needs_a_hit() {
                    result.hit
                } else {
                    result.violated()
                };
                if named && tally.seeds.len() < SEEDS_NAMED_MAX {
                    tally.seeds.push(seed);
                }
            }
        }
        tallies
    }

    /// Whether the runs fail the property as a whole: a `sometimes` or `reachable` no run hit.
    pub fn unmet(&self) -> bool {
        self.kind.needs_a_hit() && self.hits == 0
    }

    /// One line for a report: `sometimes "a 429 survived": 12 of 40 runs (seeds 1, 4, …)`.
    pub fn line(&self) -> String {
        let named = if self.kind.needs_a_hit() {
            self.hits
        } else {
            self.violations
        };
        let seeds = |what: &str| -> String {
            if self.seeds.is_empty() {
                return String::new();
            }
            let listed: Vec<String> = self.seeds.iter().map(u64::to_string).collect();
            let more = if (self.seeds.len() as u64) < named {
                ", …"
            } else {
                ""
            };
            format!(" ({what} {}{more})", listed.join(", "))
        };
        match self.kind {
            PropertyKind::Sometimes | PropertyKind::Reachable => {
                let verdict = if self.hits == 0 { "NEVER HIT" } else { "hit" };
                format!(
                    "{} {:?}: {verdict} in {} of {} runs{}",
                    self.kind,
                    self.name,
                    self.hits,
                    self.runs,
                    seeds("seeds")
                )
            }
            PropertyKind::Always | PropertyKind::Unreachable => {
                let verdict = if self.violations == 0 { "" } else { "FAILED: " };
                format!(
                    "{} {:?}: {verdict}held in {} of {} runs{}",
                    self.kind,
                    self.name,
                    self.runs - self.violations,
                    self.runs,
                    seeds("failed at seeds")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, kind: PropertyKind, hit: bool) -> PropertyResult {
        PropertyResult {
            name: name.into(),
            kind,
            hit,
            saw: String::new(),
        }
    }

    #[test]
    fn tallies_count_hits_and_violations_per_property() {
        // Goal: each property is counted over the runs that judged it; `sometimes` names its
        // hitting seeds, `always` its failing ones; a never-hit `sometimes` is unmet.
        let runs: Vec<(u64, Vec<PropertyResult>)> = (0..4)
            .map(|seed| {
                (
                    seed,
                    vec![
                        result("retried", PropertyKind::Sometimes, seed % 2 == 1),
                        result("saved", PropertyKind::Always, seed != 2),
                        result("lost", PropertyKind::Reachable, false),
                    ],
                )
            })
            .collect();
        let tally = PropertyTally::of(runs.iter().map(|(s, r)| (*s, r.as_slice())));
        assert_eq!((tally[0].hits, tally[0].seeds.clone()), (2, vec![1, 3]));
        assert!(!tally[0].unmet());
        assert_eq!((tally[1].violations, tally[1].seeds.clone()), (1, vec![2]));
        assert!(tally[2].unmet());
        assert_eq!(
            tally[0].line(),
            "sometimes \"retried\": hit in 2 of 4 runs (seeds 1, 3)"
        );
        assert_eq!(
            tally[1].line(),
            "always \"saved\": FAILED: held in 3 of 4 runs (failed at seeds 2)"
        );
        assert_eq!(
            tally[2].line(),
            "reachable \"lost\": NEVER HIT in 0 of 4 runs"
        );
    }
}
