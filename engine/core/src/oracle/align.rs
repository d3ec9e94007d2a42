//! Aligns two fingerprint sequences into gaps: maximal runs of records that differ.
//!
//! The common prefix and suffix are stripped first (two runs of one program usually share
//! almost everything), then the middle goes through Myers' diff (the `similar` crate) one
//! bounded window at a time. Between two gaps, and before the first and after the last, the
//! sequences are equal record for record.

use std::ops::Range;

use similar::algorithms::{myers, DiffHook};
use similar::DiffTag;

/// Records per side that one Myers run sees at most.
///
/// Myers costs O((n + m) · d) for d differences, so two unrelated million-record tapes would
/// take hours in one run. Windows bound the cost to O((n + m) · window) while any difference
/// shorter than half a window is found exactly as an unbounded diff finds it.
pub(crate) const WINDOW_RECORDS: usize = 1024;

/// A maximal run of differing records: positions `a` in tape A's compared records are replaced
/// by positions `b` in tape B's. One of the two ranges may be empty (an insertion or deletion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gap {
    pub(crate) a: Range<usize>,
    pub(crate) b: Range<usize>,
}

/// Returns the gaps between `a` and `b`, in order.
pub(crate) fn align(a: &[u64], b: &[u64]) -> Vec<Gap> {
    let prefix = common_prefix(a, b);
    let suffix = common_suffix(&a[prefix..], &b[prefix..]);
    let (a_end, b_end) = (a.len() - suffix, b.len() - suffix);
    let mut gaps = Vec::new();
    let (mut i, mut j) = (prefix, prefix);
    loop {
        let equal = common_prefix(&a[i..a_end], &b[j..b_end]);
        i += equal;
        j += equal;
        if i == a_end || j == b_end {
            push(&mut gaps, i..a_end, j..b_end);
            return gaps;
        }
        let (taken_a, taken_b) = diff_window(&a[i..a_end], &b[j..b_end], (i, j), &mut gaps);
        i += taken_a;
        j += taken_b;
    }
}

/// Diffs a window at the front of `a` and `b` (both non-empty, differing at their first
/// records), records the gaps it is sure of, and returns the records of each side it used up
/// (at least one in all).
fn diff_window(
    a: &[u64],
    b: &[u64],
    origin: (usize, usize),
    gaps: &mut Vec<Gap>,
) -> (usize, usize) {
    let (width_a, width_b) = (a.len().min(WINDOW_RECORDS), b.len().min(WINDOW_RECORDS));
    let mut script = Script::default();
    let Ok(()) = myers::diff(
        &mut script,
        &a[..width_a],
        0..width_a,
        &b[..width_b],
        0..width_b,
    );
    let whole = width_a == a.len() && width_b == b.len();
    // Where a window cuts the sequences, the tail of its diff is an artefact of the cut; its
    // head is not. Keep the steps that end in the first half; the next window redoes the rest.
    let (keep_a, keep_b) = if whole {
        (width_a, width_b)
    } else {
        ((width_a / 2).max(1), (width_b / 2).max(1))
    };
    let mut taken = (0, 0);
    for (tag, old, new) in &script.steps {
        if old.end > keep_a || new.end > keep_b {
            break;
        }
        if *tag != DiffTag::Equal {
            let (x, y) = origin;
            push(gaps, x + old.start..x + old.end, y + new.start..y + new.end);
        }
        taken = (old.end, new.end);
    }
    if taken == (0, 0) {
        // The first step is a change longer than half a window: keep half a window of it, and
        // the next window continues it (the pieces merge into one gap).
        let (tag, old, new) = &script.steps[0];
        assert_ne!(*tag, DiffTag::Equal, "the window starts with a difference");
        taken = (old.len().min(keep_a), new.len().min(keep_b));
        push(
            gaps,
            origin.0..origin.0 + taken.0,
            origin.1..origin.1 + taken.1,
        );
    }
    taken
}

/// Myers' edit script for one window, step by step.
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

/// Appends a gap, merging it with the previous one when they touch.
fn push(gaps: &mut Vec<Gap>, a: Range<usize>, b: Range<usize>) {
    if a.is_empty() && b.is_empty() {
        return;
    }
    if let Some(last) = gaps.last_mut() {
        if last.a.end == a.start && last.b.end == b.start {
            last.a.end = a.end;
            last.b.end = b.end;
            return;
        }
    }
    gaps.push(Gap { a, b });
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

    /// Returns the gaps of an unbounded Myers diff, for comparison.
    fn reference(a: &[u64], b: &[u64]) -> Vec<Gap> {
        let mut script = Script::default();
        let Ok(()) = myers::diff(&mut script, a, 0..a.len(), b, 0..b.len());
        let mut gaps = Vec::new();
        for (tag, old, new) in script.steps {
            if tag != DiffTag::Equal {
                push(&mut gaps, old, new);
            }
        }
        gaps
    }

    /// Checks that `gaps` are ordered and that the records between them are equal.
    fn assert_consistent(a: &[u64], b: &[u64], gaps: &[Gap]) {
        let (mut i, mut j) = (0, 0);
        for g in gaps
            .iter()
            .chain([&gap(a.len()..a.len(), b.len()..b.len())])
        {
            assert_eq!(g.a.start - i, g.b.start - j, "equal runs have one length");
            assert_eq!(a[i..g.a.start], b[j..g.b.start]);
            (i, j) = (g.a.end, g.b.end);
        }
    }

    #[test]
    fn equal_sequences_have_no_gaps() {
        // Goal: identical input, no gap; empty input, no gap.
        let a: Vec<u64> = (0..5000).map(|i| i % 7).collect();
        assert_eq!(align(&a, &a), vec![]);
        assert_eq!(align(&[], &[]), vec![]);
    }

    #[test]
    fn one_insertion_is_one_gap() {
        // Goal: an inserted record is one gap, wherever it is.
        let a: Vec<u64> = (0..10_000).collect();
        for at in [0, 1, 4999, 9999, 10_000] {
            let mut b = a.clone();
            b.insert(at, 77_777);
            assert_eq!(
                align(&a, &b),
                vec![gap(at..at, at..at + 1)],
                "insert at {at}"
            );
            assert_eq!(
                align(&b, &a),
                vec![gap(at..at + 1, at..at)],
                "delete at {at}"
            );
        }
    }

    #[test]
    fn sparse_changes_match_an_unbounded_diff() {
        // Goal: changes further apart than a window are found exactly as plain Myers finds them.
        let a: Vec<u64> = (0..20_000).collect();
        let mut b = a.clone();
        b[700] = 1_000_001;
        b.insert(5000, 1_000_002);
        b.drain(9000..9003);
        b.splice(15_000..15_002, [1_000_003, 1_000_004, 1_000_005]);
        let gaps = align(&a, &b);
        assert_eq!(gaps, reference(&a, &b));
        assert_eq!(gaps.len(), 4);
        assert_consistent(&a, &b, &gaps);
    }

    #[test]
    fn long_changes_become_one_gap() {
        // Goal: a change longer than a window is cut into windows that merge back into one gap.
        let a: Vec<u64> = (0..10_000).collect();
        let mut b = a.clone();
        b.splice(2000..5000, (0..2500).map(|i| 1_000_000 + i));
        assert_eq!(align(&a, &b), vec![gap(2000..5000, 2000..4500)]);
    }

    #[test]
    fn unrelated_sequences_terminate_consistently() {
        // Goal: two unrelated sequences with repeated values align quickly and consistently.
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 60) % 5
        };
        let a: Vec<u64> = (0..50_000).map(|_| next()).collect();
        let b: Vec<u64> = (0..40_000).map(|_| next()).collect();
        let gaps = align(&a, &b);
        assert_consistent(&a, &b, &gaps);
    }
}
