//! Pass one: reduces a tape to one 64-bit fingerprint per compared record.
//!
//! A fingerprint covers what a mode compares except virtual time, and never `seq` or the
//! record index: an inserted record shifts both for every record after it, and alignment must
//! still see those records as equal. Time is left out so that alignment pairs the same events
//! even when they happen at different times; the times are kept apart ([`super::times`]) and
//! compared for paired records.

use std::io::Read;

use super::times::Times;
use super::Mode;
use crate::tape::{RawRecord, RecordKind, TapeError, TapeFooter, TapeHeader, TapeReader};

/// The verdict a truncated tape is compared with: it has no footer, so no verdict.
pub(crate) const TRUNCATED_VERDICT: &str = "(none: the tape is truncated)";

/// Returns true when `mode` compares records of `kind`. Meta records (checkpoints, blobs, the
/// footer) describe the tape, not the run, so no mode compares them.
pub(crate) fn is_compared(mode: Mode, kind: RecordKind) -> bool {
    match mode {
        Mode::Exact | Mode::Semantic => !kind.is_meta(),
        Mode::Outcome => kind == RecordKind::Outcome,
    }
}

/// A tape's actor table, by name: records are compared by actor name so that tapes with
/// different actor tables still align.
#[derive(Debug, Clone)]
pub(crate) struct ActorNames {
    names: Vec<String>,
    hashes: Vec<u64>,
}

impl ActorNames {
    pub(crate) fn new(header: &TapeHeader) -> ActorNames {
        let hashes = header.actors.iter().map(|name| hash_name(name)).collect();
        ActorNames {
            names: header.actors.clone(),
            hashes,
        }
    }

    /// Returns the name of actor `id`; an id outside the table is named by its number so it
    /// still compares unequal to every real actor.
    pub(crate) fn name(&self, id: u16) -> String {
        match self.names.get(usize::from(id)) {
            Some(name) => name.clone(),
            None => format!("#{id}"),
        }
    }

    fn hash(&self, id: u16) -> u64 {
        match self.hashes.get(usize::from(id)) {
            Some(hash) => *hash,
            None => hash_name(&format!("#{id}")),
        }
    }
}

fn hash_name(name: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(name.as_bytes())
}

const FOLD_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

fn fold(state: u64, value: u64) -> u64 {
    (state.rotate_left(23) ^ value).wrapping_mul(FOLD_MULTIPLIER)
}

/// Returns the fingerprint of `record` under `mode`.
pub(crate) fn fingerprint(mode: Mode, actors: &ActorNames, record: &RawRecord) -> u64 {
    // A content-stored payload is its SHA-256, so equal payloads still fingerprint equal.
    let stored = u64::from(record.blob_ref);
    let fields = match mode {
        // Which task or actor declared a final effect is not part of the effect.
        Mode::Outcome => stored,
        Mode::Exact | Mode::Semantic => {
            let kind = (record.kind as u64) << 1 | stored;
            fold(
                fold(actors.hash(record.actor), u64::from(record.task)),
                kind,
            )
        }
    };
    xxhash_rust::xxh3::xxh3_64_with_seed(&record.payload, fields)
}

/// What pass one keeps of a tape.
#[derive(Debug)]
pub(crate) struct Scan {
    pub(crate) header: TapeHeader,
    pub(crate) footer: TapeFooter,
    /// The footer record's index and virtual time: where the run ended (for a truncated
    /// tape, where it is cut and the last whole record's time).
    pub(crate) end: (u64, u64),
    /// How the tape is cut, when it has no footer.
    pub(crate) truncation: Option<String>,
    /// One fingerprint per compared record, in tape order.
    pub(crate) fingerprints: Vec<u64>,
    /// The virtual time of each compared record, in tape order.
    pub(crate) times: Times,
}

/// Streams `reader` to its footer, fingerprinting the records `mode` compares and keeping
/// their times.
pub(crate) fn scan<R: Read>(mut reader: TapeReader<R>, mode: Mode) -> Result<Scan, TapeError> {
    let actors = ActorNames::new(reader.header());
    let mut fingerprints = Vec::new();
    let mut times = Times::default();
    let mut end = (0, 0);
    let mut last_t_ns = 0;
    while let Some(record) = reader.next_record()? {
        last_t_ns = record.t_ns;
        if is_compared(mode, record.kind) {
            fingerprints.push(fingerprint(mode, &actors, &record));
            times.push(record.t_ns);
        } else if record.kind == RecordKind::Footer {
            end = (record.index, record.t_ns);
        }
    }
    let truncation = reader.truncation().map(ToString::to_string);
    let footer = match reader.footer() {
        Some(footer) => footer.clone(),
        None => {
            let records = match reader.truncation() {
                Some(TapeError::Truncated { records, .. }) => *records,
                _ => unreachable!("next_record returns None only after a footer or a cut"),
            };
            end = (records, last_t_ns);
            TapeFooter {
                record_count: records,
                final_hash: reader.chain_hash(),
                verdict: TRUNCATED_VERDICT.into(),
            }
        }
    };
    Ok(Scan {
        header: reader.header().clone(),
        footer,
        end,
        truncation,
        fingerprints,
        times,
    })
}
