//! Seed sweeps: one single-threaded simulation per seed, on a pool of OS threads.
//!
//! The map, in the order a sweep uses it:
//!
//! * this module: the seed range (`A..B`) and the shard (`I/N`) a sweep covers;
//! * [`pool`]: runs the seeds on `--jobs` threads, each scenario loaded once and shared
//!   read-only, and keeps the tapes of failing seeds;
//! * [`progress`]: the progress line on a terminal, plain lines elsewhere;
//! * [`report`]: the per-seed records, the per-scenario summary (pass rate, pass@k, pass^k,
//!   failures by reason) and the merge of shard reports;
//! * [`formats`]: the report as JSON, JSON lines, JUnit XML or CSV, and the text summary.
//!
//! Results never depend on `--jobs`: every record is collected, then sorted by
//! (scenario, seed) before anything is reported.

pub(crate) mod formats;
pub(crate) mod pool;
pub(crate) mod progress;
pub(crate) mod report;

use serde::{Deserialize, Serialize};

/// At most this many runs (scenarios × seeds of the shard) in one sweep: every run keeps a
/// small record in memory until the report is written.
pub(crate) const SWEEP_RUNS_MAX: u64 = 10_000_000;

/// A half-open range of seeds, `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SeedRange {
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// One shard of a sweep: the seeds `s` with `s % count == index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Shard {
    pub(crate) index: u64,
    pub(crate) count: u64,
}

impl Shard {
    /// The whole range, as one shard.
    pub(crate) const ALL: Shard = Shard { index: 0, count: 1 };
}

/// Parses `A..B` (B excluded) or `A..=B` (B included); the range must not be empty.
pub(crate) fn parse_seeds(text: &str) -> Result<SeedRange, String> {
    let usage = || format!("expected A..B or A..=B with A < B (e.g. 0..100), got {text:?}");
    let (start, end, inclusive) = match text.split_once("..=") {
        Some((a, b)) => (a, b, true),
        None => {
            let (a, b) = text.split_once("..").ok_or_else(usage)?;
            (a, b, false)
        }
    };
    let start: u64 = start.trim().parse().map_err(|_| usage())?;
    let end: u64 = end.trim().parse().map_err(|_| usage())?;
    let end = if inclusive {
        end.checked_add(1).ok_or_else(usage)?
    } else {
        end
    };
    if start >= end {
        return Err(usage());
    }
    Ok(SeedRange { start, end })
}

/// Parses `I/N` with `N ≥ 1` and `0 ≤ I < N`.
pub(crate) fn parse_shard(text: &str) -> Result<Shard, String> {
    let usage = || format!("expected I/N with 0 <= I < N (e.g. 0/4), got {text:?}");
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
    pub(crate) fn shard_seeds(self, shard: Shard) -> (u64, u64) {
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
