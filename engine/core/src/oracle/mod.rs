//! The fidelity oracle: compares two tapes and names where they diverge.
//!
//! [`diff_paths`] aligns the two record streams with a sequence diff over record fingerprints
//! rather than pairing records by position, so one inserted record is one divergence, not a
//! cascade. It reports inserted, deleted and changed records as hunks, the first divergence
//! with its context (virtual time, actor, kind, task, the first differing field and both
//! values), counts by actor and kind, and timing-only differences apart from content ones.
//!
//! The oracle streams each tape and never holds a payload it does not report: memory is one
//! `u64` fingerprint and about two bytes of virtual time per record (10 MiB for a
//! million-record tape), plus what the report shows.
//!
//! 1. Pass one (`fingerprint`) reads each tape to its footer, checking it whole (a truncated or
//!    corrupt tape is an error). It fingerprints each compared record without its virtual
//!    time, `seq` or index, and keeps the time apart (`times`).
//! 2. `align` diffs the fingerprints (Myers, after stripping the common prefix and suffix;
//!    past 16,384 differing records it stops aligning and reports one changed hunk).
//! 3. `times` compares the virtual times of the records alignment pairs up.
//! 4. Pass two (`walk`) streams both tapes in lockstep along the alignment as far as the last
//!    gap: it tallies the gaps, counts the calls (`calls`: model call 2, MCP call 3, …) and
//!    keeps only the records of the first divergence, which `first` decodes (`field`) into
//!    the call it belongs to and the fields that differ, a JSON body inside compared field by
//!    field (`crate::json_diff`), named by JSON pointer with both values.
//! 5. `report` holds the [`DiffReport`]; `notes` adds header differences.
//!
//! Modules:
//! - `source`: [`TapeSource`], a tape the oracle can read more than once.
//! - `fingerprint`: pass one; which records a mode compares.
//! - `align`: the sequence diff, bounded in cost.
//! - `times`: compact virtual times and timing-only differences.
//! - `walk`: pass two.
//! - `calls`: which call a record belongs to ([`CallRef`]), counted in tape order.
//! - `first`, `field`: the first divergence, its first differing field and its changes.
//! - `notes`: header differences.
//! - `report`: [`DiffReport`] and its text rendering.
//! - `error`: [`OracleError`], [`Side`].

mod align;
mod calls;
mod error;
mod field;
mod fingerprint;
mod first;
mod notes;
mod report;
mod source;
mod times;
mod walk;

use std::fmt;
use std::path::Path;

use serde::Serialize;

pub use calls::{CallKind, CallRef, CallSide};
pub use error::{OracleError, Side};
pub use report::{
    DiffReport, DivergenceOp, FieldChange, FirstDivergence, Hunk, HunkOp, IndexRange,
};
pub use source::TapeSource;

use fingerprint::ActorNames;

/// What the oracle compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every field of every record but checkpoints, blobs and the footer: virtual time, actor
    /// (by name), task, kind and payload.
    Exact,
    /// As exact, but virtual time does not count: records at other times are counted as
    /// timing-only differences, and the tapes are still equal.
    Semantic,
    /// Only the final effects: `outcome` records (their payloads) and the footer verdict.
    Outcome,
}

impl Mode {
    /// Every mode, in the order the CLI lists them.
    pub const ALL: [Mode; 3] = [Mode::Exact, Mode::Semantic, Mode::Outcome];

    /// Returns the mode's name: `exact`, `semantic` or `outcome`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Exact => "exact",
            Mode::Semantic => "semantic",
            Mode::Outcome => "outcome",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mode name that is not `exact`, `semantic` or `outcome`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown diff mode {0:?} (expected exact, semantic or outcome)")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(name: &str) -> Result<Mode, UnknownMode> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.name() == name)
            .ok_or_else(|| UnknownMode(name.into()))
    }
}

/// Compares the tapes at paths `a` and `b` (a sidecar content store beside a tape is used for
/// its blob references).
///
/// ```no_run
/// use simtape::oracle::{diff_paths, Mode};
/// let report = diff_paths("a.tape".as_ref(), "b.tape".as_ref(), Mode::Semantic)?;
/// print!("{}", report.render_text());
/// std::process::exit(report.exit_code().into());
/// # Ok::<(), simtape::oracle::OracleError>(())
/// ```
pub fn diff_paths(a: &Path, b: &Path, mode: Mode) -> Result<DiffReport, OracleError> {
    diff_sources(a, b, mode)
}

/// Compares two tapes held in memory (as [`crate::tape::TapeSummary::memory`] returns them).
///
/// ```
/// use simtape::oracle::{diff_bytes, Mode};
/// let run = |answer: u32| {
///     let mut builder = simtape::Sim::builder();
///     builder.seed(1).tape_in_memory();
///     let report = builder.build().unwrap().run(move |host| async move {
///         host.outcome("answer", &answer);
///     });
///     report.unwrap().summary.tape.unwrap().memory.unwrap()
/// };
/// let report = diff_bytes(&run(41), &run(42), Mode::Outcome).unwrap();
/// assert_eq!(report.exit_code(), 1);
/// let first = report.first.unwrap();
/// assert_eq!(first.field.as_deref(), Some("payload/1"));
/// assert_eq!((first.value_a.unwrap(), first.value_b.unwrap()), ("41".into(), "42".into()));
/// ```
pub fn diff_bytes(a: &[u8], b: &[u8], mode: Mode) -> Result<DiffReport, OracleError> {
    diff_sources(a, b, mode)
}

/// Compares two tapes from any [`TapeSource`]s.
pub fn diff_sources<SA, SB>(a: &SA, b: &SB, mode: Mode) -> Result<DiffReport, OracleError>
where
    SA: TapeSource + ?Sized,
    SB: TapeSource + ?Sized,
{
    let scan_a = scan(a, Side::A, mode)?;
    let scan_b = scan(b, Side::B, mode)?;
    let (actors_a, actors_b) = (
        ActorNames::new(&scan_a.header),
        ActorNames::new(&scan_b.header),
    );
    let (records_a, records_b) = (scan_a.fingerprints.len(), scan_b.fingerprints.len());
    let align::Alignment { gaps, aligned } =
        align::align(&scan_a.fingerprints, &scan_b.fingerprints);
    // Outcome mode compares final effects, whenever they were declared.
    let timing = match mode {
        Mode::Outcome => times::Timing::default(),
        Mode::Exact | Mode::Semantic => {
            times::compare(&scan_a.times, &scan_b.times, &gaps, records_a)
        }
    };
    // A timing difference is the first divergence in exact mode when it precedes every gap.
    let first_timing = timing.first.filter(|(at_a, _)| {
        mode == Mode::Exact && gaps.first().is_none_or(|gap| *at_a < gap.a.start)
    });
    let walked = if gaps.is_empty() && first_timing.is_none() {
        walk::Walk::default()
    } else {
        let mut stream_a = stream(a, Side::A, mode, &scan_a, &actors_a)?;
        let mut stream_b = stream(b, Side::B, mode, &scan_b, &actors_b)?;
        walk::walk(&mut stream_a, &mut stream_b, &gaps, first_timing)?
    };
    // A truncated tape has no verdict: beside a whole one it diverges at its cut at the
    // latest, even when every record it kept is equal (a killed run did not end as the
    // other did). Two prefixes are compared by their records alone.
    let cut_divergence = scan_a.truncation.is_some() != scan_b.truncation.is_some();
    let verdict_divergence =
        cut_divergence || (mode == Mode::Outcome && scan_a.footer.verdict != scan_b.footer.verdict);
    let first = match walked.first {
        Some(found) => {
            let tape_a = first::Tape {
                source: a,
                side: Side::A,
                actors: &actors_a,
            };
            let tape_b = first::Tape {
                source: b,
                side: Side::B,
                actors: &actors_b,
            };
            Some(first::describe(found, mode, &tape_a, &tape_b)?)
        }
        None if verdict_divergence => Some(first::verdict(&scan_a, &scan_b, &actors_a)),
        None => None,
    };
    let hunks_total = gaps.len() as u64;
    let timing_divergences = if mode == Mode::Exact { timing.count } else { 0 };
    let divergences = hunks_total + timing_divergences + u64::from(verdict_divergence);
    Ok(DiffReport {
        mode,
        equal: divergences == 0,
        divergences,
        aligned,
        records_a: records_a as u64,
        records_b: records_b as u64,
        hunks_total,
        hunks: walked.hunks,
        content_by_actor: walked.by_actor,
        content_by_kind: walked.by_kind,
        timing_only: timing.count,
        first,
        notes: notes::notes(mode, &scan_a, &scan_b),
        verdict_a: scan_a.footer.verdict,
        verdict_b: scan_b.footer.verdict,
    })
}

/// Pass one over one tape.
fn scan<S: TapeSource + ?Sized>(
    source: &S,
    side: Side,
    mode: Mode,
) -> Result<fingerprint::Scan, OracleError> {
    let reader = source::open(source, side)?;
    fingerprint::scan(reader, mode).map_err(source::on(source, side))
}

/// Opens one tape for pass two.
fn stream<'s, S: TapeSource + ?Sized>(
    source: &'s S,
    side: Side,
    mode: Mode,
    scan: &'s fingerprint::Scan,
    actors: &'s ActorNames,
) -> Result<walk::Stream<'s, S::Bytes<'s>>, OracleError> {
    let reader = source::open(source, side)?;
    Ok(walk::Stream::new(
        reader,
        (side, source.describe()),
        mode,
        scan,
        actors,
    ))
}
