//! The tape: a bit-exact, hash-chained MessagePack record of one run (format v4).
//!
//! The byte-level specification is `docs/tape-format.md`; this module is its implementation.
//! [`TapeWriter`] streams records through a reused buffer; [`TapeReader`] streams them back,
//! checking the hash chain, and names the first bad record and its byte offset.

mod calls;
pub(crate) mod encode;
mod inputs;
mod json;
mod reader;
mod strings;
mod writer;

pub use calls::{each_call, CallShape, FromTapeError, TapeCall};
pub use inputs::{InputEntry, InputStore, Inputs, InputsSection, INPUT_FILE_BYTES_MAX};
pub use json::{payload_to_json, to_json, PayloadError};
pub use reader::{verify_path, RawRecord, TapeError, TapeReader, VerifyReport};
pub use strings::STRING_REF_MIN_BYTES;
pub use writer::{BlobMode, TapeSink, TapeSummary, TapeWriter};

use serde::{Deserialize, Serialize};

/// The eight bytes every tape starts with.
pub(crate) const MAGIC: &[u8; 8] = b"SIMTAPE\0";
/// The tape format this engine writes.
pub const FORMAT_VERSION: u32 = 4;
/// The newest format whose records carry `seq` and absolute `t_ns` and chain their bytes
/// through xxh3 (`docs/tape-format.md`, "Reading older versions"); the writer still writes
/// it for a header of that version or older (the tests write tapes of every version).
pub(crate) const FORMAT_VERSION_BYTE_CHAIN: u32 = 3;
/// The tape formats this engine reads: every one simtape has written. They share the
/// framing, the header, the hash chain and the footer; what differs is which record kinds
/// exist ([`RecordKind::exists_in`]) and, in version 1, the body of the LLM actor's
/// `request` records (whole conversations; `docs/tape-format.md`, "Versioning").
pub(crate) const FORMAT_VERSIONS_READ: std::ops::RangeInclusive<u32> = 1..=FORMAT_VERSION;
/// Records between two checkpoints.
pub const CHECKPOINT_INTERVAL_RECORDS: u64 = 1 << 16;
/// Payloads larger than this go to the content store by default.
pub const BLOB_THRESHOLD_DEFAULT_BYTES: usize = 4096;
/// The write buffer, flushed to the sink when full.
pub const BUFFER_BYTES: usize = 64 * 1024;
/// The kind bit that marks a payload stored by content hash (the payload is the 32-byte hash).
pub(crate) const KIND_BLOB_REF_BIT: u8 = 0x80;

/// The record vocabulary. The numbering is part of the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum RecordKind {
    /// A hash-chain checkpoint: payload `[records_before, chain_hash]`.
    Checkpoint = 0,
    /// A task was spawned: payload `[task_id, name]`; `task` is the spawner.
    Spawn = 1,
    /// A sleeping task's timer fired: empty payload.
    Wake = 2,
    /// A task ended: payload `[status]` (`"ok"`, `"aborted"`, `"panicked"`).
    Exit = 3,
    /// A request to an actor: payload `[operation, body]`.
    Request = 4,
    /// An actor's completion: payload `[operation, body]`.
    Reply = 5,
    /// An embedded content-store blob: payload is the raw bytes.
    Blob = 6,
    /// The last record: payload `[record_count, final_hash, verdict]`.
    Footer = 7,
    /// A final effect of the run (an fs diff digest, a world state, a declared result):
    /// payload `[name, value]`. The oracle's outcome mode compares only these and the verdict.
    Outcome = 8,
    /// Input from outside an open run, delivered through an inbox (the record's actor):
    /// payload `[events, "message", message]`, `[events, "close", nil]`, or, on the engine
    /// actor, `[events, "stop", nil]`. `events` is the number of timer events popped before
    /// the delivery, which (with the record's place) pins the step it was delivered at.
    Input = 9,
}

impl RecordKind {
    /// Decodes a kind byte (without the blob-reference bit).
    pub(crate) fn from_u8(byte: u8) -> Option<RecordKind> {
        Some(match byte {
            0 => RecordKind::Checkpoint,
            1 => RecordKind::Spawn,
            2 => RecordKind::Wake,
            3 => RecordKind::Exit,
            4 => RecordKind::Request,
            5 => RecordKind::Reply,
            6 => RecordKind::Blob,
            7 => RecordKind::Footer,
            8 => RecordKind::Outcome,
            9 => RecordKind::Input,
            _ => return None,
        })
    }

    /// Returns whether tapes of format `version` can hold this kind: `input` came with
    /// version 3, every other kind with version 1.
    pub fn exists_in(self, version: u32) -> bool {
        match self {
            RecordKind::Input => version >= 3,
            _ => true,
        }
    }

    /// Returns the kind's name as shown by `simtape tape show`.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Checkpoint => "checkpoint",
            RecordKind::Spawn => "spawn",
            RecordKind::Wake => "wake",
            RecordKind::Exit => "exit",
            RecordKind::Request => "request",
            RecordKind::Reply => "reply",
            RecordKind::Blob => "blob",
            RecordKind::Footer => "footer",
            RecordKind::Outcome => "outcome",
            RecordKind::Input => "input",
        }
    }

    /// Returns true for records that describe the tape rather than the run (checkpoints,
    /// blobs, the footer). The oracle skips them when it aligns two runs.
    pub(crate) fn is_meta(self) -> bool {
        matches!(
            self,
            RecordKind::Checkpoint | RecordKind::Blob | RecordKind::Footer
        )
    }
}

/// The scenario a tape was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ScenarioStamp {
    /// The scenario's name.
    pub name: String,
    /// Hex SHA-256 of the scenario source.
    pub digest: String,
    /// The scenario source, so a tape replays on its own.
    pub source: String,
}

/// The tape header (the first MessagePack value after the magic).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TapeHeader {
    /// The tape format version, [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The engine version that wrote the tape.
    pub engine_version: String,
    /// The root seed.
    pub seed: u64,
    /// The start instant, nanoseconds since the Unix epoch (UTC).
    pub start_unix_ns: i64,
    /// The scenario.
    pub scenario: ScenarioStamp,
    /// Actor names, indexed by the `actor` field of records.
    pub actors: Vec<String>,
    /// Where blobs live: `"embedded"` or `"sidecar"`.
    pub blob_mode: String,
    /// Payloads above this many bytes are stored by content hash.
    pub blob_threshold_bytes: u64,
    /// Records between checkpoints.
    pub checkpoint_interval_records: u64,
    /// How the programs the run started outside the simulation were contained:
    /// `"namespaces"` (simtape's sandbox) or `"off"` (on the host). Absent for a run that
    /// started none, so such tapes are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The decisions file a run took overrides from: its digest and its overrides, so the
    /// tape replays alone. Absent for a run without one, so such tapes are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<DecisionsStamp>,
}

/// The header is a MessagePack array, so an optional field can be left out only at the end:
/// `sandbox` is written (as nil when unset) whenever `decisions` follows it, and both are
/// left out when unset, so tapes without decisions keep their bytes.
impl Serialize for TapeHeader {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            format_version: u32,
            engine_version: &'a str,
            seed: u64,
            start_unix_ns: i64,
            scenario: &'a ScenarioStamp,
            actors: &'a [String],
            blob_mode: &'a str,
            blob_threshold_bytes: u64,
            checkpoint_interval_records: u64,
            #[serde(skip_serializing_if = "Sandbox::skip")]
            sandbox: Sandbox<'a>,
            #[serde(skip_serializing_if = "Option::is_none")]
            decisions: Option<&'a DecisionsStamp>,
        }
        struct Sandbox<'a> {
            value: &'a Option<String>,
            kept: bool,
        }
        impl Sandbox<'_> {
            fn skip(&self) -> bool {
                self.value.is_none() && !self.kept
            }
        }
        impl Serialize for Sandbox<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.value.serialize(serializer)
            }
        }
        Out {
            format_version: self.format_version,
            engine_version: &self.engine_version,
            seed: self.seed,
            start_unix_ns: self.start_unix_ns,
            scenario: &self.scenario,
            actors: &self.actors,
            blob_mode: &self.blob_mode,
            blob_threshold_bytes: self.blob_threshold_bytes,
            checkpoint_interval_records: self.checkpoint_interval_records,
            sandbox: Sandbox {
                value: &self.sandbox,
                kept: self.decisions.is_some(),
            },
            decisions: self.decisions.as_ref(),
        }
        .serialize(serializer)
    }
}

/// The decisions file of a run with overrides (see [`crate::decision`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionsStamp {
    /// Hex SHA-256 of the decisions file.
    pub digest: String,
    /// The overrides, sorted by name.
    pub overrides: Vec<crate::decision::Decision>,
    /// For a forked run (`simtape fork`): the run it branched from, where, and its seed
    /// after the branch point. Absent for other runs (their headers keep their bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<Branch>,
}

/// Where a forked run branched from its parent: it takes the parent's decisions up to the
/// record, then draws from its own seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Branch {
    /// Hex SHA-256 of the parent tape.
    pub parent: String,
    /// The parent's record (its index on the tape) the fork branched at.
    pub record: u64,
    /// The parent's seed (the fork's own is the header's).
    pub parent_seed: u64,
}

/// The decoded footer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapeFooter {
    /// Records before the footer.
    pub record_count: u64,
    /// The chain hash after the last record before the footer.
    pub final_hash: u64,
    /// The run's verdict line.
    pub verdict: String,
}

/// Scratch buffers reused record after record keep at most this much room: one huge payload
/// (a 30 MB request an agent sent `simtape serve`) must not stay held for the rest of the run.
pub(crate) const SCRATCH_KEPT_BYTES: usize = 1 << 20;

/// Frees `scratch` when a huge record grew it past [`SCRATCH_KEPT_BYTES`].
pub(crate) fn release_scratch(scratch: &mut Vec<u8>) {
    if scratch.capacity() > SCRATCH_KEPT_BYTES {
        *scratch = Vec::new();
    }
}

/// Folds bytes into the chain: the magic and header of every version, and each record of
/// versions 1 to 3.
pub(crate) fn chain_step(previous: u64, record_bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(record_bytes, previous)
}

/// Folds one record of format 4 into the chain, by its values: `payload_hash` is the xxh3
/// (seed 0) of the payload as stored, `0` for an empty one. A multiply of two 64-bit words
/// folded to 64 bits (its high half depends on every input bit) instead of xxh3 over the
/// record's bytes: a timer wake costs a few instructions instead of thirty, and the reader
/// takes every integer only in its smallest encoding, so each record has one byte form and
/// a changed byte still changes a value the chain covers (`docs/tape-format.md`).
#[inline(always)]
pub(crate) fn chain_step_values(
    previous: u64,
    t_ns: u64,
    actor: u16,
    task: u32,
    kind: u8,
    payload_hash: u64,
) -> u64 {
    let fields = (u64::from(task) << 32) | (u64::from(actor) << 8) | u64::from(kind);
    let state = mix(previous ^ t_ns ^ CHAIN_K0, fields ^ CHAIN_K1);
    if payload_hash == 0 {
        return state;
    }
    mix(state ^ CHAIN_K2, payload_hash ^ CHAIN_K3)
}

const CHAIN_K0: u64 = 0xa076_1d64_78bd_642f;
const CHAIN_K1: u64 = 0xe703_7ed1_a0b4_28db;
const CHAIN_K2: u64 = 0x8ebc_6af0_9c88_c6e3;
const CHAIN_K3: u64 = 0x5899_65cc_7537_4cc3;

/// The 128-bit product of `a` and `b`, its halves xored.
#[inline(always)]
fn mix(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// The payload's term in [`chain_step_values`]: its xxh3, or `0` when it is empty.
#[inline]
pub(crate) fn payload_hash(payload: &[u8]) -> u64 {
    if payload.is_empty() {
        0
    } else {
        xxhash_rust::xxh3::xxh3_64(payload)
    }
}

/// Returns the hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex_encode(&sha2::Sha256::digest(bytes))
}

/// Returns the lower-case hex of `bytes`.
pub fn hex_encode(bytes: &[u8]) -> String {
    // By table, not `write!`: every fs record and model call hashes something, and the
    // formatter costs about ten times as much.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// The sidecar content-store directory of a tape: `<tape>.cas`.
pub(crate) fn sidecar_dir(tape_path: &std::path::Path) -> std::path::PathBuf {
    let mut name = tape_path.as_os_str().to_owned();
    name.push(".cas");
    std::path::PathBuf::from(name)
}
