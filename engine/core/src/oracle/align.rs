//! Aligns two fingerprint sequences into gaps: maximal runs of records that differ.
//!
//! The common prefix and suffix are stripped first (two runs of one program usually share
//! almost everything), then the middle goes through Myers' diff (the `similar` crate). Between
//! two gaps, and before the first and after the last, the sequences are equal record for
//! record.
//!
//! Myers costs about d² steps for d differences, plus a walk along the equal runs: a million
//! records with a few thousand differences align in a fraction of a second, but two unrelated
//! tapes would take hours. So a bounded search first measures d, and past
//! [`DIFFERENCES_MAX`] the middle is reported as one changed gap instead of being aligned.

use std::ops::Range;

use similar::algorithms::{myers, DiffHook};
use similar::DiffTag;

/// Records that may differ (inserted plus deleted) for the tapes to be aligned; beyond this
/// the tapes are too different for a record-by-record alignment to help, and it would cost
/// seconds to minutes.
pub(crate) const DIFFERENCES_MAX: usize = 1 << 14;

/// A maximal run of differing records: positions `a` in tape A's compared records are replaced
/// by positions `b` in tape B's. One of the two ranges may be empty (an insertion or deletion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gap {
    pub(crate) a: Range<usize>,
    pub(crate) b: Range<usize>,
}

/// The gaps between two sequences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alignment {
    /// The gaps, in order.
    pub(crate) gaps: Vec<Gap>,
    /// False when more than [`DIFFERENCES_MAX`] records differ: then everything between the
    /// first and the last difference is one gap.
    pub(crate) aligned: bool,
}

/// Returns the gaps between `a` and `b`.
pub(crate) fn align(a: &[u64], b: &[u64]) -> Alignment {
    align_within(a, b, DIFFERENCES_MAX)
}

/// Returns the gaps between `a` and `b`, aligning them if at most `differences_max` records
/// differ.
fn align_within(a: &[u64], b: &[u64], differences_max: usize) -> Alignment {
    let prefix = common_prefix(a, b);
    let suffix = common_suffix(&a[prefix..], &b[prefix..]);
    let middle_a = &a[prefix..a.len() - suffix];
    let middle_b = &b[prefix..b.len() - suffix];
    let whole = Gap {
        a: prefix..prefix + middle_a.len(),
        b: prefix..prefix + middle_b.len(),
    };
    if middle_a.is_empty() || middle_b.is_empty() {
        let gaps = if whole.a.is_empty() && whole.b.is_empty() {
            vec![]
        } else {
            vec![whole]
        };
        return Alignment {
            gaps,
            aligned: true,
        };
    }
    if distance_at_most(middle_a, middle_b, differences_max).is_none() {
        return Alignment {
            gaps: vec![whole],
            aligned: false,
        };
    }
    let mut script = Script::default();
    let Ok(()) = myers::diff(
        &mut script,
        middle_a,
        0..middle_a.len(),
        middle_b,
        0..middle_b.len(),
    );
    let mut gaps: Vec<Gap> = Vec::new();
    for (tag, old, new) in script.steps {
        if tag == DiffTag::Equal {
            continue;
        }
        let (old, new) = (
            prefix + old.start..prefix + old.end,
            prefix + new.start..prefix + new.end,
        );
        match gaps.last_mut() {
            // A deletion next to an insertion is one change.
            Some(last) if last.a.end == old.start && last.b.end == new.start => {
                last.a.end = old.end;
                last.b.end = new.end;
            }
            _ => gaps.push(Gap { a: old, b: new }),
        }
    }
    Alignment {
        gaps,
        aligned: true,
    }
}

/// Returns the edit distance (insertions plus deletions) between `a` and `b` if it is at most
/// `bound`. This is Myers' greedy forward search, without the path, stopped at `bound`: about
/// `bound`² steps at most plus the walk along equal runs, in `O(bound)` memory.
fn distance_at_most(a: &[u64], b: &[u64], bound: usize) -> Option<usize> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let bound = bound as isize;
    // `furthest[k + bound + 1]`: the furthest x reached on diagonal k = x - y.
    let mut furthest = vec![0isize; 2 * bound as usize + 3];
    let at = |k: isize| (k + bound + 1) as usize;
    for d in 0..=bound {
        for k in (-d..=d).step_by(2) {
            let mut x = if k == -d || (k != d && furthest[at(k - 1)] < furthest[at(k + 1)]) {
                furthest[at(k + 1)]
            } else {
                furthest[at(k - 1)] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            furthest[at(k)] = x;
            if x >= n && y >= m {
                return Some(d as usize);
            }
        }
    }
    None
}

/// Myers' edit script, step by step.
///
/// This hook takes the algorithm's own calls rather than `similar::capture_diff_slices`:
/// in similar 2.7 the ops that function returns can misplace an insertion that follows an
/// equal run by one position (its `Replace` hook), and gap positions must be exact.
#[derive(Debug, Default)]
struct Script {
    steps: Vec<(DiffTag, Range<usize>, Range<usize>)>,
}

impl Script {
    fn step(&mut self, tag: DiffTag, old: Range<usize>, new: Range<usize>) {
        let at = self
            .steps
            .last()
            .map_or((0, 0), |(_, old, new)| (old.end, new.end));
        assert_eq!(at, (old.start, new.start), "Myers' steps are contiguous");
        self.steps.push((tag, old, new));
    }
}

impl DiffHook for Script {
    type Error = std::convert::Infallible;

    fn equal(&mut self, old: usize, new: usize, len: usize) -> Result<(), Self::Error> {
        self.step(DiffTag::Equal, old..old + len, new..new + len);
        Ok(())
    }

    fn delete(&mut self, old: usize, old_len: usize, new: usize) -> Result<(), Self::Error> {
        self.step(DiffTag::Delete, old..old + old_len, new..new);
        Ok(())
    }

    fn insert(&mut self, old: usize, new: usize, new_len: usize) -> Result<(), Self::Error> {
        self.step(DiffTag::Insert, old..old, new..new + new_len);
        Ok(())
    }
}

fn common_prefix(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn common_suffix(a: &[u64], b: &[u64]) -> usize {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(a: Range<usize>, b: Range<usize>) -> Gap {
        Gap { a, b }
    }

    fn gaps(a: &[u64], b: &[u64]) -> Vec<Gap> {
        let alignment = align(a, b);
        assert!(alignment.aligned);
        alignment.gaps
    }

    /// Checks that `gaps` are ordered and that the records between them are equal.
    fn assert_consistent(a: &[u64], b: &[u64], gaps: &[Gap]) {
        let (mut i, mut j) = (0, 0);
        let end = gap(a.len()..a.len(), b.len()..b.len());
        for g in gaps.iter().chain([&end]) {
            assert_eq!(g.a.start - i, g.b.start - j, "equal runs have one length");
            assert_eq!(a[i..g.a.start], b[j..g.b.start]);
            (i, j) = (g.a.end, g.b.end);
        }
    }

    fn random(seed: u64, len: usize, values: u64) -> Vec<u64> {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % values
        };
        (0..len).map(|_| next()).collect()
    }

    #[test]
    fn equal_sequences_have_no_gaps() {
        // Goal: identical input, no gap; empty input, no gap.
        let a: Vec<u64> = (0..5000).map(|i| i % 7).collect();
        assert_eq!(gaps(&a, &a), vec![]);
        assert_eq!(gaps(&[], &[]), vec![]);
    }

    #[test]
    fn one_insertion_is_one_gap() {
        // Goal: an inserted record is one gap, wherever it is.
        let a: Vec<u64> = (0..10_000).map(|i| i % 61).collect();
        for at in [0, 1, 4999, 9999, 10_000] {
            let mut b = a.clone();
            b.insert(at, 77_777);
            assert_eq!(
                gaps(&a, &b),
                vec![gap(at..at, at..at + 1)],
                "insert at {at}"
            );
            assert_eq!(
                gaps(&b, &a),
                vec![gap(at..at + 1, at..at)],
                "delete at {at}"
            );
        }
    }

    #[test]
    fn scattered_changes_are_separate_gaps() {
        // Goal: changes far apart are separate gaps, a deletion beside an insertion is one
        // change, and a long insertion does not throw the rest of the alignment off.
        let a: Vec<u64> = (0..200_000).map(|i| i % 61).collect();
        let mut b = a.clone();
        b[700] = 1_000_001;
        b.splice(5000..5000, (0..3000).map(|i| 2_000_000 + i));
        b.drain(90_000..90_003);
        b.splice(150_000..150_002, [1_000_003, 1_000_004, 1_000_005]);
        let found = gaps(&a, &b);
        assert_eq!(
            found,
            vec![
                gap(700..701, 700..701),
                gap(5000..5000, 5000..8000),
                gap(87_000..87_003, 90_000..90_000),
                gap(147_003..147_005, 150_000..150_003),
            ]
        );
        assert_consistent(&a, &b, &found);
    }

    #[test]
    fn the_distance_search_matches_myers() {
        // Goal: the bounded search finds the edit distance Myers' script has, and gives up
        // past its bound.
        for seed in 0..20 {
            let a = random(seed, 300, 4);
            let b = random(seed + 100, 280, 4);
            let mut script = Script::default();
            let Ok(()) = myers::diff(&mut script, &a[..], 0..a.len(), &b[..], 0..b.len());
            let distance: usize = script
                .steps
                .iter()
                .filter(|(tag, ..)| *tag != DiffTag::Equal)
                .map(|(_, old, new)| old.len() + new.len())
                .sum();
            assert_eq!(distance_at_most(&a, &b, 600), Some(distance), "seed {seed}");
            assert_eq!(distance_at_most(&a, &b, distance - 1), None, "seed {seed}");
        }
    }

    #[test]
    fn unrelated_sequences_become_one_gap() {
        // Goal: past the difference bound the middle is one gap, marked as not aligned.
        let mut a = random(1, 4_000, 5);
        let mut b = random(2, 4_000, 5);
        a.splice(0..0, [9, 9, 9]);
        b.splice(0..0, [9, 9, 9]);
        assert!(align_within(&a, &b, 8_000).aligned);
        let alignment = align_within(&a, &b, 1_000);
        assert!(!alignment.aligned);
        assert_eq!(alignment.gaps.len(), 1);
        assert_consistent(&a, &b, &alignment.gaps);
        assert_eq!(alignment.gaps[0].a.start, 3);
    }
}
