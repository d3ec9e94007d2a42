//! The calls on a tape: each `request` record of an actor paired with its `reply`, what
//! `simtape fixtures from-tape` turns back into replayable inputs (a process tape, MCP
//! cassettes).
//!
//! Calls of one actor may overlap (concurrent tool calls), but a task waits for its call, so
//! a reply answers the open request of the same task. A request still open when the tape ends
//! (the run stopped first) has no call.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::Value;

use super::{payload_to_json, RecordKind, TapeError, TapeReader};

/// Why a tape's calls could not be turned into replayable inputs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FromTapeError {
    /// The tape does not read.
    #[error(transparent)]
    Tape(#[from] TapeError),
    /// A call's record is not in the shape this engine writes.
    #[error("record {index}: {detail}")]
    Record {
        /// The record's index.
        index: u64,
        /// What was unexpected.
        detail: String,
    },
}

/// What in a call's record body is not the shape this engine writes (the reader of a
/// capability's calls says which field); [`each_call`] reports it at the reply record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallShape {
    /// A field is missing.
    #[error("no {field}")]
    Missing {
        /// The field, as the capability names it.
        field: String,
    },
    /// A field is there, but not what the engine writes.
    #[error("{field}: {detail}")]
    Invalid {
        /// The field, as the capability names it.
        field: String,
        /// What is wrong with it.
        detail: String,
    },
}

impl CallShape {
    /// Returns a missing-field shape error.
    pub fn missing(field: impl Into<String>) -> CallShape {
        CallShape::Missing {
            field: field.into(),
        }
    }

    /// Returns an invalid-field shape error.
    pub fn invalid(field: impl Into<String>, detail: impl std::fmt::Display) -> CallShape {
        CallShape::Invalid {
            field: field.into(),
            detail: detail.to_string(),
        }
    }
}

/// One answered call: the bodies of its request and reply payloads (`[operation, body]` on
/// the tape) as JSON, and when each was written.
#[derive(Debug, Clone, PartialEq)]
pub struct TapeCall {
    /// The actor's index in the header's actor table.
    pub actor: u16,
    /// The request's body.
    pub request: Value,
    /// When the request was made, in virtual nanoseconds.
    pub request_t_ns: u64,
    /// The reply's body.
    pub reply: Value,
    /// When the reply was written.
    pub reply_t_ns: u64,
    /// The reply record's index, for errors.
    pub index: u64,
}

/// Reads every call of the actors `wanted` names (by the header's actor table) and hands each
/// to `each` in the order the replies were written; an error `each` returns is reported at
/// the reply record.
pub fn each_call<R: Read>(
    reader: &mut TapeReader<R>,
    wanted: impl Fn(&str) -> bool,
    mut each: impl FnMut(TapeCall) -> Result<(), CallShape>,
) -> Result<(), FromTapeError> {
    let actors: Vec<bool> = reader.header().actors.iter().map(|a| wanted(a)).collect();
    let mut open: BTreeMap<(u16, u32), (Value, u64)> = BTreeMap::new();
    while let Some(record) = reader.next_record()? {
        if !actors
            .get(usize::from(record.actor))
            .copied()
            .unwrap_or(false)
        {
            continue;
        }
        let bad = |detail: String| FromTapeError::Record {
            index: record.index,
            detail,
        };
        let payload = payload_to_json(&reader.resolve(&record)?).map_err(|e| bad(e.to_string()))?;
        let body = payload
            .get(1)
            .cloned()
            .ok_or_else(|| bad("no body".into()))?;
        let key = (record.actor, record.task);
        match record.kind {
            RecordKind::Request => drop(open.insert(key, (body, record.t_ns))),
            RecordKind::Reply => {
                let (request, request_t_ns) = open
                    .remove(&key)
                    .ok_or_else(|| bad("a reply without its request".into()))?;
                let call = TapeCall {
                    actor: record.actor,
                    request,
                    request_t_ns,
                    reply: body,
                    reply_t_ns: record.t_ns,
                    index: record.index,
                };
                each(call).map_err(|shape| bad(shape.to_string()))?;
            }
            _ => {}
        }
    }
    Ok(())
}
