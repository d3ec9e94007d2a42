//! Properties evaluated by a Rust pipeline: [`always!`](crate::always),
//! [`sometimes!`](crate::sometimes), [`reachable!`](crate::reachable) and
//! [`unreachable!`](crate::unreachable).
//!
//! Each evaluation puts a `property` request record on the engine actor (`[name, kind,
//! condition]`) and folds into the run's [`RunSummary::properties`](crate::RunSummary): per
//! name, whether the condition held every time (`always`), was ever true (`sometimes`), was
//! ever reached (`reachable`), or never was (`unreachable`). An `always` false or an
//! `unreachable` reached panics in the task that evaluated it, so the run fails there, named;
//! `sometimes` and `reachable` are judged over many seeds: [`crate::testing::check_seeds`] and
//! `#[simtape::test]` fail when no seed hit one. A scenario's `[[property]]` tables are the
//! same four kinds, judged by the eval harness.
//!
//! ```
//! let mut builder = simtape::Sim::builder();
//! builder.seed(3);
//! let report = builder.build().unwrap().run(|host| async move {
//!     let delay = host.rng("jitter").below(10);
//!     simtape::sometimes!(delay > 5, "a slow answer");
//!     simtape::always!(delay < 10, "the delay stays under 10");
//! }).unwrap();
//! assert_eq!(report.summary.properties.len(), 2);
//! assert!(report.summary.properties[1].hit);
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a property must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PropertyKind {
    /// True every time, in every run.
    Always,
    /// True at least once, in at least one run of a sweep.
    Sometimes,
    /// Reached in at least one run of a sweep.
    Reachable,
    /// Reached in no run.
    Unreachable,
}

impl PropertyKind {
    /// Every kind, as a scenario spells it.
    pub const ALL: [(&'static str, PropertyKind); 4] = [
        ("always", PropertyKind::Always),
        ("sometimes", PropertyKind::Sometimes),
        ("reachable", PropertyKind::Reachable),
        ("unreachable", PropertyKind::Unreachable),
    ];

    /// The kind as a scenario spells it.
    pub fn name(self) -> &'static str {
        match self {
            PropertyKind::Always => "always",
            PropertyKind::Sometimes => "sometimes",
            PropertyKind::Reachable => "reachable",
            PropertyKind::Unreachable => "unreachable",
        }
    }

    /// Whether one run whose condition was `hit` (for `always`: true every time) fails it.
    pub fn violated_by(self, hit: bool) -> bool {
        match self {
            PropertyKind::Always => !hit,
            PropertyKind::Unreachable => hit,
            PropertyKind::Sometimes | PropertyKind::Reachable => false,
        }
    }

    /// Whether the property is judged over many runs: it needs one run that hits it.
    pub fn needs_a_hit(self) -> bool {
        matches!(self, PropertyKind::Sometimes | PropertyKind::Reachable)
    }
}

impl fmt::Display for PropertyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A property over one run of a Rust pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evaluated {
    /// The name the macro gave.
    pub name: String,
    /// How it must hold.
    pub kind: PropertyKind,
    /// `always`: true every time; the others: true (reached) at least once.
    pub hit: bool,
    /// How many times the run evaluated it.
    pub times: u64,
}

/// Evaluates a property inside the running simulation (the macros call this): records it
/// and panics when this evaluation alone fails the property.
///
/// # Panics
///
/// Outside [`Sim::run`](crate::Sim), and when an `always` condition is false or an
/// `unreachable` is reached.
pub fn evaluate(kind: PropertyKind, name: &str, condition: bool) {
    crate::executor::record_property(kind, name, condition);
    if kind.violated_by(condition) {
        panic!("property {name:?} ({kind}) failed");
    }
}

/// Folds one evaluation into the run's list, by name in first-evaluated order.
pub(crate) fn fold(list: &mut Vec<Evaluated>, kind: PropertyKind, name: &str, condition: bool) {
    match list.iter_mut().find(|p| p.name == name) {
        Some(property) => {
            property.times += 1;
            property.hit = match kind {
                PropertyKind::Always => property.hit && condition,
                _ => property.hit || condition,
            };
        }
        None => list.push(Evaluated {
            name: name.to_string(),
            kind,
            hit: condition,
            times: 1,
        }),
    }
}

/// Asserts that `condition` is true every time it is evaluated, in every run: false fails the
/// run at once, named.
#[macro_export]
macro_rules! always {
    ($condition:expr, $name:expr) => {
        $crate::property::evaluate($crate::property::PropertyKind::Always, $name, $condition)
    };
}

/// Notes whether `condition` is true: over a sweep (`check_seeds`, `#[simtape::test]`), it
/// must be true at least once, or the sweep fails naming it.
#[macro_export]
macro_rules! sometimes {
    ($condition:expr, $name:expr) => {
        $crate::property::evaluate($crate::property::PropertyKind::Sometimes, $name, $condition)
    };
}

/// Notes that this point was reached: over a sweep, some run must reach it.
#[macro_export]
macro_rules! reachable {
    ($name:expr) => {
        $crate::property::evaluate($crate::property::PropertyKind::Reachable, $name, true)
    };
}

/// Asserts that this point is never reached: reaching it fails the run at once, named.
#[macro_export]
macro_rules! unreachable {
    ($name:expr) => {
        $crate::property::evaluate($crate::property::PropertyKind::Unreachable, $name, true)
    };
}
