//! Pass two: walks both tapes in lockstep along the gaps that alignment found, as far as the
//! last thing the report shows.
//!
//! On the way it tallies the records of each gap by actor and kind, turns gap positions into
//! record indices, and keeps the records of the first divergence: only those two records are
//! ever held whole. Past the last gap (and the first divergence) nothing needs reading, so
//! equal tapes are not read a second time at all.

use std::collections::BTreeMap;
use std::io::Read;

use super::align::Gap;
use super::calls::{CallCounter, CallRef};
use super::fingerprint::{fingerprint, is_compared, ActorNames, Scan};
use super::report::{Hunk, HunkOp, IndexRange};
use super::{Mode, OracleError, Side};
use crate::tape::{RawRecord, RecordKind, TapeReader};

/// Hunks a report lists; beyond this only their number is kept, so two unrelated tapes do not
/// make a report as large as the tapes.
pub(crate) const HUNKS_LISTED_MAX: usize = 1000;

/// One tape's compared records, one at a time, with a one-record lookahead.
pub(crate) struct Stream<'s, R: Read> {
    side: Side,
    path: String,
    mode: Mode,
    reader: TapeReader<R>,
    pub(crate) actors: &'s ActorNames,
    /// Pass one's fingerprints: every record read again must match its own.
    fingerprints: &'s [u64],
    position: usize,
    lookahead: Option<RawRecord>,
    /// The footer's index and virtual time, once reached.
    end: Option<(u64, u64)>,
    /// Where pass one found the tape ends: the footer, or a truncated tape's cut.
    scan_end: (u64, u64),
    /// The calls so far, and the one the record `next` returned last belongs to.
    calls: CallCounter,
    last_call: Option<CallRef>,
}

impl<'s, R: Read> Stream<'s, R> {
    pub(crate) fn new(
        reader: TapeReader<R>,
        (side, path): (Side, String),
        mode: Mode,
        scan: &'s Scan,
        actors: &'s ActorNames,
    ) -> Stream<'s, R> {
        Stream {
            side,
            path,
            mode,
            reader,
            actors,
            fingerprints: &scan.fingerprints,
            position: 0,
            lookahead: None,
            end: None,
            scan_end: scan.end,
            calls: CallCounter::default(),
            last_call: None,
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
                }
                Some(record) if record.kind == RecordKind::Blob => self.calls.blob(&record.payload),
                Some(_) => {}
                // A truncated tape ends at its cut, as pass one found it.
                None => self.end = Some(self.scan_end),
            }
        }
        Ok(())
    }

    /// Returns the next compared record. Alignment says it exists and what its fingerprint
    /// is; anything else means the tape changed since pass one.
    pub(crate) fn next(&mut self) -> Result<RawRecord, OracleError> {
        self.fill()?;
        let record = self.lookahead.take().ok_or_else(|| self.changed())?;
        let expected = self.fingerprints.get(self.position);
        if expected != Some(&fingerprint(self.mode, self.actors, &record)) {
            return Err(self.changed());
        }
        self.position += 1;
        let actor = self.actors.name(record.actor);
        self.last_call = self.calls.observe(&actor, &record);
        Ok(record)
    }

    /// Steps over `count` records.
    fn skip(&mut self, count: usize) -> Result<(), OracleError> {
        for _ in 0..count {
            self.next()?;
        }
        Ok(())
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
}

/// The first divergence as found, before its fields are compared.
#[derive(Debug)]
pub(crate) enum FirstFound {
    /// A gap: its op and record count, the first record of each side (if the side has one)
    /// and where each tape stood when the gap began (index and virtual time).
    Gap {
        op: HunkOp,
        count: u64,
        a: Option<RawRecord>,
        b: Option<RawRecord>,
        here_a: (u64, u64),
        here_b: (u64, u64),
        /// The call the first record belongs to (A's, when A has one).
        call: Option<CallRef>,
    },
    /// A pair of equal records at different virtual times (a divergence in exact mode only).
    Timing {
        a: RawRecord,
        b: RawRecord,
        call: Option<CallRef>,
    },
}

/// The first record of a gap's side, and the call it belongs to.
type Kept = (RawRecord, Option<CallRef>);

/// What pass two found.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    pub(crate) by_actor: BTreeMap<String, u64>,
    pub(crate) by_kind: BTreeMap<String, u64>,
    pub(crate) hunks: Vec<Hunk>,
    pub(crate) first: Option<FirstFound>,
}

/// Walks `a` and `b` along `gaps`. `first_timing` is the position in A and B of a timing
/// difference that comes before every gap and is a divergence (exact mode), if any.
pub(crate) fn walk<RA: Read, RB: Read>(
    a: &mut Stream<'_, RA>,
    b: &mut Stream<'_, RB>,
    gaps: &[Gap],
    first_timing: Option<(usize, usize)>,
) -> Result<Walk, OracleError> {
    let mut walk = Walk::default();
    let mut position_a = 0;
    if let Some((at_a, at_b)) = first_timing {
        assert_eq!(at_a, at_b, "before the first gap positions are equal");
        a.skip(at_a)?;
        b.skip(at_b)?;
        let (record_a, record_b) = (a.next()?, b.next()?);
        walk.first = Some(FirstFound::Timing {
            a: record_a,
            b: record_b,
            call: a.last_call.clone(),
        });
        position_a = at_a + 1;
    }
    for gap in gaps {
        let matched = gap.a.start - position_a;
        a.skip(matched)?;
        b.skip(matched)?;
        walk.gap(a, b, gap)?;
        position_a = gap.a.end;
    }
    Ok(walk)
}

impl Walk {
    /// Steps over one gap: tallies it, lists it, and keeps it if it is the first divergence.
    fn gap<RA: Read, RB: Read>(
        &mut self,
        a: &mut Stream<'_, RA>,
        b: &mut Stream<'_, RB>,
        gap: &Gap,
    ) -> Result<(), OracleError> {
        let (here_a, here_b) = (a.here()?, b.here()?);
        let (first_a, end_a) = self.side_of_gap(a, gap.a.len(), 0)?;
        // A changed record is one difference: count B's records only past A's.
        let (first_b, end_b) = self.side_of_gap(b, gap.b.len(), gap.a.len())?;
        let call = first_a.as_ref().map_or_else(
            || first_b.as_ref().and_then(|(_, call)| call.clone()),
            |(_, call)| call.clone(),
        );
        let (first_a, first_b) = (first_a.map(|(r, _)| r), first_b.map(|(r, _)| r));
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
                call,
            });
        }
        Ok(())
    }

    /// Reads `count` records of one side of a gap, tallying those from position `tally_from`
    /// on; returns the first record (while no first divergence is kept) with its call, and
    /// the index after the last.
    fn side_of_gap<R: Read>(
        &mut self,
        stream: &mut Stream<'_, R>,
        count: usize,
        tally_from: usize,
    ) -> Result<(Option<Kept>, Option<u64>), OracleError> {
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
                first = Some((record, stream.last_call.clone()));
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
