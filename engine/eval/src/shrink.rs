//! Shrinking a failing run: the search for the fewest, simplest decisions that still give the
//! same failure.
//!
//! A run's random choices are named decisions (`simtape::decision`), each read by a typed draw
//! that knows its simplest value (a chance that does not fire, the lowest latency, the first
//! alternative). The search reruns the run with every decision given, trying one
//! simplification at a time, and keeps each one after which the run still fails the **same
//! way**: the same failure cluster a sweep groups by ([`Reason::cluster`]). It stops when a
//! whole pass keeps nothing (no single further simplification keeps the failure) or when the
//! rerun budget is spent. Like Hypothesis's shrinker it works on the choice sequence, not on
//! values, so every kind of draw shrinks the same way.
//!
//! The search is a pure function of the rerun's answers: the candidates are tried in the
//! run's own decision order, so shrinking the same run twice gives the same result. How a run
//! is rerun (the built-in agent in-process, an agent program started again, a Rust pipeline's
//! closure) is the caller's.
//!
//! ```
//! use simtape::decision::{Decision, Draw};
//! use simtape_eval::shrink::{shrink, Trial};
//! use simtape_eval::sweep::Reason;
//! // A run that fails when its second draw (a latency) is above 5 and whatever the first.
//! let run = |decisions: &[Decision]| -> Result<Trial, ()> {
//!     let failure = (decisions[1].value > 5).then(|| Reason { kind: "verifier".into(), message: "late".into() });
//!     Ok(Trial { failure, taken: decisions.to_vec() })
//! };
//! let draw = Some(Draw::Range(0, u64::MAX));
//! let start = vec![
//!     Decision { name: "llm#0".into(), value: 40, draw, record: None },
//!     Decision { name: "fs#0".into(), value: 90, draw, record: None },
//! ];
//! let target = Reason { kind: "verifier".into(), message: "late".into() };
//! let shrunk = shrink(&start, &target, 10, run).unwrap();
//! assert_eq!(shrunk.matter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["fs#0"]);
//! assert_eq!(shrunk.decisions[0].value, 0);
//! ```

use simtape::decision::Decision;

use crate::sweep::Reason;

/// What one rerun gave: its failure (`None` when it passed) and the decisions it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// Why the rerun did not pass, as a sweep records it; `None` for a pass.
    pub failure: Option<Reason>,
    /// Every decision the rerun took, in its order (with the draw that read each).
    pub taken: Vec<Decision>,
}

/// Where the search ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Shrunk {
    /// The minimal run's decisions, every one it took, in its order: run with these as
    /// overrides, the scenario fails the same way.
    pub decisions: Vec<Decision>,
    /// How many decisions the failing run took before shrinking.
    pub original: usize,
    /// Reruns used, the first (the unchanged run, which must fail the same way) included.
    pub reruns: u32,
    /// True when the budget ran out before a pass kept nothing: the result fails the same
    /// way, but may not be minimal.
    pub exhausted: bool,
}

impl Shrunk {
    /// The decisions that matter: those not at their simplest value, since simplifying each
    /// one alone loses the failure (unless the budget ran out first).
    pub fn matter(&self) -> impl Iterator<Item = &Decision> {
        self.decisions.iter().filter(|d| !is_simplest(d))
    }
}

/// Why the search could not start or go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShrinkError<E> {
    /// A rerun could not be made (the caller's error).
    #[error("rerun {rerun}: {source}")]
    Rerun {
        /// Which rerun, from 1.
        rerun: u32,
        /// What went wrong.
        source: E,
    },
    /// The first rerun, with the run's own decisions, did not fail the same way: the run
    /// depends on something its decisions do not hold (a nondeterministic program).
    #[error("rerun 1, with the run's own decisions, {}", describe(.found.as_ref()))]
    NotReproduced {
        /// What the rerun gave instead.
        found: Option<Reason>,
    },
}

fn describe(found: Option<&Reason>) -> String {
    match found {
        None => "passed".to_string(),
        Some(reason) => format!(
            "failed another way: {}: {}",
            reason.kind,
            reason.first_line()
        ),
    }
}

/// Shrinks the failing run whose decisions are `start` and whose failure is `target`, with at
/// most `max_reruns` reruns. `rerun` runs the scenario with the given decisions as overrides.
pub fn shrink<E>(
    start: &[Decision],
    target: &Reason,
    max_reruns: u32,
    mut rerun: impl FnMut(&[Decision]) -> Result<Trial, E>,
) -> Result<Shrunk, ShrinkError<E>> {
    let mut reruns = 0u32;
    let mut attempt = |decisions: &[Decision], reruns: &mut u32| {
        *reruns += 1;
        rerun(decisions).map_err(|source| ShrinkError::Rerun {
            rerun: *reruns,
            source,
        })
    };
    let first = attempt(start, &mut reruns)?;
    if !same_failure(first.failure.as_ref(), target) {
        return Err(ShrinkError::NotReproduced {
            found: first.failure,
        });
    }
    let mut current = first.taken;
    let mut exhausted = false;
    // Everything at once first: a failure that needs no draw at all is found in one rerun.
    if current.iter().any(|d| !is_simplest(d)) && reruns < max_reruns {
        let all: Vec<Decision> = current.iter().map(simplified).collect();
        let trial = attempt(&all, &mut reruns)?;
        if same_failure(trial.failure.as_ref(), target) {
            current = trial.taken;
        }
    }
    'passes: loop {
        let mut kept = false;
        let mut index = 0;
        while index < current.len() {
            if !is_simplest(&current[index]) {
                if reruns >= max_reruns {
                    exhausted = true;
                    break 'passes;
                }
                // Every decision of the name at once: two streams of one name (a pipeline's
                // `Host::rng` asked twice) draw the same, and share their decisions.
                let name = current[index].name.clone();
                let candidate: Vec<Decision> = current
                    .iter()
                    .map(|d| {
                        if d.name == name {
                            simplified(d)
                        } else {
                            d.clone()
                        }
                    })
                    .collect();
                let trial = attempt(&candidate, &mut reruns)?;
                // Kept only when it changed the run's decisions and kept the failure.
                if trial.taken != current && same_failure(trial.failure.as_ref(), target) {
                    current = trial.taken;
                    kept = true;
                }
            }
            index += 1;
        }
        if !kept {
            break;
        }
    }
    Ok(Shrunk {
        decisions: current,
        original: start.len(),
        reruns,
        exhausted,
    })
}

fn same_failure(found: Option<&Reason>, target: &Reason) -> bool {
    found.is_some_and(|reason| reason.cluster() == target.cluster())
}

fn simplest_value(decision: &Decision) -> u64 {
    decision.draw.map_or(0, simtape::decision::Draw::simplest)
}

fn is_simplest(decision: &Decision) -> bool {
    decision.value == simplest_value(decision)
}

fn simplified(decision: &Decision) -> Decision {
    Decision {
        value: simplest_value(decision),
        ..decision.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simtape::decision::Draw;
    use simtape::rng::Ratio;

    fn failing(message: &str) -> Option<Reason> {
        Some(Reason {
            kind: "verifier".into(),
            message: message.into(),
        })
    }

    fn chance(name: &str, fires: bool) -> Decision {
        Decision {
            name: name.into(),
            value: if fires { 0 } else { u64::MAX },
            draw: Some(Draw::Chance(Ratio::new(1, 4).unwrap())),
            record: None,
        }
    }

    #[test]
    fn three_faults_in_a_row_shrink_to_exactly_those_three() {
        // Goal: of ten fault draws, five firing, the run fails only when draws 3, 4 and 5 all
        // fire; the search keeps those three and turns every other one off.
        let start: Vec<Decision> = (0..10)
            .map(|i| chance(&format!("llm#{i}"), [1, 3, 4, 5, 8].contains(&i)))
            .collect();
        let fires = |d: &Decision| d.value == 0;
        let run = |decisions: &[Decision]| -> Result<Trial, ()> {
            let failure = decisions[3..6]
                .iter()
                .all(fires)
                .then(|| failing("3 in a row"))
                .flatten();
            Ok(Trial {
                failure,
                taken: decisions.to_vec(),
            })
        };
        let shrunk = shrink(&start, &failing("3 in a row").unwrap(), 100, run).unwrap();
        let left: Vec<&str> = shrunk.matter().map(|d| d.name.as_str()).collect();
        assert_eq!(left, ["llm#3", "llm#4", "llm#5"]);
        assert!(!shrunk.exhausted);
        // Twice, the same result.
        assert_eq!(
            shrink(&start, &failing("3 in a row").unwrap(), 100, run).unwrap(),
            shrunk
        );
    }

    #[test]
    fn another_failure_is_not_the_same_failure() {
        // Goal: a simplification that makes the run fail another way is not kept.
        let start = vec![chance("fs#0", true), chance("fs#1", true)];
        let run = |decisions: &[Decision]| -> Result<Trial, ()> {
            let failure = match (decisions[0].value == 0, decisions[1].value == 0) {
                (true, true) => failing("lost update\nsecond line differs"),
                (true, false) => failing("other"),
                _ => None,
            };
            Ok(Trial {
                failure,
                taken: decisions.to_vec(),
            })
        };
        let target = failing("lost update\nfirst").unwrap();
        let shrunk = shrink(&start, &target, 100, run).unwrap();
        assert_eq!(shrunk.matter().count(), 2);
    }

    #[test]
    fn a_run_that_does_not_reproduce_and_a_spent_budget_are_said() {
        // Goal: a first rerun that passes is an error naming it; a budget of 2 stops early.
        let start = vec![chance("fs#0", true), chance("fs#1", true)];
        let never = |_: &[Decision]| -> Result<Trial, String> {
            Ok(Trial {
                failure: None,
                taken: Vec::new(),
            })
        };
        let target = failing("x").unwrap();
        let error = shrink(&start, &target, 10, never).unwrap_err();
        assert_eq!(
            error.to_string(),
            "rerun 1, with the run's own decisions, passed"
        );
        let always = |decisions: &[Decision]| -> Result<Trial, String> {
            Ok(Trial {
                failure: failing("x"),
                taken: decisions
                    .iter()
                    .map(|d| Decision {
                        value: 0,
                        ..d.clone()
                    })
                    .collect(),
            })
        };
        let shrunk = shrink(&start, &target, 1, always).unwrap();
        assert!(shrunk.exhausted);
        assert_eq!(shrunk.reruns, 1);
    }

    #[test]
    fn a_rust_pipeline_shrinks_through_its_decision_book() {
        // Goal: the search works on a real run: a pipeline draws ten 1/2 faults from its own
        // stream and fails when three in a row fire; shrinking a failing seed leaves exactly
        // three consecutive faults, the rest turned off.
        let run = |seed: u64, overrides: &[Decision]| -> Trial {
            let book = simtape::decision::DecisionBook::new(overrides);
            let mut builder = simtape::Sim::builder();
            builder
                .seed(seed)
                .decisions(std::sync::Arc::clone(&book), None);
            let longest = builder
                .build()
                .unwrap()
                .run(|host| async move {
                    let mut rng = host.rng("faults");
                    let half = Ratio::new(1, 2).unwrap();
                    let (mut run, mut longest) = (0, 0);
                    for _ in 0..10 {
                        run = if rng.chance(half) { run + 1 } else { 0 };
                        longest = longest.max(run);
                    }
                    longest
                })
                .unwrap()
                .output;
            let failure = (longest >= 3).then(|| Reason {
                kind: "verifier".into(),
                message: "three faults in a row".into(),
            });
            Trial {
                failure,
                taken: book.taken(),
            }
        };
        let seed = (0..100)
            .find(|seed| {
                let trial = run(*seed, &[]);
                let fired = trial.taken.iter().filter(|d| {
                    d.draw
                        .is_some_and(|draw| draw.reads(d.value).starts_with("fires"))
                });
                trial.failure.is_some() && fired.count() > 3
            })
            .expect("a seed with more faults than the failure needs");
        let start = run(seed, &[]);
        let target = start.failure.clone().unwrap();
        let shrunk = shrink(&start.taken, &target, 100, |d| {
            Ok::<_, String>(run(seed, d))
        })
        .unwrap();
        let left: Vec<u64> = shrunk
            .matter()
            .map(|d| d.name.trim_start_matches("faults#").parse().unwrap())
            .collect();
        assert_eq!(left.len(), 3, "seed {seed}: {left:?}");
        assert!(
            left.windows(2).all(|w| w[1] == w[0] + 1),
            "in a row: {left:?}"
        );
        assert!(!shrunk.exhausted);
    }
}
