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
//! deterministic order. Like Hypothesis's choice sequence, the values are raw 64 bits, and each
//! taken decision says which typed draw read them ([`Draw`]), so a shrinker knows each one's
//! simplest value: the first alternative, the lowest bound, a chance that does not fire.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::rng::Ratio;

/// Which typed draw read a decision's 64 bits, and so what its value means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Draw {
    /// The raw bits (a child stream's seed).
    Bits,
    /// A uniform index in `0..n`.
    Below(u64),
    /// A value in `low..=high` (a latency in nanoseconds, a crash point).
    Range(u64, u64),
    /// Whether an event of this probability happens (a fault rule's rate).
    Chance(Ratio),
    /// A pick among weights summing to this total (a fixture alternative).
    Pick(u64),
    /// A fault rule's swarm setting (`simtape explore`): the value is a [`Swarm`] level, not
    /// raw bits, and is only ever an override (a run without one draws nothing for it).
    Swarm,
}

/// A fault rule's setting in a swarm run: off, or its rate scaled by a power of two from
/// 1/8 to 8 (an `on_call` rule is on at every level but 0). Swarm testing reaches deep
/// states sooner than one fixed mix: each run enables a random subset of the fault kinds
/// and tunes their rates, so some runs see few kinds often and others many rarely.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Swarm(u8);

impl Swarm {
    /// The levels: 0 (off), then the rate times 1/8, 1/4, 1/2, 1, 2, 4, 8.
    pub const LEVELS: u64 = 8;
    /// The rule as written (level 4, times 1).
    pub(crate) const AS_WRITTEN: Swarm = Swarm(4);
    /// The rule off.
    pub const OFF: Swarm = Swarm(0);

    /// The level a decision's value names (a value past the last level reads as the last).
    pub fn from_value(value: u64) -> Swarm {
        Swarm(value.min(Swarm::LEVELS - 1) as u8)
    }

    /// The decision value of this level.
    pub fn value(self) -> u64 {
        u64::from(self.0)
    }

    /// `ratio` at this level: scaled by the level's power of two, capped at one; zero when off.
    ///
    /// ```
    /// use simtape::decision::Swarm;
    /// use simtape::rng::Ratio;
    /// let tenth = Ratio::new(1, 10).unwrap();
    /// assert_eq!(Swarm::from_value(1).scale(tenth), Ratio::new(1, 80).unwrap());
    /// assert_eq!(Swarm::from_value(6).scale(tenth), Ratio::new(4, 10).unwrap());
    /// assert_eq!(Swarm::from_value(7).scale(Ratio::new(1, 2).unwrap()), Ratio::ONE);
    /// assert_eq!(Swarm::OFF.scale(tenth).numerator(), 0);
    /// ```
    pub fn scale(self, ratio: Ratio) -> Ratio {
        let (numerator, denominator) = (ratio.numerator(), ratio.denominator());
        let scaled = match self.0 {
            0 => Ratio::new(0, denominator),
            level @ 1..=3 => denominator
                .checked_mul(1 << (4 - level))
                .and_then(|denominator| Ratio::new(numerator, denominator)),
            level => numerator
                .checked_mul(1 << (level - 4))
                .and_then(|numerator| Ratio::new(numerator, denominator)),
        };
        // Past one (or too large to write) is always.
        scaled.unwrap_or(Ratio::ONE)
    }
}

impl fmt::Display for Swarm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => write!(f, "off"),
            level @ 1..=3 => write!(f, "rate x1/{}", 1u32 << (4 - level)),
            level => write!(f, "rate x{}", 1u32 << (level - 4)),
        }
    }
}

impl Draw {
    /// The value this draw reads as its simplest outcome: `0` (the first alternative, the
    /// lowest bound, a swarm rule off) for every draw but a chance, whose simplest outcome is
    /// not firing, the largest value.
    pub fn simplest(self) -> u64 {
        match self {
            Draw::Chance(_) => u64::MAX,
            _ => 0,
        }
    }

    /// What `value` reads as under this draw, for people: `fires`, `3 in 0..=9`, `index 1 of 3`.
    /// The same arithmetic as the draw's own, for a value the run took as given.
    pub fn reads(self, value: u64) -> String {
        let scaled = |bound: u64| ((u128::from(value) * u128::from(bound)) >> 64) as u64;
        match self {
            Draw::Bits => format!("bits {value:#018x}"),
            Draw::Below(n) => format!("{} of 0..{n}", scaled(n)),
            Draw::Range(low, high) => match (high - low).checked_add(1) {
                Some(span) => format!("{} in {low}..={high}", low + scaled(span)),
                None => format!("{value} in {low}..={high}"),
            },
            Draw::Chance(ratio) => {
                if scaled(ratio.denominator()) < ratio.numerator() {
                    format!("fires (chance {ratio})")
                } else {
                    format!("does not fire (chance {ratio})")
                }
            }
            Draw::Pick(total) => format!("pick {} of weight {total}", scaled(total)),
            Draw::Swarm => Swarm::from_value(value).to_string(),
        }
    }
}

impl fmt::Display for Draw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Draw::Bits => write!(f, "bits"),
            Draw::Below(n) => write!(f, "below {n}"),
            Draw::Range(low, high) => write!(f, "range {low}..={high}"),
            Draw::Chance(ratio) => write!(f, "chance {ratio}"),
            Draw::Pick(total) => write!(f, "pick {total}"),
            Draw::Swarm => write!(f, "swarm"),
        }
    }
}

impl serde::Serialize for Draw {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// [`DecisionBook`]'s position before any actor drew.
const NO_RECORD: u64 = u64::MAX;

/// One decision a run took, or an override to take.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// `stream#ordinal`, e.g. `llm#3`.
    pub name: String,
    /// The 64 raw bits the draw returns.
    pub value: u64,
    /// Which draw read them: set on the decisions a run took (and written out with them,
    /// as `"kind"`), absent on overrides, which are bits only.
    #[serde(
        default,
        rename = "kind",
        skip_serializing_if = "Option::is_none",
        skip_deserializing
    )]
    pub draw: Option<Draw>,
    /// Where the run was when it took the decision: the ordinal of the record its actor was
    /// about to write (records of the run, the tape's checkpoints and blobs not counted); a
    /// pipeline's own stream (`Host::rng`) draws between records and takes the last actor
    /// call's. Set on taken decisions (absent before any actor was called); absent on
    /// overrides.
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub record: Option<u64>,
}

/// The prefix of a swarm setting's decision name: `swarm:<stream>#<rule>` sets rule `rule` of
/// the fault rules drawing from stream `<stream>` (see [`Swarm`]).
pub(crate) const SWARM_PREFIX: &str = "swarm:";

/// The name of the swarm setting of rule `rule` of the fault rules on stream `stream`.
pub fn swarm_name(stream: &str, rule: usize) -> String {
    format!("{SWARM_PREFIX}{stream}#{rule}")
}

/// A fault rule that fired: which stream's rules, which rule, on what target, at which record.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FiredRule {
    /// The stream the rules draw from (the actor's name).
    pub stream: String,
    /// The rule's index among them.
    pub rule: usize,
    /// The call's target (an fs operation, a program, a tool, a model).
    pub target: String,
    /// The record ordinal the actor was about to write, as for [`Decision::record`].
    pub record: Option<u64>,
}

/// The overrides of one run and the log of the decisions it took.
#[derive(Debug)]
pub struct DecisionBook {
    overrides: BTreeMap<String, u64>,
    /// The record ordinal the next decision is taken at ([`NO_RECORD`] before any actor
    /// drew): the executor sets it as an actor starts to handle a request.
    position: std::sync::atomic::AtomicU64,
    // A mutex, not a RefCell: streams live in actor slots the executor may hand between
    // threads; the executor runs one task at a time, so the log's order is the run's order.
    taken: Mutex<Vec<Decision>>,
    /// The fault rules that fired, in the run's order (what an explorer counts as reached).
    fired: Mutex<Vec<FiredRule>>,
}

impl DecisionBook {
    /// A book that overrides the listed decisions (a later duplicate name wins).
    pub fn new(overrides: &[Decision]) -> Arc<DecisionBook> {
        Arc::new(DecisionBook {
            overrides: overrides
                .iter()
                .map(|d| (d.name.clone(), d.value))
                .collect(),
            position: std::sync::atomic::AtomicU64::new(NO_RECORD),
            taken: Mutex::new(Vec::new()),
            fired: Mutex::new(Vec::new()),
        })
    }

    /// Notes that the next decisions are taken as the run's record `ordinal` is written.
    pub(crate) fn at_record(&self, ordinal: u64) {
        self.position
            .store(ordinal, std::sync::atomic::Ordering::Relaxed);
    }

    /// The overrides, sorted by name.
    pub fn overrides(&self) -> Vec<Decision> {
        self.overrides
            .iter()
            .map(|(name, value)| Decision {
                name: name.clone(),
                value: *value,
                draw: None,
                record: None,
            })
            .collect()
    }

    /// Decides `name`, read by `draw`: the override if listed, else `drawn`; logs what was
    /// taken. Returns the value and whether it is forced (an override other than the draw),
    /// which a draw takes as given: it never rejects it and draws again.
    pub(crate) fn decide(&self, name: String, drawn: u64, draw: Draw) -> (u64, bool) {
        let value = self.overrides.get(&name).copied().unwrap_or(drawn);
        let position = self.position.load(std::sync::atomic::Ordering::Relaxed);
        lock(&self.taken).push(Decision {
            name,
            value,
            draw: Some(draw),
            record: (position != NO_RECORD).then_some(position),
        });
        (value, value != drawn)
    }

    /// The swarm setting `name` (see [`swarm_name`]) when the overrides give one, logged as
    /// taken (with no record: a setting holds for the whole run); `None`, and nothing drawn
    /// or logged, when they do not.
    pub(crate) fn swarm(&self, name: String) -> Option<Swarm> {
        let value = *self.overrides.get(&name)?;
        lock(&self.taken).push(Decision {
            name,
            value,
            draw: Some(Draw::Swarm),
            record: None,
        });
        Some(Swarm::from_value(value))
    }

    /// Notes that rule `rule` of the fault rules on `stream` fired on a call of `target`.
    pub(crate) fn fired_rule(&self, stream: &str, rule: usize, target: &str) {
        let position = self.position.load(std::sync::atomic::Ordering::Relaxed);
        lock(&self.fired).push(FiredRule {
            stream: stream.to_string(),
            rule,
            target: target.to_string(),
            record: (position != NO_RECORD).then_some(position),
        });
    }

    /// The fault rules that fired so far, in the order they fired.
    pub fn fired(&self) -> Vec<FiredRule> {
        lock(&self.fired).clone()
    }

    /// The decisions taken so far, in the order the run took them.
    pub fn taken(&self) -> Vec<Decision> {
        lock(&self.taken).clone()
    }

    /// Names of overrides the run never reached, sorted: a decisions file that does not fit
    /// the scenario lists some. A swarm setting is not one of them: the rules of an actor the
    /// run never calls take none.
    pub fn unused(&self) -> Vec<String> {
        let taken = self.taken();
        let reached: std::collections::BTreeSet<&str> =
            taken.iter().map(|d| d.name.as_str()).collect();
        self.overrides
            .keys()
            .filter(|name| !reached.contains(name.as_str()) && !name.starts_with(SWARM_PREFIX))
            .cloned()
            .collect()
    }
}

/// Locks a log: a panic elsewhere never poisons a log for good (the run reports the panic).
fn lock<T>(log: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
            draw: None,
            record: None,
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

    #[test]
    fn simplest_values_read_as_the_simplest_outcome_and_shift_nothing() {
        // Goal: each draw's simplest value is its first alternative, lowest bound or a chance
        // not firing, taken as given (no redraw), so the stream's later names stay put.
        let quarter = crate::rng::Ratio::new(1, 4).unwrap();
        let fired = |rng: &mut RngStream| (0..64).position(|_| rng.chance(quarter));
        let index = fired(&mut RngStream::fork(5, "fs")).expect("a 1/4 chance fires in 64");
        let book = DecisionBook::new(&[]);
        let mut rng = RngStream::fork_decided(5, "fs", Some(Arc::clone(&book)));
        assert_eq!(fired(&mut rng), Some(index));
        let taken = book.taken();
        assert_eq!(taken[index].draw, Some(Draw::Chance(quarter)));
        assert!(taken[index]
            .draw
            .unwrap()
            .reads(taken[index].value)
            .starts_with("fires"));
        let quiet = Decision {
            name: format!("fs#{index}"),
            value: Draw::Chance(quarter).simplest(),
            draw: None,
            record: None,
        };
        let mut rng = RngStream::fork_decided(5, "fs", Some(DecisionBook::new(&[quiet])));
        assert_ne!(fired(&mut rng), Some(index));
        // 0 is rejected by `below(3)`'s unbiased draw, but as an override it reads as 0.
        let first = Decision {
            name: "fs#0".into(),
            value: 0,
            draw: None,
            record: None,
        };
        let book = DecisionBook::new(&[first]);
        let mut rng = RngStream::fork_decided(5, "fs", Some(Arc::clone(&book)));
        assert_eq!(rng.below(3), 0);
        assert!(rng.range_inclusive(10, 20) >= 10);
        let names: Vec<String> = book.taken().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["fs#0", "fs#1"]);
        assert_eq!(Draw::Range(10, 20).reads(0), "10 in 10..=20");
    }
}
