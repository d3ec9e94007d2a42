//! Streams a tape back, checking framing, the hash chain, checkpoints and the footer.

use std::collections::BTreeMap;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use super::inputs::{self, InputsSection, INPUTS_MAGIC};
use super::strings::{join_long_strings, ResolveError, KIND_STRING_REFS_BIT};
use super::{
    chain_step, chain_step_values, hex_encode, payload_hash, sidecar_dir, RecordKind, TapeFooter,
    TapeHeader, FORMAT_VERSION, FORMAT_VERSIONS_READ, FORMAT_VERSION_BYTE_CHAIN, KIND_BLOB_REF_BIT,
    MAGIC,
};

/// The largest header a reader accepts.
const HEADER_BYTES_MAX: u32 = 64 << 20;
/// The largest single payload a reader accepts (the writer's default payload limit).
const PAYLOAD_BYTES_MAX: u32 = 64 << 20;

/// What can go wrong writing or reading a tape. Every variant that concerns a record names
/// its index (0-based, counting every record including checkpoints) and its byte offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TapeError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file does not start with the tape magic.
    #[error("not a simtape tape: expected magic {expected:?}, found {found:?}")]
    NotATape {
        /// The magic.
        expected: String,
        /// The first bytes found.
        found: String,
    },
    /// The tape uses a format this engine does not read (one newer than it).
    #[error(
        "tape format version {found} is not supported (this engine reads versions 1 to \
         {supported}; a newer engine wrote this tape)"
    )]
    UnsupportedVersion {
        /// The version in the header.
        found: u32,
        /// The newest version this engine reads.
        supported: u32,
    },
    /// The header could not be encoded or decoded.
    #[error("bad tape header: {detail}")]
    BadHeader {
        /// What was wrong.
        detail: String,
    },
    /// A payload could not be encoded.
    #[error("payload does not encode: {detail}")]
    BadPayload {
        /// What was wrong.
        detail: String,
    },
    /// A record does not decode.
    #[error("corrupt tape: record {index} at byte offset {offset}: {detail}")]
    Corrupt {
        /// The record's index.
        index: u64,
        /// The record's offset.
        offset: u64,
        /// What was wrong.
        detail: String,
    },
    /// A record's bytes do not match the hash chain.
    #[error(
        "corrupt tape: record {index} at byte offset {offset} breaks the hash chain \
         (expected check {expected:#010x}, found {found:#010x})"
    )]
    ChainBroken {
        /// The record's index.
        index: u64,
        /// The record's offset.
        offset: u64,
        /// The check the chain computes.
        expected: u64,
        /// The check stored in the record.
        found: u64,
    },
    /// The tape ends before its footer: a prefix of a run (one killed mid-way, say).
    #[error(
        "truncated tape: {detail} (after {records} complete records, at byte offset {offset}; \
         {last})"
    )]
    Truncated {
        /// Complete records read.
        records: u64,
        /// Where the tape ends or the incomplete record starts.
        offset: u64,
        /// What was cut.
        detail: String,
        /// The last whole record, as people read it: `the last whole record is 41, a reply
        /// of llm at t=1.500s`, or that there is none.
        last: String,
    },
    /// A record refers to a blob the content store does not have.
    #[error("record {index} at byte offset {offset} refers to blob {hash}, which is missing")]
    MissingBlob {
        /// The record's index.
        index: u64,
        /// The record's offset.
        offset: u64,
        /// The blob's hex SHA-256.
        hash: String,
    },
    /// A file of the inputs section is not in its content directory, or has other bytes.
    #[error("the tape's input file {hash} is missing: {detail}")]
    MissingInput {
        /// The file's hex SHA-256.
        hash: String,
        /// Where it was looked for.
        detail: String,
    },
    /// The inputs section after the footer does not decode or breaks its check.
    #[error("corrupt tape: the inputs section at byte offset {offset}: {detail}")]
    CorruptInputs {
        /// Where the section starts.
        offset: u64,
        /// What was wrong.
        detail: String,
    },
    /// The tape grew past `tape_bytes_max`.
    #[error("limit tape_bytes_max = {bytes_max} reached")]
    TooLarge {
        /// The limit.
        bytes_max: u64,
    },
}

/// One record as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord {
    /// Index in the file, counting every record.
    pub index: u64,
    /// Byte offset of the record.
    pub offset: u64,
    /// The `seq` field.
    pub seq: u64,
    /// Virtual time in nanoseconds.
    pub t_ns: u64,
    /// Index into the header's actor table.
    pub actor: u16,
    /// The task that caused the record (0 = the engine).
    pub task: u32,
    /// What the record is.
    pub kind: RecordKind,
    /// Whether `payload` is the 32-byte SHA-256 of a content-store blob.
    pub blob_ref: bool,
    /// Whether the payload holds long strings by reference ([`TapeReader::resolve`] puts
    /// them back; `docs/tape-format.md`, "Long strings").
    pub string_refs: bool,
    /// The payload bytes (MessagePack), or the blob hash.
    pub payload: Vec<u8>,
}

struct CountingReader<R> {
    inner: R,
    offset: u64,
    captured: Vec<u8>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.offset += n as u64;
        self.captured.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// The last whole record a reader returned: what a truncated tape's error names.
#[derive(Debug, Clone, Copy)]
struct LastRecord {
    index: u64,
    kind: RecordKind,
    actor: u16,
    t_ns: u64,
}

/// Reads a tape record by record; `next_record` returns `Ok(None)` after the footer (or,
/// with [`TapeReader::up_to_truncation`], where a truncated tape ends).
pub struct TapeReader<R: Read> {
    reader: CountingReader<BufReader<R>>,
    header: TapeHeader,
    chain: u64,
    chain_before: u64,
    index: u64,
    /// The previous record's `t_ns` (format 4 records store the difference).
    last_t_ns: u64,
    footer: Option<TapeFooter>,
    inputs: Option<InputsSection>,
    sidecar: Option<PathBuf>,
    keep_blobs: bool,
    embedded_blobs: BTreeMap<[u8; 32], Vec<u8>>,
    last: Option<LastRecord>,
    /// Whether a truncation ends the records (`Ok(None)`) instead of failing.
    tolerate_truncation: bool,
    truncation: Option<TapeError>,
}

impl<R: Read> std::fmt::Debug for TapeReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapeReader")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

fn is_eof(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::UnexpectedEof
}

impl TapeReader<std::fs::File> {
    /// Opens the tape at `path`; a sidecar store beside it is used for blob references.
    pub fn open(path: &Path) -> Result<Self, TapeError> {
        let file = std::fs::File::open(path).map_err(|source| TapeError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let mut reader = TapeReader::new(file)?;
        reader.sidecar = Some(sidecar_dir(path));
        Ok(reader)
    }
}

impl<R: Read> TapeReader<R> {
    /// Reads the magic and the header.
    pub fn new(source: R) -> Result<Self, TapeError> {
        let mut reader = CountingReader {
            inner: BufReader::with_capacity(64 * 1024, source),
            offset: 0,
            captured: Vec::with_capacity(256),
        };
        let mut magic = [0u8; 8];
        let got = read_up_to(&mut reader, &mut magic)?;
        if got < MAGIC.len() || &magic != MAGIC {
            return Err(TapeError::NotATape {
                expected: String::from_utf8_lossy(MAGIC).into_owned(),
                found: String::from_utf8_lossy(&magic[..got]).into_owned(),
            });
        }
        let header_bytes = read_header_bytes(&mut reader)?;
        let header: TapeHeader =
            rmp_serde::from_slice(&header_bytes).map_err(|e| TapeError::BadHeader {
                detail: e.to_string(),
            })?;
        if !FORMAT_VERSIONS_READ.contains(&header.format_version) {
            return Err(TapeError::UnsupportedVersion {
                found: header.format_version,
                supported: FORMAT_VERSION,
            });
        }
        let chain = chain_step(0, &reader.captured);
        reader.captured.clear();
        Ok(TapeReader {
            reader,
            header,
            chain,
            chain_before: chain,
            index: 0,
            last_t_ns: 0,
            footer: None,
            inputs: None,
            sidecar: None,
            keep_blobs: false,
            embedded_blobs: BTreeMap::new(),
            last: None,
            tolerate_truncation: false,
            truncation: None,
        })
    }

    /// Reads a truncated tape as far as it goes: where it is cut, [`TapeReader::next_record`]
    /// returns `Ok(None)` and [`TapeReader::truncation`] says where and after which record.
    /// For the views and the oracle, which show what a killed run did; `tape verify` still
    /// reports the truncation as a damaged tape.
    pub fn up_to_truncation(mut self) -> Self {
        self.tolerate_truncation = true;
        self
    }

    /// Returns how the tape was cut, once a reader made with
    /// [`TapeReader::up_to_truncation`] has reached the cut.
    pub fn truncation(&self) -> Option<&TapeError> {
        self.truncation.as_ref()
    }

    /// Keeps embedded blobs in memory so [`TapeReader::resolve`] can return them.
    pub fn keep_blobs(mut self, keep: bool) -> Self {
        self.keep_blobs = keep;
        self
    }

    /// Returns the header.
    pub fn header(&self) -> &TapeHeader {
        &self.header
    }

    /// Returns the footer, once the reader has reached it.
    pub fn footer(&self) -> Option<&TapeFooter> {
        self.footer.as_ref()
    }

    /// Returns the inputs section after the footer, once the reader has reached it (tapes
    /// written without inputs, golden tapes among them, have none).
    pub fn inputs(&self) -> Option<&InputsSection> {
        self.inputs.as_ref()
    }

    /// Returns the chain hash after the last record read.
    pub fn chain_hash(&self) -> u64 {
        self.chain
    }

    /// Returns the byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.reader.offset
    }

    /// Returns the name of actor `id`, or `"?"`.
    pub fn actor_name(&self, id: u16) -> &str {
        self.header
            .actors
            .get(usize::from(id))
            .map_or("?", String::as_str)
    }

    /// Returns the payload of `record`, fetching it from the content store when it is a
    /// reference.
    pub fn resolve(&self, record: &RawRecord) -> Result<Vec<u8>, TapeError> {
        let stored = self.resolve_stored(record)?;
        if !record.string_refs {
            return Ok(stored);
        }
        join_long_strings(&stored, &mut |hash| self.blob(hash)).map_err(|error| match error {
            ResolveError::Missing(hash) => TapeError::MissingBlob {
                index: record.index,
                offset: record.offset,
                hash: hex_encode(&hash),
            },
            ResolveError::Bad(detail) => TapeError::Corrupt {
                index: record.index,
                offset: record.offset,
                detail,
            },
        })
    }

    /// Returns a blob's bytes, from the tape (when kept) or the sidecar store.
    fn blob(&self, hash: &[u8; 32]) -> Option<Vec<u8>> {
        if let Some(bytes) = self.embedded_blobs.get(hash) {
            return Some(bytes.clone());
        }
        std::fs::read(self.sidecar.as_ref()?.join(hex_encode(hash))).ok()
    }

    /// Returns the payload as stored: fetched from the content store when the record holds
    /// its hash, its string references left in place.
    fn resolve_stored(&self, record: &RawRecord) -> Result<Vec<u8>, TapeError> {
        if !record.blob_ref {
            return Ok(record.payload.clone());
        }
        let hash: [u8; 32] =
            record
                .payload
                .as_slice()
                .try_into()
                .map_err(|_| TapeError::Corrupt {
                    index: record.index,
                    offset: record.offset,
                    detail: format!(
                        "blob reference of {} bytes, expected 32",
                        record.payload.len()
                    ),
                })?;
        if let Some(bytes) = self.embedded_blobs.get(&hash) {
            return Ok(bytes.clone());
        }
        let missing = || TapeError::MissingBlob {
            index: record.index,
            offset: record.offset,
            hash: hex_encode(&hash),
        };
        let dir = self.sidecar.as_ref().ok_or_else(missing)?;
        std::fs::read(dir.join(hex_encode(&hash))).map_err(|_| missing())
    }

    /// Returns the next record, `Ok(None)` after the footer, or the first problem found.
    pub fn next_record(&mut self) -> Result<Option<RawRecord>, TapeError> {
        if self.footer.is_some() || self.truncation.is_some() {
            return Ok(None);
        }
        match self.next_whole_record() {
            Err(error @ TapeError::Truncated { .. }) if self.tolerate_truncation => {
                self.truncation = Some(error);
                Ok(None)
            }
            Ok(Some(record)) => {
                self.last = Some(LastRecord {
                    index: record.index,
                    kind: record.kind,
                    actor: record.actor,
                    t_ns: record.t_ns,
                });
                Ok(Some(record))
            }
            other => other,
        }
    }

    /// Names the last whole record, for a truncation's message.
    fn last_whole(&self) -> String {
        match self.last {
            None => "no record is whole; the header is".into(),
            Some(last) => format!(
                "the last whole record is {}, a {} of {} at t={}",
                last.index,
                last.kind.name(),
                self.actor_name(last.actor),
                crate::time::format_ns(last.t_ns)
            ),
        }
    }

    fn next_whole_record(&mut self) -> Result<Option<RawRecord>, TapeError> {
        let offset = self.reader.offset;
        let index = self.index;
        self.reader.captured.clear();
        let record = match self.decode(index, offset) {
            Ok(record) => record,
            Err(Decode::CleanEof) => {
                return Err(TapeError::Truncated {
                    records: index,
                    offset,
                    detail: "the footer is missing".into(),
                    last: self.last_whole(),
                })
            }
            Err(Decode::Eof) => {
                return Err(TapeError::Truncated {
                    records: index,
                    offset,
                    detail: format!("record {index} is incomplete"),
                    last: self.last_whole(),
                })
            }
            Err(Decode::Bad(detail)) => {
                return Err(TapeError::Corrupt {
                    index,
                    offset,
                    detail,
                })
            }
            Err(Decode::Io(source)) => {
                return Err(TapeError::Io {
                    path: "<tape>".into(),
                    source,
                });
            }
            Err(Decode::Chain {
                expected,
                found,
                index,
                offset,
            }) => {
                return Err(TapeError::ChainBroken {
                    index,
                    offset,
                    expected,
                    found,
                });
            }
        };
        self.index += 1;
        self.check_meta(&record)?;
        Ok(Some(record))
    }

    fn check_meta(&mut self, record: &RawRecord) -> Result<(), TapeError> {
        let corrupt = |detail: String| TapeError::Corrupt {
            index: record.index,
            offset: record.offset,
            detail,
        };
        match record.kind {
            RecordKind::Checkpoint => {
                let (records, hash): (u64, u64) = rmp_serde::from_slice(&record.payload)
                    .map_err(|e| corrupt(format!("bad checkpoint: {e}")))?;
                if records != record.index {
                    return Err(corrupt(format!(
                        "checkpoint counts {records} records, expected {}",
                        record.index
                    )));
                }
                if hash != self.chain_before {
                    return Err(corrupt(format!(
                        "checkpoint hash {hash:#018x} does not match the chain {:#018x}",
                        self.chain_before
                    )));
                }
            }
            RecordKind::Footer => {
                let footer: TapeFooter = rmp_serde::from_slice(&record.payload)
                    .map_err(|e| corrupt(format!("bad footer: {e}")))?;
                if footer.record_count != record.index {
                    return Err(corrupt(format!(
                        "footer counts {} records, expected {}",
                        footer.record_count, record.index
                    )));
                }
                if footer.final_hash != self.chain_before {
                    return Err(corrupt(format!(
                        "footer hash {:#018x} does not match the chain {:#018x}",
                        footer.final_hash, self.chain_before
                    )));
                }
                self.read_inputs(record.index)?;
                self.footer = Some(footer);
            }
            RecordKind::Blob if self.keep_blobs => {
                use sha2::Digest;
                let hash: [u8; 32] = sha2::Sha256::digest(&record.payload).into();
                self.embedded_blobs.insert(hash, record.payload.clone());
            }
            _ => {}
        }
        Ok(())
    }

    /// Reads what follows the footer: nothing, or an inputs section.
    fn read_inputs(&mut self, footer_index: u64) -> Result<(), TapeError> {
        let offset = self.reader.offset;
        let mut magic = [0u8; 8];
        let got = read_up_to(&mut self.reader, &mut magic)?;
        if got == 0 {
            return Ok(());
        }
        if got < magic.len() || &magic != INPUTS_MAGIC {
            return Err(TapeError::Corrupt {
                index: footer_index + 1,
                offset,
                detail: "bytes after the footer".into(),
            });
        }
        self.inputs = Some(inputs::decode(&mut self.reader, offset)?);
        Ok(())
    }

    fn decode(&mut self, index: u64, offset: u64) -> Result<RawRecord, Decode> {
        if self.header.format_version <= FORMAT_VERSION_BYTE_CHAIN {
            return self.decode_byte_chained(index, offset);
        }
        let reader = &mut self.reader;
        let mut marker = [0u8; 1];
        match read_up_to(reader, &mut marker) {
            Ok(0) => return Err(Decode::CleanEof),
            Ok(_) => {}
            Err(TapeError::Io { source, .. }) => return Err(Decode::Io(source)),
            Err(other) => return Err(Decode::Bad(other.to_string())),
        }
        if marker[0] != 0x96 {
            return Err(Decode::Bad(format!(
                "record frame: expected a fixarray of 6 (0x96), found marker {:#04x}",
                marker[0]
            )));
        }
        let delta = read_canonical_uint(reader, "dt_ns")?;
        let actor = u16::try_from(read_canonical_uint(reader, "actor")?)
            .map_err(|_| Decode::Bad("actor does not fit in 16 bits".into()))?;
        let task = u32::try_from(read_canonical_uint(reader, "task")?)
            .map_err(|_| Decode::Bad("task does not fit in 32 bits".into()))?;
        let kind_byte = read_canonical_uint(reader, "kind")?;
        let (kind_byte, kind) = self.kind_of(kind_byte)?;
        let payload_len = read_canonical_bin_len(&mut self.reader)?;
        let payload = read_payload(&mut self.reader, payload_len)?;
        let mut check = [0u8; 5];
        read_exact(&mut self.reader, &mut check)?;
        if check[0] != 0xce {
            return Err(Decode::Bad(format!(
                "field check: expected a uint32 (0xce), found marker {:#04x}",
                check[0]
            )));
        }
        let found = u64::from(u32::from_be_bytes([check[1], check[2], check[3], check[4]]));
        let t_ns = self.last_t_ns.wrapping_add(delta);
        let expected_chain = chain_step_values(
            self.chain,
            t_ns,
            actor,
            task,
            kind_byte,
            payload_hash(&payload),
        );
        let expected = expected_chain & 0xffff_ffff;
        if found != expected {
            return Err(Decode::Chain {
                expected,
                found,
                index,
                offset,
            });
        }
        self.chain_before = self.chain;
        self.chain = expected_chain;
        self.last_t_ns = t_ns;
        Ok(RawRecord {
            index,
            offset,
            seq: index,
            t_ns,
            actor,
            task,
            kind,
            blob_ref: kind_byte & KIND_BLOB_REF_BIT != 0,
            string_refs: kind_byte & KIND_STRING_REFS_BIT != 0,
            payload,
        })
    }

    /// Splits a kind field into its byte and its kind, refusing kinds the tape's version did
    /// not have.
    fn kind_of(&self, kind_byte: u64) -> Result<(u8, RecordKind), Decode> {
        let kind_byte = u8::try_from(kind_byte)
            .map_err(|_| Decode::Bad(format!("unknown record kind {kind_byte}")))?;
        let kind = RecordKind::from_u8(kind_byte & !(KIND_BLOB_REF_BIT | KIND_STRING_REFS_BIT))
            .filter(|kind| kind.exists_in(self.header.format_version))
            .ok_or_else(|| {
                Decode::Bad(format!(
                    "unknown record kind {kind_byte} (in format version {})",
                    self.header.format_version
                ))
            })?;
        Ok((kind_byte, kind))
    }

    /// Decodes a record of format 1, 2 or 3: `[seq, t_ns, actor, task, kind, payload,
    /// check]`, the chain over its bytes.
    fn decode_byte_chained(&mut self, index: u64, offset: u64) -> Result<RawRecord, Decode> {
        let reader = &mut self.reader;
        let len = match rmp::decode::read_array_len(reader) {
            Ok(len) => len,
            Err(e) if reader.captured.is_empty() && is_value_eof(&e) => {
                return Err(Decode::CleanEof)
            }
            Err(e) => return Err(Decode::from_value_read(e, "record frame")),
        };
        if len != 7 {
            return Err(Decode::Bad(format!(
                "record frame has {len} fields, expected 7"
            )));
        }
        let seq = read_u64(reader, "seq")?;
        let t_ns = read_u64(reader, "t_ns")?;
        let actor = u16::try_from(read_u64(reader, "actor")?)
            .map_err(|_| Decode::Bad("actor does not fit in 16 bits".into()))?;
        let task = u32::try_from(read_u64(reader, "task")?)
            .map_err(|_| Decode::Bad("task does not fit in 32 bits".into()))?;
        let kind_byte = read_u64(reader, "kind")?;
        let (kind_byte, kind) = self.kind_of(kind_byte)?;
        let reader = &mut self.reader;
        let payload_len =
            rmp::decode::read_bin_len(reader).map_err(|e| Decode::from_value_read(e, "payload"))?;
        let payload = read_payload(reader, payload_len)?;
        let expected_chain = chain_step(self.chain, &self.reader.captured);
        let found = read_u64(&mut self.reader, "check")?;
        let expected = expected_chain & 0xffff_ffff;
        if found != expected {
            return Err(Decode::Chain {
                expected,
                found,
                index,
                offset,
            });
        }
        self.chain_before = self.chain;
        self.chain = expected_chain;
        if seq != index {
            return Err(Decode::Bad(format!("seq is {seq}, expected {index}")));
        }
        Ok(RawRecord {
            index,
            offset,
            seq,
            t_ns,
            actor,
            task,
            kind,
            blob_ref: kind_byte & KIND_BLOB_REF_BIT != 0,
            string_refs: kind_byte & KIND_STRING_REFS_BIT != 0,
            payload,
        })
    }
}

enum Decode {
    CleanEof,
    Eof,
    Bad(String),
    Io(std::io::Error),
    Chain {
        expected: u64,
        found: u64,
        index: u64,
        offset: u64,
    },
}

impl Decode {
    fn from_value_read(error: rmp::decode::ValueReadError, what: &str) -> Decode {
        if is_value_eof(&error) {
            return Decode::Eof;
        }
        match error {
            rmp::decode::ValueReadError::TypeMismatch(marker) => {
                Decode::Bad(format!("{what}: unexpected MessagePack marker {marker:?}"))
            }
            other => Decode::Bad(format!("{what}: {other}")),
        }
    }
}

fn is_value_eof(error: &rmp::decode::ValueReadError) -> bool {
    match error {
        rmp::decode::ValueReadError::InvalidMarkerRead(e)
        | rmp::decode::ValueReadError::InvalidDataRead(e) => is_eof(e),
        rmp::decode::ValueReadError::TypeMismatch(_) => false,
    }
}

fn read_u64<R: Read>(reader: &mut R, field: &str) -> Result<u64, Decode> {
    rmp::decode::read_int(reader).map_err(|e| match e {
        rmp::decode::NumValueReadError::InvalidMarkerRead(e)
        | rmp::decode::NumValueReadError::InvalidDataRead(e)
            if is_eof(&e) =>
        {
            Decode::Eof
        }
        other => Decode::Bad(format!("field {field}: {other}")),
    })
}

/// Reads a payload of `len` bytes (its bin length already read).
fn read_payload<R: Read>(reader: &mut R, len: u32) -> Result<Vec<u8>, Decode> {
    if len > PAYLOAD_BYTES_MAX {
        return Err(Decode::Bad(format!(
            "payload of {len} bytes exceeds the {PAYLOAD_BYTES_MAX}-byte maximum"
        )));
    }
    let mut payload = Vec::new();
    reader
        .take(u64::from(len))
        .read_to_end(&mut payload)
        .map_err(Decode::Io)?;
    if payload.len() != len as usize {
        return Err(Decode::Eof);
    }
    Ok(payload)
}

/// Fills `buf`, or reports the record as cut short.
fn read_exact<R: Read>(reader: &mut R, buf: &mut [u8]) -> Result<(), Decode> {
    reader.read_exact(buf).map_err(|error| {
        if is_eof(&error) {
            Decode::Eof
        } else {
            Decode::Io(error)
        }
    })
}

/// Reads the `N`-byte big-endian integer after a MessagePack marker.
fn read_be<R: Read, const N: usize>(reader: &mut R) -> Result<u64, Decode> {
    let mut bytes = [0u8; 8];
    read_exact(reader, &mut bytes[8 - N..])?;
    Ok(u64::from_be_bytes(bytes))
}

/// Reads an unsigned integer of a format-4 record, which must be in its smallest encoding
/// (as the writer writes it): the chain covers values, and this keeps one byte form per
/// value, so a changed byte is always a changed value.
fn read_canonical_uint<R: Read>(reader: &mut R, field: &str) -> Result<u64, Decode> {
    let mut marker = [0u8; 1];
    read_exact(reader, &mut marker)?;
    let (value, least) = match marker[0] {
        small @ 0x00..=0x7f => return Ok(u64::from(small)),
        0xcc => (read_be::<R, 1>(reader)?, 0x80),
        0xcd => (read_be::<R, 2>(reader)?, 0x100),
        0xce => (read_be::<R, 4>(reader)?, 0x1_0000),
        0xcf => (read_be::<R, 8>(reader)?, 0x1_0000_0000),
        other => {
            return Err(Decode::Bad(format!(
                "field {field}: expected an unsigned integer, found marker {other:#04x}"
            )))
        }
    };
    if value < least {
        return Err(Decode::Bad(format!(
            "field {field}: {value} is not in its smallest encoding"
        )));
    }
    Ok(value)
}

/// Reads a format-4 payload's bin length, which must be in its smallest encoding.
fn read_canonical_bin_len<R: Read>(reader: &mut R) -> Result<u32, Decode> {
    let mut marker = [0u8; 1];
    read_exact(reader, &mut marker)?;
    let (len, least) = match marker[0] {
        0xc4 => (read_be::<R, 1>(reader)?, 0),
        0xc5 => (read_be::<R, 2>(reader)?, 0x100),
        0xc6 => (read_be::<R, 4>(reader)?, 0x1_0000),
        other => {
            return Err(Decode::Bad(format!(
                "payload: expected a bin, found marker {other:#04x}"
            )))
        }
    };
    if len < least {
        return Err(Decode::Bad(format!(
            "payload: its length {len} is not in its smallest encoding"
        )));
    }
    u32::try_from(len)
        .map_err(|_| Decode::Bad(format!("payload: its length {len} is over 4 bytes")))
}

fn read_up_to<R: Read>(reader: &mut R, buf: &mut [u8]) -> Result<usize, TapeError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(TapeError::Io {
                    path: "<tape>".into(),
                    source,
                })
            }
        }
    }
    Ok(filled)
}

fn read_header_bytes<R: Read>(reader: &mut CountingReader<R>) -> Result<Vec<u8>, TapeError> {
    let truncated = |detail: &str| TapeError::Truncated {
        records: 0,
        offset: MAGIC.len() as u64,
        detail: detail.into(),
        last: "no record is whole".into(),
    };
    let len = rmp::decode::read_bin_len(reader).map_err(|e| {
        if is_value_eof(&e) {
            truncated("the header is incomplete")
        } else {
            TapeError::BadHeader {
                detail: format!("expected a bin header: {e}"),
            }
        }
    })?;
    if len > HEADER_BYTES_MAX {
        return Err(TapeError::BadHeader {
            detail: format!("header of {len} bytes is too large"),
        });
    }
    let mut bytes = Vec::new();
    reader
        .take(u64::from(len))
        .read_to_end(&mut bytes)
        .map_err(|source| TapeError::Io {
            path: "<tape>".into(),
            source,
        })?;
    if bytes.len() != len as usize {
        return Err(truncated("the header is incomplete"));
    }
    Ok(bytes)
}

/// What `simtape tape verify` reports about a sound tape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// The header.
    pub header: TapeHeader,
    /// The footer.
    pub footer: TapeFooter,
    /// Records including checkpoints and blobs, excluding the footer.
    pub records: u64,
    /// Total bytes.
    pub bytes: u64,
    /// The inputs section, every file of it found and checked.
    pub inputs: Option<InputsSection>,
}

/// Reads the whole tape at `path`, checking everything, including that every blob reference
/// resolves.
pub fn verify_path(path: &Path) -> Result<VerifyReport, TapeError> {
    let mut reader = TapeReader::open(path)?.keep_blobs(true);
    let mut records = 0;
    while let Some(record) = reader.next_record()? {
        if record.blob_ref || record.string_refs {
            reader.resolve(&record)?;
        }
        if record.kind != RecordKind::Footer {
            records += 1;
        }
    }
    let footer = reader
        .footer()
        .cloned()
        .expect("next_record returns None only after a footer");
    let mut inputs = reader.inputs.take();
    if let Some(section) = &mut inputs {
        section.load_files(path.parent().unwrap_or(Path::new("")))?;
    }
    Ok(VerifyReport {
        header: reader.header.clone(),
        footer,
        records,
        bytes: reader.offset(),
        inputs,
    })
}
