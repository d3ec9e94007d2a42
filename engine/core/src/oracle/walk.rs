//! Pass two: walks both tapes in lockstep along the gaps that alignment found.
//!
//! On the way it counts paired records whose virtual times differ (timing-only differences),
//! tallies the records of each gap by actor and kind, turns gap positions into record indices,
//! and keeps the records of the first divergence: only those two records are ever held whole.

use std::collections::BTreeMap;
use std::io::Read;

use super::align::Gap;
use super::fingerprint::{is_compared, ActorNames, Scan};
use super::report::{Hunk, HunkOp, IndexRange};
use super::{Mode, OracleError, Side};
use crate::tape::{RawRecord, RecordKind, TapeReader};

/// Hunks a report lists; beyond this only their number is kept, so two unrelated tapes do not
/// make a report as large as the tapes.
pub(crate) const HUNKS_LISTED_MAX: usize = 1000;

/// One tape's compared records, one at a time, with a one-record lookahead.
pub(crate) struct Stream<R: Read> {
    side: Side,
    path: String,
    mode: Mode,
    reader: TapeReader<R>,
    pub(crate) actors: ActorNames,
    lookahead: Option<RawRecord>,
    /// The footer's index and virtual time, once reached.
    end: Option<(u64, u64)>,
    /// The chain hash pass one saw in the footer: pass two must see the same tape.
    final_hash: u64,
}

impl<R: Read> Stream<R> {
    pub(crate) fn new(
        reader: TapeReader<R>,
        side: Side,
        path: String,
        mode: Mode,
        scan: &Scan,
    ) -> Stream<R> {
        let actors = ActorNames::new(reader.header());
        let final_hash = scan.footer.final_hash;
        Stream {
            side,
            path,
            mode,
            reader,
            actors,
            lookahead: None,
            end: None,
            final_hash,
        }
    }

    fn changed(&self) -> OracleError {
        OracleError::Changed {
            side: self.side,
            path: self.path.clone(),
        }
    }

    fn fill(&mut self) -> Result<(), OracleError> {
        while self.lookahead.is_none() && self.end.is_none() {
            let record = self
                .reader
                .next_record()
                .map_err(|source| OracleError::Tape {
                    side: self.side,
                    path: self.path.clone(),
                    source,
                })?;
            match record {
                Some(record) if is_compared(self.mode, record.kind) => {
                    self.lookahead = Some(record);
                }
                Some(record) if record.kind == RecordKind::Footer => {
                    self.end = Some((record.index, record.t_ns));
                    let footer = self.reader.footer().expect("the footer was just read");
                    if footer.final_hash != self.final_hash {
                        return Err(self.changed());
                    }
                }
                Some(_) => {}
                None => unreachable!("the reader returns the footer before it returns None"),
            }
        }
        Ok(())
    }

    /// Returns the next compared record; alignment says it exists, so its absence means the
    /// tape changed since pass one.
    pub(crate) fn next(&mut self) -> Result<RawRecord, OracleError> {
        self.fill()?;
        self.lookahead.take().ok_or_else(|| self.changed())
    }

    /// Returns the index and virtual time of the next compared record, or of the footer at
    /// the end: where a record inserted in the other tape would go.
    pub(crate) fn here(&mut self) -> Result<(u64, u64), OracleError> {
        self.fill()?;
        match (&self.lookahead, self.end) {
            (Some(record), _) => Ok((record.index, record.t_ns)),
            (None, Some(end)) => Ok(end),
            (None, None) => unreachable!("fill stops at a record or at the footer"),
        }
    }

    /// Reads to the footer; a compared record left over means the tape changed.
    pub(crate) fn finish(&mut self) -> Result<(), OracleError> {
        self.fill()?;
        match self.lookahead {
            Some(_) => Err(self.changed()),
            None => Ok(()),
        }
    }
}

/// The first divergence as found, before its fields are compared.
#[derive(Debug)]
pub(crate) enum FirstFound {
    /// A gap: its op, the first record of each side (if the side has one) and where each
    /// tape stood when the gap began (index and virtual time).
    Gap {
        op: HunkOp,
        count: u64,
        a: Option<RawRecord>,
        b: Option<RawRecord>,
        here_a: (u64, u64),
        here_b: (u64, u64),
    },
    /// A pair of equal records at different virtual times (a divergence in exact mode only).
    Timing { a: RawRecord, b: RawRecord },
}

/// What pass two found.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    pub(crate) timing_only: u64,
    pub(crate) by_actor: BTreeMap<String, u64>,
    pub(crate) by_kind: BTreeMap<String, u64>,
    pub(crate) hunks: Vec<Hunk>,
    pub(crate) first: Option<FirstFound>,
}

/// Walks `a` and `b` along `gaps`; `len_a` is the number of compared records of A.
pub(crate) fn walk<RA: Read, RB: Read>(
    a: &mut Stream<RA>,
    b: &mut Stream<RB>,
    gaps: &[Gap],
    len_a: usize,
    mode: Mode,
) -> Result<Walk, OracleError> {
    let mut walk = Walk::default();
    let mut position_a = 0;
    for gap in gaps {
        walk.matched(a, b, gap.a.start - position_a, mode)?;
        walk.gap(a, b, gap)?;
        position_a = gap.a.end;
    }
    walk.matched(a, b, len_a - position_a, mode)?;
    a.finish()?;
    b.finish()?;
    Ok(walk)
}

impl Walk {
    /// Steps over `count` paired records, comparing their virtual times.
    fn matched<RA: Read, RB: Read>(
        &mut self,
        a: &mut Stream<RA>,
        b: &mut Stream<RB>,
        count: usize,
        mode: Mode,
    ) -> Result<(), OracleError> {
        for _ in 0..count {
            let (record_a, record_b) = (a.next()?, b.next()?);
            // Outcome mode compares final effects, whenever they were declared.
            if mode == Mode::Outcome || record_a.t_ns == record_b.t_ns {
                continue;
            }
            self.timing_only += 1;
            if mode == Mode::Exact && self.first.is_none() {
                self.first = Some(FirstFound::Timing {
                    a: record_a,
                    b: record_b,
                });
            }
        }
        Ok(())
    }

    /// Steps over one gap: tallies it, lists it, and keeps it if it is the first divergence.
    fn gap<RA: Read, RB: Read>(
        &mut self,
        a: &mut Stream<RA>,
        b: &mut Stream<RB>,
        gap: &Gap,
    ) -> Result<(), OracleError> {
        let (here_a, here_b) = (a.here()?, b.here()?);
        let (first_a, end_a) = self.side_of_gap(a, gap.a.len(), 0)?;
        // A changed record is one difference: count B's records only past A's.
        let (first_b, end_b) = self.side_of_gap(b, gap.b.len(), gap.a.len())?;
        let op = match (gap.a.is_empty(), gap.b.is_empty()) {
            (true, false) => HunkOp::Inserted,
            (false, true) => HunkOp::Deleted,
            (false, false) => HunkOp::Changed,
            (true, true) => unreachable!("alignment never makes an empty gap"),
        };
        let count = gap.a.len().max(gap.b.len()) as u64;
        if self.hunks.len() < HUNKS_LISTED_MAX {
            self.hunks.push(Hunk {
                op,
                a: IndexRange {
                    start: here_a.0,
                    end: end_a.unwrap_or(here_a.0),
                },
                b: IndexRange {
                    start: here_b.0,
                    end: end_b.unwrap_or(here_b.0),
                },
                count,
            });
        }
        if self.first.is_none() {
            self.first = Some(FirstFound::Gap {
                op,
                count,
                a: first_a,
                b: first_b,
                here_a,
                here_b,
            });
        }
        Ok(())
    }

    /// Reads `count` records of one side of a gap, tallying those from position `tally_from`
    /// on; returns the first record and the index after the last.
    fn side_of_gap<R: Read>(
        &mut self,
        stream: &mut Stream<R>,
        count: usize,
        tally_from: usize,
    ) -> Result<(Option<RawRecord>, Option<u64>), OracleError> {
        let mut first = None;
        let mut end = None;
        for position in 0..count {
            let record = stream.next()?;
            if position >= tally_from {
                tally(&mut self.by_actor, &stream.actors.name(record.actor));
                tally(&mut self.by_kind, record.kind.name());
            }
            end = Some(record.index + 1);
            if position == 0 && self.first.is_none() {
                first = Some(record);
            }
        }
        Ok((first, end))
    }
}

fn tally(counts: &mut BTreeMap<String, u64>, key: &str) {
    match counts.get_mut(key) {
        Some(count) => *count += 1,
        None => {
            counts.insert(key.to_string(), 1);
        }
    }
}
