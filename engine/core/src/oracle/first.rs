//! Turns the first divergence pass two found into its reported form: context, the first
//! differing field, and both values. Only here are payloads fetched from the content store
//! and decoded.

use super::calls::CallRef;
use super::field::{changes, first_difference, quote, render_record, Named, RecordFields};
use super::fingerprint::{ActorNames, Scan};
use super::report::{DivergenceOp, FirstDivergence, HunkOp};
use super::source::{resolve_payload, TapeSource};
use super::walk::FirstFound;
use super::{Mode, OracleError, Side};
use crate::tape::{RawRecord, RecordKind};

/// One tape as this module needs it: where to fetch payloads from, and its actor names.
pub(crate) struct Tape<'t, S: ?Sized> {
    pub(crate) source: &'t S,
    pub(crate) side: Side,
    pub(crate) actors: &'t ActorNames,
}

impl<S: TapeSource + ?Sized> Tape<'_, S> {
    /// Returns the record with its payload resolved, and its actor's name.
    fn load(&self, record: RawRecord) -> Result<(RawRecord, String), OracleError> {
        let payload = resolve_payload(self.source, self.side, &record)?;
        let actor = self.actors.name(record.actor);
        Ok((
            RawRecord {
                payload,
                blob_ref: false,
                string_refs: false,
                ..record
            },
            actor,
        ))
    }
}

fn fields<'r>(record: &'r RawRecord, actor: &'r str) -> RecordFields<'r> {
    RecordFields {
        t_ns: record.t_ns,
        actor,
        task: record.task,
        kind: record.kind,
        payload: &record.payload,
    }
}

/// Describes the first divergence `found` by pass two.
pub(crate) fn describe<SA: TapeSource + ?Sized, SB: TapeSource + ?Sized>(
    found: FirstFound,
    mode: Mode,
    a: &Tape<'_, SA>,
    b: &Tape<'_, SB>,
) -> Result<FirstDivergence, OracleError> {
    match found {
        FirstFound::Timing {
            a: record_a,
            b: record_b,
            call,
        } => {
            let (record_a, actor) = a.load(record_a)?;
            Ok(FirstDivergence {
                field: Some("t_ns".into()),
                value_a: Some(record_a.t_ns.to_string()),
                value_b: Some(record_b.t_ns.to_string()),
                ..context(
                    DivergenceOp::Timing,
                    1,
                    (&record_a, &actor, &record_b),
                    call,
                )
            })
        }
        FirstFound::Gap {
            op: HunkOp::Inserted,
            count,
            b: Some(record_b),
            here_a,
            call,
            ..
        } => {
            let (record_b, actor) = b.load(record_b)?;
            let shown = (&record_b, actor.as_str(), &record_b);
            Ok(FirstDivergence {
                index_a: here_a.0,
                t_ns_a: here_a.1,
                record: Some(render_record(&fields(&record_b, &actor))),
                ..context(DivergenceOp::Inserted, count, shown, call)
            })
        }
        FirstFound::Gap {
            op: HunkOp::Deleted,
            count,
            a: Some(record_a),
            here_b,
            call,
            ..
        } => {
            let (record_a, actor) = a.load(record_a)?;
            let shown = (&record_a, actor.as_str(), &record_a);
            Ok(FirstDivergence {
                index_b: here_b.0,
                t_ns_b: here_b.1,
                record: Some(render_record(&fields(&record_a, &actor))),
                ..context(DivergenceOp::Deleted, count, shown, call)
            })
        }
        FirstFound::Gap {
            op: HunkOp::Changed,
            count,
            a: Some(record_a),
            b: Some(record_b),
            call,
            ..
        } => {
            let (record_a, actor_a) = a.load(record_a)?;
            let (record_b, actor_b) = b.load(record_b)?;
            let diff = first_difference(
                mode,
                &fields(&record_a, &actor_a),
                &fields(&record_b, &actor_b),
            );
            // The fields listed are the payload's, when the identifying fields agree.
            let (listed, total) = match &diff {
                Some(d) if d.field.starts_with("payload") => {
                    let named = Named::of(&actor_a, record_a.kind);
                    changes(named, &record_a.payload, &record_b.payload)
                }
                _ => (Vec::new(), 0),
            };
            let shown = (&record_a, actor_a.as_str(), &record_b);
            Ok(FirstDivergence {
                field: diff.as_ref().map(|d| d.field.clone()),
                value_a: diff.as_ref().map(|d| d.a.clone()),
                value_b: diff.map(|d| d.b),
                changes: listed,
                changes_total: total,
                ..context(DivergenceOp::Changed, count, shown, call)
            })
        }
        FirstFound::Gap { .. } => unreachable!("a gap keeps the first record of each side it has"),
    }
}

/// Returns the first divergence at records `a` (of `actor`) and `b`, in `call`, with no field
/// or record filled in; the identifying fields are `a`'s.
fn context(
    op: DivergenceOp,
    count: u64,
    (a, actor, b): (&RawRecord, &str, &RawRecord),
    call: Option<CallRef>,
) -> FirstDivergence {
    FirstDivergence {
        op,
        count,
        index_a: a.index,
        index_b: b.index,
        t_ns_a: a.t_ns,
        t_ns_b: b.t_ns,
        actor: actor.to_string(),
        kind: a.kind.name().to_string(),
        task: a.task,
        field: None,
        value_a: None,
        value_b: None,
        record: None,
        call,
        changes: Vec::new(),
        changes_total: 0,
    }
}

/// Describes differing verdicts as the first divergence (outcome mode, when no outcome record
/// differs).
pub(crate) fn verdict(a: &Scan, b: &Scan, actors: &ActorNames) -> FirstDivergence {
    FirstDivergence {
        op: DivergenceOp::Verdict,
        count: 1,
        index_a: a.end.0,
        index_b: b.end.0,
        t_ns_a: a.end.1,
        t_ns_b: b.end.1,
        // The footer is written by the engine (actor 0) outside any task.
        actor: actors.name(0),
        kind: RecordKind::Footer.name().to_string(),
        task: 0,
        field: Some("verdict".into()),
        value_a: Some(quote(&a.footer.verdict)),
        value_b: Some(quote(&b.footer.verdict)),
        record: None,
        call: None,
        changes: Vec::new(),
        changes_total: 0,
    }
}
