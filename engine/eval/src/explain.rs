//! When did a failure become inevitable? The curve `simtape explain` draws: at points along a
//! failing run, the share of forked futures (the run's decisions up to the point, fresh draws
//! after it) that fail the same way, and the first point after which nearly all do.
//!
//! ```
//! use simtape_eval::explain::{inevitable_from, Point};
//! let point = |record, same| Point { record, same, forks: 10 };
//! let curve = [point(0, 2), point(5, 3), point(9, 10), point(12, 10)];
//! assert_eq!(inevitable_from(&curve, (9, 10)), Some(2));
//! ```

use serde::Serialize;

/// One point of the curve: forks from just before `record`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Point {
    /// The record (its index on the tape) the forks branched at.
    pub record: u64,
    /// How many forks failed the same way.
    pub same: u32,
    /// How many forks ran.
    pub forks: u32,
}

impl Point {
    /// Whether at least `numerator / denominator` of the forks failed the same way (exact
    /// integer arithmetic).
    pub fn at_least(&self, (numerator, denominator): (u32, u32)) -> bool {
        u64::from(self.same) * u64::from(denominator)
            >= u64::from(numerator) * u64::from(self.forks)
    }
}

/// A point of the curve where it sits on the run: its virtual time and the decisions the run
/// took at its record (what the page and the text name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placed {
    /// The point.
    pub point: Point,
    /// The virtual time of its record.
    pub t_ns: u64,
    /// The decisions taken at its record, as people read them (`fs#3 (13384093 of 0..2…)`).
    pub decided: Vec<String>,
}

/// A whole explanation: the failure, the curve along the run, and where it became (nearly)
/// certain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The failure's cluster, as a line (`verifier (fail): both edits landed: …`).
    pub failure: String,
    /// The points, in record order.
    pub curve: Vec<Placed>,
    /// The index in `curve` of the first point from which the failure is nearly certain.
    pub inevitable: Option<usize>,
    /// What "nearly certain" is: at least this share of the forks.
    pub nearly: (u32, u32),
}

/// The index of the first point from which every later point has at least `ratio` of its
/// forks failing the same way: where the failure became (nearly) certain. `None` when even
/// the last point does not reach it.
pub fn inevitable_from(curve: &[Point], ratio: (u32, u32)) -> Option<usize> {
    let mut first = None;
    for (index, point) in curve.iter().enumerate() {
        match (point.at_least(ratio), first) {
            (true, None) => first = Some(index),
            (false, _) => first = None,
            (true, Some(_)) => {}
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dip_after_a_high_point_moves_the_point_of_no_return() {
        // Goal: the point is the start of the last run of high points, not the first high one.
        let point = |record, same| Point {
            record,
            same,
            forks: 10,
        };
        let curve = [point(0, 10), point(3, 4), point(7, 9), point(8, 10)];
        assert_eq!(inevitable_from(&curve, (9, 10)), Some(2));
        assert_eq!(inevitable_from(&curve[..2], (9, 10)), None);
        assert!(point(1, 9).at_least((9, 10)) && !point(1, 8).at_least((9, 10)));
    }
}
