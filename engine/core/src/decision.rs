//! Named decisions: every random choice a run makes, taken from its actor's stream or from an
//! override list.
//!
//! Every draw in the engine (a latency jitter, whether a fault fires and which, a fixture
//! alternative, a selector's pick) reaches [`RngStream::next_u64`](crate::rng::RngStream::next_u64),
//! so that one call is the seam: with a [`DecisionBook`] attached, the `n`-th draw of the stream
//! named `s` is the decision `s#n`. Its value is the override when one is listed, else the
//! stream's own draw. The stream advances either way, so an override never shifts a later
//! draw, and an override equal to the draw gives the run it would have had without it.
//! Names are stable because streams are per actor and each actor's draws are in its own
//! deterministic order. Like Hypothesis's choice sequence, the values are raw: shrinking moves
//! them toward zero, which every typed draw (`below`, `chance`, `weighted_index`) reads as its
//! first, smallest or "no fault" outcome.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One decision a run took, or an override to take.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// `stream#ordinal`, e.g. `llm#3`.
    pub name: String,
    /// The 64 raw bits the draw returns.
    pub value: u64,
}

/// The overrides of one run and the log of the decisions it took.
#[derive(Debug, Default)]
pub struct DecisionBook {
    overrides: BTreeMap<String, u64>,
    // A mutex, not a RefCell: streams live in actor slots the executor may hand between
    // threads; the executor runs one task at a time, so the log's order is the run's order.
    taken: Mutex<Vec<Decision>>,
}

impl DecisionBook {
    /// A book that overrides the listed decisions (a later duplicate name wins).
    pub fn new(overrides: &[Decision]) -> Arc<DecisionBook> {
        Arc::new(DecisionBook {
            overrides: overrides
                .iter()
                .map(|d| (d.name.clone(), d.value))
                .collect(),
            taken: Mutex::new(Vec::new()),
        })
    }

    /// The overrides, sorted by name.
    pub fn overrides(&self) -> Vec<Decision> {
        self.overrides
            .iter()
            .map(|(name, value)| Decision {
                name: name.clone(),
                value: *value,
            })
            .collect()
    }

    /// Decides `name`: the override if listed, else `drawn`; logs what was taken.
    pub(crate) fn decide(&self, name: String, drawn: u64) -> u64 {
        let value = self.overrides.get(&name).copied().unwrap_or(drawn);
        self.taken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Decision { name, value });
        value
    }

    /// The decisions taken so far, in the order the run took them.
    pub fn taken(&self) -> Vec<Decision> {
        self.taken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Names of overrides the run never reached, sorted: a decisions file that does not fit
    /// the scenario lists some.
    pub fn unused(&self) -> Vec<String> {
        let taken = self.taken();
        let reached: std::collections::BTreeSet<&str> =
            taken.iter().map(|d| d.name.as_str()).collect();
        self.overrides
            .keys()
            .filter(|name| !reached.contains(name.as_str()))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngStream;

    #[test]
    fn an_override_equal_to_the_draw_changes_nothing() {
        let plain: Vec<u64> = {
            let mut rng = RngStream::fork(4, "llm");
            (0..5).map(|_| rng.below(1000)).collect()
        };
        let book = DecisionBook::new(&[]);
        let mut rng = RngStream::fork_decided(4, "llm", Some(Arc::clone(&book)));
        let logged: Vec<u64> = (0..5).map(|_| rng.below(1000)).collect();
        assert_eq!(plain, logged);
        let same = DecisionBook::new(&book.taken());
        let mut rng = RngStream::fork_decided(4, "llm", Some(same));
        assert_eq!(plain, (0..5).map(|_| rng.below(1000)).collect::<Vec<_>>());
    }

    #[test]
    fn an_override_changes_only_its_draw() {
        let book = DecisionBook::new(&[Decision {
            name: "llm#1".into(),
            value: 0,
        }]);
        let mut plain = RngStream::fork(4, "llm");
        let mut rng = RngStream::fork_decided(4, "llm", Some(Arc::clone(&book)));
        let (a, b, c) = (plain.next_u64(), plain.next_u64(), plain.next_u64());
        assert_eq!(rng.next_u64(), a);
        assert_eq!(rng.next_u64(), 0);
        assert_ne!(b, 0);
        assert_eq!(rng.next_u64(), c);
        assert!(book.unused().is_empty());
    }
}
