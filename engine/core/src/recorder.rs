//! The recorder: every record of a run goes through here, to the tape when one is written,
//! and always into a running fingerprint (so even a tape-less run can be compared).

use serde::Serialize;

use crate::error::SimError;
use crate::limits::LimitName;
use crate::tape::{RecordKind, TapeError, TapeWriter};

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Recorder {
    pub(crate) writer: Option<TapeWriter>,
    fingerprint: u64,
    records: u64,
    payload: Vec<u8>,
    payload_bytes_max: usize,
    /// The hash of [`EXIT_OK_PAYLOAD`], folded into the fingerprint by every task that
    /// completes: computed once per run instead of once per task.
    exit_ok_hash: u64,
}

/// The payload of a completed task's exit record, `["ok"]` (what `SmallPayload::exit("ok")`
/// encodes; a test checks it).
const EXIT_OK_PAYLOAD: [u8; 4] = [0x91, 0xa2, b'o', b'k'];

const FOLD_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline]
fn fold(state: u64, value: u64) -> u64 {
    (state.rotate_left(23) ^ value).wrapping_mul(FOLD_MULTIPLIER)
}

impl Recorder {
    pub(crate) fn new(writer: Option<TapeWriter>, payload_bytes_max: usize) -> Recorder {
        Recorder {
            writer,
            fingerprint: 0,
            records: 0,
            payload: Vec::new(),
            payload_bytes_max,
            exit_ok_hash: xxhash_rust::xxh3::xxh3_64(&EXIT_OK_PAYLOAD),
        }
    }

    /// Returns the fingerprint of every record so far.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Hands every buffered record to the tape's sink (an open run waiting for input calls
    /// this, so a killed `serve` keeps every record written before its last wait).
    pub(crate) fn flush(&mut self, t_ns: u64) -> Result<(), SimError> {
        match &mut self.writer {
            Some(writer) => writer.flush().map_err(|error| limit_or(error, t_ns)),
            None => Ok(()),
        }
    }

    /// Returns the number of records so far (not counting tape meta records).
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    #[inline]
    fn fold_header(&mut self, t_ns: u64, actor: u16, task: u32, kind: RecordKind) {
        self.records += 1;
        let packed = (u64::from(actor) << 40) | (u64::from(task) << 8) | kind as u64;
        self.fingerprint = fold(fold(self.fingerprint, t_ns), packed);
    }

    /// Records an empty-payload record (the hot path: timer wakes).
    #[inline]
    pub(crate) fn empty(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
    ) -> Result<(), SimError> {
        self.fold_header(t_ns, actor, task, kind);
        match &mut self.writer {
            Some(writer) => writer
                .write_empty(t_ns, actor, task, kind)
                .map_err(|e| limit_or(e, t_ns)),
            None => Ok(()),
        }
    }

    /// Records a record whose payload is already encoded (the hot spawn and exit records).
    #[inline]
    pub(crate) fn encoded(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
        payload: &[u8],
    ) -> Result<(), SimError> {
        let payload_hash = xxhash_rust::xxh3::xxh3_64(payload);
        self.encoded_hashed(t_ns, actor, task, kind, payload, payload_hash)
    }

    /// Records the exit record of a task that completed (`["ok"]`, an engine record), the
    /// one exit record most runs write per task.
    #[inline]
    pub(crate) fn exit_ok(&mut self, t_ns: u64, task: u32) -> Result<(), SimError> {
        let payload_hash = self.exit_ok_hash;
        self.encoded_hashed(
            t_ns,
            crate::actor::ENGINE_ACTOR,
            task,
            RecordKind::Exit,
            &EXIT_OK_PAYLOAD,
            payload_hash,
        )
    }

    /// Records a record whose payload is already encoded and hashed (`payload_hash` is the
    /// xxh3 of `payload`).
    #[inline]
    fn encoded_hashed(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
        payload: &[u8],
        payload_hash: u64,
    ) -> Result<(), SimError> {
        self.fold_header(t_ns, actor, task, kind);
        self.fingerprint = fold(self.fingerprint, payload_hash);
        match &mut self.writer {
            Some(writer) => writer
                .write_payload_hashed(t_ns, actor, task, kind, payload, payload_hash)
                .map_err(|e| limit_or(e, t_ns)),
            None => Ok(()),
        }
    }

    /// Records a record whose payload is `value` encoded as MessagePack.
    pub(crate) fn value<T: Serialize + ?Sized>(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
        value: &T,
    ) -> Result<(), SimError> {
        self.fold_header(t_ns, actor, task, kind);
        self.payload.clear();
        rmp_serde::encode::write(&mut self.payload, value).map_err(|e| TapeError::BadPayload {
            detail: e.to_string(),
        })?;
        self.finish_payload(t_ns, actor, task, kind)
    }

    /// Records an actor record `[operation, body]` whose body is already MessagePack: the
    /// bytes are those [`Recorder::value`] writes for `(operation, body)`.
    pub(crate) fn operation_body(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
        operation: &str,
        body: &[u8],
    ) -> Result<(), SimError> {
        self.fold_header(t_ns, actor, task, kind);
        self.payload.clear();
        rmp::encode::write_array_len(&mut self.payload, 2).expect("a Vec takes every write");
        rmp::encode::write_str(&mut self.payload, operation).expect("a Vec takes every write");
        self.payload.extend_from_slice(body);
        self.finish_payload(t_ns, actor, task, kind)
    }

    /// Checks the encoded payload's size, folds it into the fingerprint and writes it.
    fn finish_payload(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
    ) -> Result<(), SimError> {
        if self.payload.len() > self.payload_bytes_max {
            return Err(SimError::LimitExceeded {
                limit: LimitName::PayloadBytesMax,
                value: self.payload_bytes_max as u64,
                t_ns,
            });
        }
        let payload_hash = xxhash_rust::xxh3::xxh3_64(&self.payload);
        self.fingerprint = fold(self.fingerprint, payload_hash);
        let written = match &mut self.writer {
            Some(writer) => writer
                .write_payload_hashed(t_ns, actor, task, kind, &self.payload, payload_hash)
                .map_err(|e| limit_or(e, t_ns)),
            None => Ok(()),
        };
        crate::tape::release_scratch(&mut self.payload);
        written
    }
}

/// Reports a full tape as the `tape_bytes_max` limit, like every other limit.
fn limit_or(error: TapeError, t_ns: u64) -> SimError {
    match error {
        TapeError::TooLarge { bytes_max } => SimError::LimitExceeded {
            limit: LimitName::TapeBytesMax,
            value: bytes_max,
            t_ns,
        },
        other => SimError::Tape(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::encode::SmallPayload;

    #[test]
    fn the_exit_ok_payload_is_the_encoded_exit_record() {
        // Goal: the fast exit record writes the bytes and fingerprint the general path writes.
        assert_eq!(
            EXIT_OK_PAYLOAD.as_slice(),
            SmallPayload::exit("ok").as_bytes()
        );
        let (mut fast, mut general) = (Recorder::new(None, 1024), Recorder::new(None, 1024));
        fast.exit_ok(7, 3).unwrap();
        general
            .encoded(
                7,
                0,
                3,
                RecordKind::Exit,
                SmallPayload::exit("ok").as_bytes(),
            )
            .unwrap();
        assert_eq!(fast.fingerprint(), general.fingerprint());
        assert_eq!(fast.records(), 1);
    }
}
