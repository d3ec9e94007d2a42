//! Seeded randomness: one ChaCha stream per actor, forked from `(seed, actor name)`.
//!
//! Streams are independent by construction: the key of a stream is the SHA-256 of the root
//! seed and the stream's name, so adding an actor, or one more draw in one actor, never shifts
//! what another actor sees. Probabilities are integer [`Ratio`]s; no float decides behaviour.

use rand_chacha::ChaCha12Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use std::sync::Arc;

use crate::decision::{DecisionBook, Draw};

/// A probability as an integer ratio `numerator / denominator`.
///
/// ```
/// use simtape::rng::Ratio;
/// let r = Ratio::new(1, 4).unwrap();
/// assert_eq!(r.to_string(), "1/4");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ratio {
    numerator: u64,
    denominator: u64,
}

impl Ratio {
    /// Never.
    pub const ZERO: Ratio = Ratio {
        numerator: 0,
        denominator: 1,
    };
    /// Always.
    pub const ONE: Ratio = Ratio {
        numerator: 1,
        denominator: 1,
    };

    /// Returns the ratio, or `None` when the denominator is zero or the ratio exceeds one.
    pub fn new(numerator: u64, denominator: u64) -> Option<Ratio> {
        (denominator != 0 && numerator <= denominator).then_some(Ratio {
            numerator,
            denominator,
        })
    }

    /// Parses `"n/d"`, `"n%"`, `"0"` or `"1"`.
    pub fn parse(text: &str) -> Option<Ratio> {
        let text = text.trim();
        if let Some(percent) = text.strip_suffix('%') {
            return Ratio::new(percent.trim().parse().ok()?, 100);
        }
        match text.split_once('/') {
            Some((n, d)) => Ratio::new(n.trim().parse().ok()?, d.trim().parse().ok()?),
            None => Ratio::new(text.parse().ok()?, 1),
        }
    }

    /// Returns the numerator.
    pub fn numerator(self) -> u64 {
        self.numerator
    }

    /// Returns the denominator.
    pub fn denominator(self) -> u64 {
        self.denominator
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

/// A ratio serializes as its text, `"1/4"`, as scenario files write it.
impl serde::Serialize for Ratio {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One actor's deterministic random stream.
#[derive(Debug, Clone)]
pub struct RngStream {
    inner: ChaCha12Rng,
    /// With a book attached, every draw is a named decision (see [`crate::decision`]).
    decided: Option<Decided>,
}

/// A stream's name, its next draw's ordinal and the book its decisions go through.
#[derive(Debug, Clone)]
struct Decided {
    name: Arc<str>,
    ordinal: u64,
    book: Arc<DecisionBook>,
}

impl RngStream {
    /// Forks the stream named `name` from the root `seed`.
    ///
    /// ```
    /// use simtape::rng::RngStream;
    /// let mut a = RngStream::fork(7, "llm");
    /// let mut b = RngStream::fork(7, "llm");
    /// assert_eq!(a.next_u64(), b.next_u64());
    /// assert_ne!(RngStream::fork(7, "fs").next_u64(), RngStream::fork(7, "llm").next_u64());
    /// ```
    pub fn fork(seed: u64, name: &str) -> RngStream {
        let mut hasher = Sha256::new();
        hasher.update(b"simtape.rng.v1\0");
        hasher.update(seed.to_le_bytes());
        hasher.update(name.as_bytes());
        let key: [u8; 32] = hasher.finalize().into();
        RngStream {
            inner: ChaCha12Rng::from_seed(key),
            decided: None,
        }
    }

    /// Forks like [`RngStream::fork`]; with a `book`, each draw is the decision `name#n`.
    pub(crate) fn fork_decided(
        seed: u64,
        name: &str,
        book: Option<Arc<DecisionBook>>,
    ) -> RngStream {
        let mut stream = RngStream::fork(seed, name);
        stream.decided = book.map(|book| Decided {
            name: Arc::from(name),
            ordinal: 0,
            book,
        });
        stream
    }

    /// Forks a child stream: the child's draws are independent of the parent's later draws.
    pub fn fork_child(&self, seed: u64, parent: &str, child: &str) -> RngStream {
        RngStream::fork(seed, &format!("{parent}/{child}"))
    }

    /// Notes, for a stream whose draws are decisions, that its next draws are taken as the
    /// run's record `ordinal` is written.
    pub(crate) fn at_record(&self, ordinal: u64) {
        if let Some(decided) = &self.decided {
            decided.book.at_record(ordinal);
        }
    }

    /// The swarm setting of rule `rule` of the fault rules drawing from this stream, when
    /// the run's decisions give one (see [`crate::decision::Swarm`]); draws nothing.
    pub fn swarm(&self, rule: usize) -> Option<crate::decision::Swarm> {
        let decided = self.decided.as_ref()?;
        decided
            .book
            .swarm(crate::decision::swarm_name(&decided.name, rule))
    }

    /// Notes, for a stream whose draws are decisions, that rule `rule` of its fault rules
    /// fired on a call of `target`.
    pub fn fired(&self, rule: usize, target: &str) {
        if let Some(decided) = &self.decided {
            decided.book.fired_rule(&decided.name, rule, target);
        }
    }

    /// Returns the next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.draw(Draw::Bits).0
    }

    /// The next 64 bits, read by `draw`, and whether they are forced (an override other than
    /// the stream's own draw).
    fn draw(&mut self, draw: Draw) -> (u64, bool) {
        // The stream advances whether or not the draw is overridden, so an override never
        // shifts a later draw.
        let drawn = self.inner.next_u64();
        match &mut self.decided {
            None => (drawn, false),
            Some(decided) => {
                let name = format!("{}#{}", decided.name, decided.ordinal);
                decided.ordinal += 1;
                decided.book.decide(name, drawn, draw)
            }
        }
    }

    /// Fills `bytes` with random bytes. Not a decision: only a WASI guest's stream fills
    /// bytes, and that stream is forked from a seed that is itself a decision.
    #[cfg(feature = "wasi")]
    pub(crate) fn fill_bytes(&mut self, bytes: &mut [u8]) {
        self.inner.fill_bytes(bytes)
    }

    /// Returns a uniform integer in `0..bound` (unbiased, by rejection). `bound` must be > 0.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.below_as(bound, Draw::Below(bound))
    }

    /// [`RngStream::below`], its decisions read by `draw`.
    fn below_as(&mut self, bound: u64, draw: Draw) -> u64 {
        assert!(bound > 0, "below(0) has no value to return");
        // Lemire's multiply-shift with rejection of the biased low zone. A forced value is
        // taken as given, so an override of 0 reads as 0 instead of drawing again (which
        // would shift every later decision of the stream).
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let (x, forced) = self.draw(draw);
            let product = u128::from(x) * u128::from(bound);
            if forced || (product as u64) >= threshold {
                return (product >> 64) as u64;
            }
        }
    }

    /// Returns a uniform integer in `low..=high`.
    pub fn range_inclusive(&mut self, low: u64, high: u64) -> u64 {
        assert!(low <= high, "empty range {low}..={high}");
        let draw = Draw::Range(low, high);
        match (high - low).checked_add(1) {
            Some(span) => low + self.below_as(span, draw),
            None => self.draw(draw).0,
        }
    }

    /// Returns true with probability `ratio`. A ratio of zero draws nothing.
    pub fn chance(&mut self, ratio: Ratio) -> bool {
        ratio.numerator > 0 && self.chance_drawn(ratio)
    }

    /// Returns true with probability `ratio`, drawing once even for a ratio of zero: a swarm
    /// run that turns a rule off keeps every later draw of the stream where it was.
    pub(crate) fn chance_drawn(&mut self, ratio: Ratio) -> bool {
        self.below_as(ratio.denominator, Draw::Chance(ratio)) < ratio.numerator
    }

    /// Picks an index with probability proportional to its weight. Returns `None` when every
    /// weight is zero or the slice is empty.
    pub fn weighted_index(&mut self, weights: &[u64]) -> Option<usize> {
        let total: u64 = weights
            .iter()
            .try_fold(0u64, |sum, w| sum.checked_add(*w))?;
        if total == 0 {
            return None;
        }
        let mut pick = self.below_as(total, Draw::Pick(total));
        for (index, weight) in weights.iter().enumerate() {
            if pick < *weight {
                return Some(index);
            }
            pick -= weight;
        }
        unreachable!("pick < total by construction")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_independent_of_other_streams_draws() {
        // Goal: drawing from one stream, or adding another, never shifts a stream's draws.
        let mut alone = RngStream::fork(42, "llm");
        let expected: Vec<u64> = (0..16).map(|_| alone.next_u64()).collect();
        let mut fs = RngStream::fork(42, "fs");
        let mut llm = RngStream::fork(42, "llm");
        let mut extra = RngStream::fork(42, "net");
        let mut got = Vec::new();
        for _ in 0..16 {
            fs.next_u64();
            extra.next_u64();
            got.push(llm.next_u64());
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn seeds_and_names_give_different_streams() {
        // Goal: the seed and the name both enter the stream key.
        let a = RngStream::fork(1, "llm").next_u64();
        assert_ne!(a, RngStream::fork(2, "llm").next_u64());
        assert_ne!(a, RngStream::fork(1, "llm2").next_u64());
    }

    #[test]
    fn chance_tracks_its_ratio() {
        // Goal: a statistical smoke test of `chance` (integer ratio 1/4 over 40,000 draws).
        let mut rng = RngStream::fork(9, "stats");
        let hits = (0..40_000)
            .filter(|_| rng.chance(Ratio::new(1, 4).unwrap()))
            .count();
        assert!((9_400..10_600).contains(&hits), "hits={hits}");
        assert!(!rng.chance(Ratio::ZERO));
        assert!(rng.chance(Ratio::ONE));
    }

    #[test]
    fn below_is_uniform_and_in_range() {
        // Goal: `below` stays in range and fills each bucket roughly evenly.
        let mut rng = RngStream::fork(3, "uniform");
        let mut buckets = [0u32; 10];
        for _ in 0..50_000 {
            buckets[rng.below(10) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|b| (4_500..5_500).contains(b)),
            "{buckets:?}"
        );
        assert_eq!(rng.range_inclusive(5, 5), 5);
    }

    #[test]
    fn weighted_index_respects_weights() {
        // Goal: zero weights are never picked; heavier weights are picked more.
        let mut rng = RngStream::fork(5, "weights");
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[rng.weighted_index(&[1, 0, 3]).unwrap()] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!(counts[2] > counts[0] * 2, "{counts:?}");
        assert_eq!(rng.weighted_index(&[0, 0]), None);
        assert_eq!(rng.weighted_index(&[]), None);
    }

    #[test]
    fn ratio_parses_and_rejects() {
        // Goal: ratios parse from the scenario notations and reject impossible values.
        assert_eq!(Ratio::parse("1/3"), Ratio::new(1, 3));
        assert_eq!(Ratio::parse("25%"), Ratio::new(25, 100));
        assert_eq!(Ratio::parse("1"), Some(Ratio::ONE));
        assert_eq!(Ratio::parse("3/2"), None);
        assert_eq!(Ratio::parse("1/0"), None);
        assert_eq!(Ratio::parse("x"), None);
    }
}
