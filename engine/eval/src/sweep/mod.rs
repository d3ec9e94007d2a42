//! The `simtape-sweep/1` report: every scenario of a seed sweep at every seed of a range (or
//! of one shard of it).
//!
//! The map, in the order a sweep uses it:
//!
//! * this module: the seed range (`A..B`) and the shard (`I/N`) a sweep covers;
//! * [`report`]: the per-seed records, the per-scenario summary (pass rate, pass@k, pass^k,
//!   failures by reason) and the merge of shard reports;
//! * [`formats`]: the report as JSON, JSON lines, JUnit XML or CSV, and the text summary;
//! * [`cluster`]: the failure cluster, what makes two failing seeds the same failure;
//! * [`diff`]: two reports compared (`simtape report diff`);
//! * [`agents`]: one scenario run by several agents, every two compared seed by seed;
//! * [`key`]: the key of a run's stored result, the digest of everything that decides it;
//! * [`plan`]: `sweep plan`'s job files, one sweep on Slurm or Kubernetes (N shards, then
//!   the merge).
//!
//! Running the seeds (threads, kept tapes, the result stores' files) is the gateway's
//! (`simtape_serve::sweep`); a report never depends on how: its records are sorted by
//! (scenario, seed) before anything renders them.

pub mod agents;
pub mod cluster;
pub mod diff;
pub mod formats;
pub mod key;
pub mod plan;
pub mod report;

use serde::{Deserialize, Serialize};

pub use cluster::ClusterKey;
pub use diff::SweepDiff;
pub use formats::{render, summary_text, write_report, ReportFormat, ReportWriteError};
pub use report::{
    merge, FailureGroup, MergeError, Reason, RetryTotals, ScenarioResults, ScenarioSummary,
    SeedResult, SweepReport, FORMAT,
};

/// At most this many runs (scenarios × seeds of the shard) in one sweep: every run keeps a
/// small record in memory until the report is written.
pub const SWEEP_RUNS_MAX: u64 = 10_000_000;

/// A half-open range of seeds, `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRange {
    /// The first seed.
    pub start: u64,
    /// The first seed past the range.
    pub end: u64,
}

/// One shard of a sweep: the seeds `s` with `s % count == index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which shard, 0-based.
    pub index: u64,
    /// How many shards the range is split into.
    pub count: u64,
}

impl Shard {
    /// The whole range, as one shard.
    pub const ALL: Shard = Shard { index: 0, count: 1 };
}

/// A seed range or shard that does not parse: a usage error, never fatal to anything but the
/// command that was given it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected}, got {found:?}")]
pub struct SyntaxError {
    /// The grammar, with an example.
    pub expected: &'static str,
    /// What was given.
    pub found: String,
}

/// Parses `A..B` (B excluded) or `A..=B` (B included); the range must not be empty. The
/// error is the message for the person who typed it.
///
/// ```
/// use simtape_eval::sweep::{parse_seeds, SeedRange};
/// assert_eq!(parse_seeds("3..=5"), Ok(SeedRange { start: 3, end: 6 }));
/// assert!(parse_seeds("5..5").is_err());
/// ```
pub fn parse_seeds(text: &str) -> Result<SeedRange, SyntaxError> {
    let usage = || SyntaxError {
        expected: "A..B or A..=B with A < B (e.g. 0..100)",
        found: text.to_string(),
    };
    let (start, end, inclusive) = match text.split_once("..=") {
        Some((a, b)) => (a, b, true),
        None => {
            let (a, b) = text.split_once("..").ok_or_else(usage)?;
            (a, b, false)
        }
    };
    // A number too large for a seed is an overflow, not a syntax error.
    let overflow = || SyntaxError {
        expected: "seeds of at most 18446744073709551615 (u64; this one overflows)",
        found: text.to_string(),
    };
    let seed = |part: &str| {
        let part = part.trim();
        part.parse::<u64>().map_err(|_| {
            if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
                overflow()
            } else {
                usage()
            }
        })
    };
    let start = seed(start)?;
    let end = seed(end)?;
    let end = if inclusive {
        end.checked_add(1).ok_or_else(overflow)?
    } else {
        end
    };
    if start >= end {
        return Err(usage());
    }
    Ok(SeedRange { start, end })
}

/// Parses `I/N` with `N ≥ 1` and `0 ≤ I < N`; the error is the message for the person who
/// typed it.
pub fn parse_shard(text: &str) -> Result<Shard, SyntaxError> {
    let usage = || SyntaxError {
        expected: "I/N with 0 <= I < N (e.g. 0/4)",
        found: text.to_string(),
    };
    let (index, count) = text.split_once('/').ok_or_else(usage)?;
    let index: u64 = index.trim().parse().map_err(|_| usage())?;
    let count: u64 = count.trim().parse().map_err(|_| usage())?;
    if count == 0 || index >= count {
        return Err(usage());
    }
    Ok(Shard { index, count })
}

impl SeedRange {
    /// Returns the first seed of `shard` in this range and how many seeds it has.
    pub fn shard_seeds(self, shard: Shard) -> (u64, u64) {
        let offset = (shard.index + shard.count - self.start % shard.count) % shard.count;
        match self
            .start
            .checked_add(offset)
            .filter(|&first| first < self.end)
        {
            Some(first) => (first, (self.end - 1 - first) / shard.count + 1),
            None => (self.start, 0),
        }
    }

    /// Returns whether `seed` is one of `shard`'s seeds in this range.
    ///
    /// ```
    /// use simtape_eval::sweep::{SeedRange, Shard};
    /// let seeds = SeedRange { start: 0, end: 10 };
    /// assert!(seeds.has_seed(Shard { index: 1, count: 3 }, 7));
    /// assert!(!seeds.has_seed(Shard { index: 1, count: 3 }, 8));
    /// assert!(!seeds.has_seed(Shard::ALL, 10));
    /// ```
    pub fn has_seed(self, shard: Shard, seed: u64) -> bool {
        (self.start..self.end).contains(&seed) && seed % shard.count == shard.index
    }

    /// Returns the `nth` (0-based) seed of `shard` in this range; `nth` is below the count
    /// [`SeedRange::shard_seeds`] gives.
    pub fn nth_seed(self, shard: Shard, nth: u64) -> u64 {
        self.shard_seeds(shard).0 + nth * shard.count
    }
}

impl std::fmt::Display for SeedRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_and_shards_parse_and_partition() {
        // Goal: the grammar accepts A..B, A..=B and I/N, refuses the rest, and the shards of
        // a range partition it exactly.
        assert_eq!(parse_seeds("0..40"), Ok(SeedRange { start: 0, end: 40 }));
        assert_eq!(parse_seeds("3..=5"), Ok(SeedRange { start: 3, end: 6 }));
        for bad in [
            "",
            "5",
            "5..5",
            "9..2",
            "a..b",
            "0..-1",
            "1..=18446744073709551615",
        ] {
            assert!(parse_seeds(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_shard("1/2"), Ok(Shard { index: 1, count: 2 }));
        for bad in ["", "2/2", "0/0", "1", "-1/2", "x/y"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
        let range = SeedRange { start: 7, end: 30 };
        let mut seen = Vec::new();
        for index in 0..4 {
            let (first, count) = range.shard_seeds(Shard { index, count: 4 });
            seen.extend((0..count).map(|j| first + j * 4));
            assert!(seen.iter().all(|s| s % 4 <= index));
        }
        seen.sort_unstable();
        assert_eq!(seen, (7..30).collect::<Vec<_>>());
        let tiny = SeedRange { start: 0, end: 1 };
        assert_eq!(tiny.shard_seeds(Shard { index: 1, count: 2 }).1, 0);
    }
}
