//! Virtual times of compared records, kept compactly so that timing-only differences are found
//! without streaming the tapes again.
//!
//! Each time is stored as the difference from the previous record's, as a LEB128 varint: a run
//! whose records are microseconds apart costs about two bytes a record. The difference wraps
//! (`wrapping_sub`), so a tape whose times run backwards still round-trips, at ten bytes.

use super::align::Gap;

/// The virtual times of one tape's compared records, in order.
#[derive(Debug, Default)]
pub(crate) struct Times {
    bytes: Vec<u8>,
    last_ns: u64,
}

impl Times {
    /// Appends the next record's time.
    pub(crate) fn push(&mut self, t_ns: u64) {
        let mut delta = t_ns.wrapping_sub(self.last_ns);
        self.last_ns = t_ns;
        while delta >= 0x80 {
            self.bytes.push((delta as u8) | 0x80);
            delta >>= 7;
        }
        self.bytes.push(delta as u8);
    }

    fn cursor(&self) -> Cursor<'_> {
        Cursor {
            bytes: &self.bytes,
            t_ns: 0,
        }
    }
}

/// Reads times back in order.
struct Cursor<'t> {
    bytes: &'t [u8],
    t_ns: u64,
}

impl Cursor<'_> {
    fn next(&mut self) -> u64 {
        let mut delta = 0u64;
        let mut shift = 0;
        loop {
            let (&byte, rest) = self
                .bytes
                .split_first()
                .expect("one time per compared record");
            self.bytes = rest;
            delta |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte < 0x80 {
                break;
            }
        }
        self.t_ns = self.t_ns.wrapping_add(delta);
        self.t_ns
    }

    fn skip(&mut self, count: usize) {
        for _ in 0..count {
            self.next();
        }
    }
}

/// Timing-only differences: paired (equal-content) records at different virtual times.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Timing {
    /// How many pairs differ in time.
    pub(crate) count: u64,
    /// The positions in A and in B of the first such pair.
    pub(crate) first: Option<(usize, usize)>,
}

/// Compares the times of the records that `gaps` pair up; `len_a` is A's record count.
pub(crate) fn compare(a: &Times, b: &Times, gaps: &[Gap], len_a: usize) -> Timing {
    let (mut cursor_a, mut cursor_b) = (a.cursor(), b.cursor());
    let mut timing = Timing::default();
    let (mut position_a, mut position_b) = (0, 0);
    // A sentinel gap at the end of A closes the last run of pairs (only its start is read).
    let end = Gap {
        a: len_a..len_a,
        b: 0..0,
    };
    for gap in gaps.iter().chain([&end]) {
        for offset in 0..gap.a.start - position_a {
            if cursor_a.next() != cursor_b.next() {
                timing.count += 1;
                timing
                    .first
                    .get_or_insert((position_a + offset, position_b + offset));
            }
        }
        cursor_a.skip(gap.a.len());
        cursor_b.skip(gap.b.len());
        (position_a, position_b) = (gap.a.end, gap.b.end);
    }
    timing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(values: &[u64]) -> Times {
        let mut times = Times::default();
        values.iter().for_each(|&t| times.push(t));
        times
    }

    #[test]
    fn times_round_trip_in_any_order() {
        // Goal: any sequence of times, rising, equal, falling or huge, reads back unchanged.
        let values = [0, 5, 5, 300, 1 << 40, 7, u64::MAX, 0, 1_000_000_000];
        let stored = times(&values);
        let mut cursor = stored.cursor();
        let read: Vec<u64> = values.iter().map(|_| cursor.next()).collect();
        assert_eq!(read, values);
        assert!(cursor.bytes.is_empty());
    }

    #[test]
    fn only_paired_records_are_compared() {
        // Goal: times of records inside gaps do not count; pairs after a gap are matched up
        // across it.
        let a = times(&[1, 2, 3, 4, 5]);
        let b = times(&[1, 2, 99, 100, 3, 4, 6]);
        let gaps = [Gap { a: 2..2, b: 2..4 }];
        assert_eq!(
            compare(&a, &b, &gaps, 5),
            Timing {
                count: 1,
                first: Some((4, 6))
            }
        );
        assert_eq!(compare(&a, &a, &[], 5), Timing::default());
    }
}
