//! Streams records into the tape format through one reused buffer.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::encode::{encode_bin_len, encode_uint, put_uint, FRAME_STAGING_BYTES};
use super::inputs::{encode as encode_inputs, store_file, InputStore, Inputs};
use super::strings::{split_long_strings, KIND_STRING_REFS_BIT, STRING_REF_MIN_BYTES};
use super::{
    chain_step, chain_step_values, hex_encode, payload_hash, RecordKind, TapeError, TapeFooter,
    TapeHeader, BUFFER_BYTES, CHECKPOINT_INTERVAL_RECORDS, FORMAT_VERSION_BYTE_CHAIN,
    KIND_BLOB_REF_BIT, MAGIC,
};

/// Where payloads above the blob threshold are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobMode {
    /// As `blob` records inside the tape: one self-contained file.
    Embedded,
    /// As files named by their SHA-256 under a directory beside the tape (`<tape>.cas/`).
    Sidecar(PathBuf),
}

impl BlobMode {
    /// Returns the mode's name as stored in the header.
    pub fn name(&self) -> &'static str {
        match self {
            BlobMode::Embedded => "embedded",
            BlobMode::Sidecar(_) => "sidecar",
        }
    }
}

/// Where the tape bytes go.
#[derive(Debug)]
pub enum TapeSink {
    /// A file, written as the run goes so a killed run leaves a readable prefix.
    File(std::fs::File, PathBuf),
    /// A file not yet holding its header: written under the temporary name `partial` beside
    /// `path`, and renamed to `path` by [`TapeWriter::new`] once the magic and header are
    /// written, so that `path` never names an empty or headless tape, even after `kill -9`.
    Creating {
        /// The open temporary file.
        file: std::fs::File,
        /// Its name, `.<file name>.partial` in the tape's directory.
        partial: PathBuf,
        /// The tape's path.
        path: PathBuf,
    },
    /// Memory, returned by [`TapeWriter::finish`].
    Memory(Vec<u8>),
}

impl TapeSink {
    /// Starts the tape file at `path`: a temporary file beside it until the header is
    /// written (see [`TapeSink::Creating`]); a tape already at `path` is replaced then.
    pub fn create(path: &Path) -> Result<TapeSink, TapeError> {
        let io = |source| TapeError::Io {
            path: path.display().to_string(),
            source,
        };
        // A device or a pipe (`--tape /dev/null`) is written in place: renaming a file over
        // it would replace it.
        if std::fs::metadata(path).is_ok_and(|meta| !meta.is_file()) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(io)?;
            return Ok(TapeSink::File(file, path.to_path_buf()));
        }
        let partial = partial_path(path);
        let file = std::fs::File::create(&partial).map_err(|source| TapeError::Io {
            path: partial.display().to_string(),
            source,
        })?;
        Ok(TapeSink::Creating {
            file,
            partial,
            path: path.to_path_buf(),
        })
    }

    /// Puts a file's tape in place under its own name, once it holds the magic and header.
    fn commit(self) -> Result<TapeSink, TapeError> {
        match self {
            TapeSink::Creating {
                file,
                partial,
                path,
            } => {
                std::fs::rename(&partial, &path).map_err(|source| TapeError::Io {
                    path: path.display().to_string(),
                    source,
                })?;
                Ok(TapeSink::File(file, path))
            }
            sink => Ok(sink),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<(), TapeError> {
        match self {
            TapeSink::File(file, path)
            | TapeSink::Creating {
                file,
                partial: path,
                ..
            } => file.write_all(bytes).map_err(|source| TapeError::Io {
                path: path.display().to_string(),
                source,
            }),
            TapeSink::Memory(out) => {
                out.extend_from_slice(bytes);
                Ok(())
            }
        }
    }
}

/// The temporary name a tape file has until its header is written: hidden, beside it.
fn partial_path(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or(path.as_os_str()));
    name.push(".partial");
    path.with_file_name(name)
}

/// Writes a tape record by record. See `docs/tape-format.md`.
#[derive(Debug)]
pub struct TapeWriter {
    sink: TapeSink,
    /// Always `BUFFER_BYTES + FRAME_STAGING_BYTES` long; `filled` bytes are pending. Small
    /// records are encoded straight into it (no staging copy, no growth checks).
    buffer: Vec<u8>,
    filled: usize,
    payload: Vec<u8>,
    chain: u64,
    records: u64,
    /// Whether the header names format 3 or older: records then carry `seq` and absolute
    /// `t_ns` and the chain hashes their bytes (the tests write tapes of every version).
    byte_chain: bool,
    /// The previous record's `t_ns`: format 4 records store the difference.
    last_t_ns: u64,
    bytes_written: u64,
    bytes_max: u64,
    blob_mode: BlobMode,
    blob_threshold_bytes: usize,
    blobs_written: BTreeSet<[u8; 32]>,
    inputs: Option<(Arc<Inputs>, InputStore)>,
}

/// Returned by [`TapeWriter::finish`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TapeSummary {
    /// Records before the footer.
    pub record_count: u64,
    /// The final chain hash.
    pub final_hash: u64,
    /// Total bytes of the tape.
    pub bytes: u64,
    /// The tape bytes, for a memory sink.
    pub memory: Option<Vec<u8>>,
}

impl TapeWriter {
    /// Starts a tape: writes the magic and the header, and hands them to the sink at once
    /// (a file sink then takes its name), so a tape is readable from its first byte.
    pub fn new(
        sink: TapeSink,
        header: &TapeHeader,
        blob_mode: BlobMode,
        bytes_max: u64,
    ) -> Result<TapeWriter, TapeError> {
        let header_bytes = rmp_serde::to_vec(header).map_err(|e| TapeError::BadHeader {
            detail: e.to_string(),
        })?;
        let mut start = Vec::with_capacity(header_bytes.len() + 16);
        start.extend_from_slice(MAGIC);
        rmp::encode::write_bin(&mut start, &header_bytes).expect("writes to a Vec cannot fail");
        if let BlobMode::Sidecar(dir) = &blob_mode {
            std::fs::create_dir_all(dir).map_err(|source| TapeError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let chain = chain_step(0, &start);
        let mut writer = TapeWriter {
            sink,
            buffer: vec![0; BUFFER_BYTES + FRAME_STAGING_BYTES],
            filled: 0,
            payload: Vec::with_capacity(256),
            chain,
            records: 0,
            byte_chain: header.format_version <= FORMAT_VERSION_BYTE_CHAIN,
            last_t_ns: 0,
            bytes_written: 0,
            bytes_max,
            blob_mode,
            blob_threshold_bytes: header.blob_threshold_bytes as usize,
            blobs_written: BTreeSet::new(),
            inputs: None,
        };
        writer.write_bytes(&start)?;
        writer.flush()?;
        writer.sink = std::mem::replace(&mut writer.sink, TapeSink::Memory(Vec::new())).commit()?;
        Ok(writer)
    }

    /// Writes `inputs` after the footer, their files kept as `store` says (see
    /// `docs/tape-format.md`, "Inputs"); the records are the same bytes either way.
    pub fn with_inputs(mut self, inputs: Arc<Inputs>, store: InputStore) -> TapeWriter {
        self.inputs = Some((inputs, store));
        self
    }

    /// Returns the records written so far (the next record's `seq`).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Returns the chain hash after the last record.
    pub fn chain_hash(&self) -> u64 {
        self.chain
    }

    /// Writes a record with an empty payload (the hot path for timer wakes).
    #[inline]
    pub fn write_empty(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
    ) -> Result<(), TapeError> {
        self.frame(t_ns, actor, task, kind as u8, &[], 0)
    }

    /// Encodes `value` (MessagePack, compact arrays) and writes it as a record's payload.
    pub fn write_value<T: Serialize + ?Sized>(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
        value: &T,
    ) -> Result<(), TapeError> {
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        let encoded = rmp_serde::encode::write(&mut payload, value);
        let result = match encoded {
            Ok(()) => self.write_payload(t_ns, actor, task, kind, &payload),
            Err(e) => Err(TapeError::BadPayload {
                detail: e.to_string(),
            }),
        };
        super::release_scratch(&mut payload);
        self.payload = payload;
        result
    }

    /// Writes a record whose payload is already-encoded bytes, moving large payloads to the
    /// content store.
    pub fn write_payload(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
        payload: &[u8],
    ) -> Result<(), TapeError> {
        self.write_payload_hashed(t_ns, actor, task, kind, payload, payload_hash(payload))
    }

    /// [`TapeWriter::write_payload`] for a payload whose hash the caller has (the recorder
    /// hashes every payload for the run's fingerprint): `hash` is the xxh3 (seed 0) of
    /// `payload`, `0` for an empty one.
    #[inline]
    pub(crate) fn write_payload_hashed(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: RecordKind,
        payload: &[u8],
        hash: u64,
    ) -> Result<(), TapeError> {
        if payload.len() <= self.blob_threshold_bytes {
            // An empty payload adds no term to the chain, whatever its xxh3.
            let hash = if payload.is_empty() { 0 } else { hash };
            return self.frame(t_ns, actor, task, kind as u8, payload, hash);
        }
        // An input's strings are text from outside (HTTP bodies): their long JSON literals
        // are what the actors' records hold decoded.
        let split = if payload.len() > STRING_REF_MIN_BYTES {
            split_long_strings(payload, kind == RecordKind::Input, &mut |hash, bytes| {
                self.store_blob(t_ns, task, hash, bytes)
            })?
        } else {
            None
        };
        let (kind, payload) = match &split {
            Some(referenced) => (kind as u8 | KIND_STRING_REFS_BIT, referenced.as_slice()),
            None => (kind as u8, payload),
        };
        // With its long strings by reference, a payload may be small enough to keep.
        if payload.len() <= self.blob_threshold_bytes {
            return self.frame(t_ns, actor, task, kind, payload, payload_hash(payload));
        }
        let hash: [u8; 32] = {
            use sha2::Digest;
            sha2::Sha256::digest(payload).into()
        };
        self.store_blob(t_ns, task, &hash, payload)?;
        self.frame(
            t_ns,
            actor,
            task,
            kind | KIND_BLOB_REF_BIT,
            &hash,
            payload_hash(&hash),
        )
    }

    fn store_blob(
        &mut self,
        t_ns: u64,
        task: u32,
        hash: &[u8; 32],
        payload: &[u8],
    ) -> Result<(), TapeError> {
        if !self.blobs_written.insert(*hash) {
            return Ok(());
        }
        match &self.blob_mode {
            BlobMode::Embedded => self.frame(
                t_ns,
                0,
                task,
                RecordKind::Blob as u8,
                payload,
                payload_hash(payload),
            ),
            BlobMode::Sidecar(dir) => store_file(dir, &hex_encode(hash), payload),
        }
    }

    /// Writes one record; `hash` is [`payload_hash`] of `payload` (format 4 chains it).
    #[inline(always)]
    fn frame(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: u8,
        payload: &[u8],
        hash: u64,
    ) -> Result<(), TapeError> {
        if self.records.is_multiple_of(CHECKPOINT_INTERVAL_RECORDS) && self.records > 0 {
            self.checkpoint(t_ns)?;
        }
        self.frame_unchecked(t_ns, actor, task, kind, payload, hash)
    }

    fn checkpoint(&mut self, t_ns: u64) -> Result<(), TapeError> {
        let mut payload = Vec::with_capacity(16);
        rmp::encode::write_array_len(&mut payload, 2).expect("Vec write");
        rmp::encode::write_uint(&mut payload, self.records).expect("Vec write");
        rmp::encode::write_uint(&mut payload, self.chain).expect("Vec write");
        let hash = payload_hash(&payload);
        self.frame_unchecked(t_ns, 0, 0, RecordKind::Checkpoint as u8, &payload, hash)?;
        // Every checkpoint reaches the file: a killed run keeps every record up to its last
        // checkpoint at least (and usually more: the buffer is written whenever it fills).
        self.flush()
    }

    #[inline(always)]
    fn frame_unchecked(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: u8,
        payload: &[u8],
        hash: u64,
    ) -> Result<(), TapeError> {
        if self.byte_chain {
            return self.frame_byte_chained(t_ns, actor, task, kind, payload);
        }
        let delta = t_ns.wrapping_sub(self.last_t_ns);
        self.last_t_ns = t_ns;
        self.chain = chain_step_values(self.chain, t_ns, actor, task, kind, hash);
        let check = (self.chain as u32).to_be_bytes();
        if payload.len() <= FRAME_STAGING_BYTES - HEAD_BYTES_MAX {
            // Small records (wakes, spawns, exits) are encoded in place in the buffer, which
            // always has FRAME_STAGING_BYTES of room past BUFFER_BYTES.
            let start = self.filled;
            let out: &mut [u8; FRAME_STAGING_BYTES] = (&mut self.buffer
                [start..start + FRAME_STAGING_BYTES])
                .try_into()
                .expect("the buffer keeps FRAME_STAGING_BYTES of room past BUFFER_BYTES");
            let mut len = encode_head_values(out, delta, actor, task, kind, payload.len());
            if !payload.is_empty() {
                out[len..len + payload.len()].copy_from_slice(payload);
                len += payload.len();
            }
            out[len] = 0xce; // uint32, always: the check has a fixed width
            out[len + 1..len + 5].copy_from_slice(&check);
            self.filled += len + 5;
            self.records += 1;
            if self.filled >= BUFFER_BYTES {
                self.flush()?;
            }
            return Ok(());
        }
        let mut head = [0u8; FRAME_STAGING_BYTES];
        let head_len = encode_head_values(&mut head, delta, actor, task, kind, payload.len());
        self.records += 1;
        self.write_bytes(&head[..head_len])?;
        self.write_bytes(payload)?;
        self.write_bytes(&[0xce, check[0], check[1], check[2], check[3]])
    }

    /// Writes a record of format 3 or older: `seq` and absolute `t_ns`, the chain over its
    /// bytes.
    #[cold]
    fn frame_byte_chained(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: u8,
        payload: &[u8],
    ) -> Result<(), TapeError> {
        // The fixed fields are encoded by hand into a stack buffer: the bytes are exactly
        // what `rmp::encode::write_uint` writes (a test checks it), at a fraction of the cost
        // on the hot path, where most records are 10-20 bytes.
        if 40 + payload.len() <= FRAME_STAGING_BYTES {
            // Small records (wakes, spawns, exits) are encoded in place in the buffer, which
            // always has FRAME_STAGING_BYTES of room past BUFFER_BYTES.
            let start = self.filled;
            // A fixed-size view: one bounds check here instead of one per field below.
            let out: &mut [u8; FRAME_STAGING_BYTES] = (&mut self.buffer
                [start..start + FRAME_STAGING_BYTES])
                .try_into()
                .expect("the buffer keeps FRAME_STAGING_BYTES of room past BUFFER_BYTES");
            let mut len = encode_head(out, self.records, t_ns, actor, task, kind, payload.len());
            out[len..len + payload.len()].copy_from_slice(payload);
            len += payload.len();
            self.chain = chain_step(self.chain, &out[..len]);
            len += encode_uint(&mut out[len..], self.chain & 0xffff_ffff);
            self.filled += len;
            self.records += 1;
            if self.filled >= BUFFER_BYTES {
                self.flush()?;
            }
            return Ok(());
        }
        // A large record (a blob, a long message) goes to the sink in its three parts, the
        // chain hashed over them in turn: no copy of the payload is made.
        let mut head = [0u8; 40];
        let head_len = encode_head(
            &mut head,
            self.records,
            t_ns,
            actor,
            task,
            kind,
            payload.len(),
        );
        let mut chain = xxhash_rust::xxh3::Xxh3::with_seed(self.chain);
        chain.update(&head[..head_len]);
        chain.update(payload);
        self.chain = chain.digest();
        let mut check = [0u8; 5];
        let check_len = encode_uint(&mut check, self.chain & 0xffff_ffff);
        self.records += 1;
        self.write_bytes(&head[..head_len])?;
        self.write_bytes(payload)?;
        self.write_bytes(&check[..check_len])
    }

    /// Appends `bytes` to the buffer, flushing as needed; large writes go straight through.
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), TapeError> {
        if self.filled + bytes.len() <= self.buffer.len() {
            self.buffer[self.filled..self.filled + bytes.len()].copy_from_slice(bytes);
            self.filled += bytes.len();
        } else {
            self.flush()?;
            self.bytes_written += bytes.len() as u64;
            self.check_size()?;
            self.sink.write_all(bytes)?;
        }
        if self.filled >= BUFFER_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn check_size(&self) -> Result<(), TapeError> {
        let total = self.bytes_written + self.filled as u64;
        if total > self.bytes_max {
            return Err(TapeError::TooLarge {
                bytes_max: self.bytes_max,
            });
        }
        Ok(())
    }

    /// Writes the buffered bytes to the sink.
    #[inline(never)]
    pub fn flush(&mut self) -> Result<(), TapeError> {
        self.check_size()?;
        self.sink.write_all(&self.buffer[..self.filled])?;
        self.bytes_written += self.filled as u64;
        self.filled = 0;
        Ok(())
    }

    /// Writes the footer and flushes; returns what was written.
    pub fn finish(mut self, t_ns: u64, verdict: &str) -> Result<TapeSummary, TapeError> {
        let footer = TapeFooter {
            record_count: self.records,
            final_hash: self.chain,
            verdict: verdict.to_string(),
        };
        let payload = rmp_serde::to_vec(&footer).expect("the footer always encodes");
        // The footer bypasses the checkpoint rule: it is the last record.
        let hash = payload_hash(&payload);
        self.frame_unchecked(t_ns, 0, 0, RecordKind::Footer as u8, &payload, hash)?;
        self.flush()?;
        if let Some((inputs, store)) = self.inputs.take() {
            // After the size check: `tape_bytes_max` bounds the run's records; the inputs
            // have their own bounds (`scenario::INPUTS_BYTES_MAX`).
            let section = encode_inputs(&inputs, &store)?;
            self.sink.write_all(&section)?;
            self.bytes_written += section.len() as u64;
        }
        if let TapeSink::File(file, path) | TapeSink::Creating { file, path, .. } = &mut self.sink {
            file.flush().map_err(|source| TapeError::Io {
                path: path.display().to_string(),
                source,
            })?;
        }
        let memory = match self.sink {
            TapeSink::Memory(bytes) => Some(bytes),
            TapeSink::File(..) | TapeSink::Creating { .. } => None,
        };
        Ok(TapeSummary {
            record_count: footer.record_count,
            final_hash: footer.final_hash,
            bytes: self.bytes_written,
            memory,
        })
    }
}

/// The most bytes [`encode_head_values`] writes (marker, four uints, a bin length), rounded up.
const HEAD_BYTES_MAX: usize = 40;

/// Encodes a format-4 record's array marker and fields (`dt_ns` … the payload's bin length)
/// into `out`; returns the length. Every field lands at an offset below 64, which
/// [`put_uint`] relies on to drop its bounds checks.
#[inline(always)]
fn encode_head_values(
    out: &mut [u8; FRAME_STAGING_BYTES],
    delta: u64,
    actor: u16,
    task: u32,
    kind: u8,
    payload_len: usize,
) -> usize {
    out[0] = 0x96; // fixarray of 6
    let mut len = 1;
    len += put_uint(out, len, delta);
    len += put_uint(out, len, u64::from(actor));
    len += put_uint(out, len, u64::from(task));
    len += put_uint(out, len, u64::from(kind));
    if payload_len == 0 {
        // The timer wake's empty bin, without the length ladder.
        let at = len & 0x3f;
        out[at] = 0xc4;
        out[at + 1] = 0;
        return len + 2;
    }
    len + encode_bin_len(&mut out[len..], payload_len)
}

/// Encodes a record's array marker and fixed fields (`seq` … the payload's bin length) into
/// `out`, which has room for 40 bytes; returns the length.
#[inline(always)]
fn encode_head(
    out: &mut [u8],
    seq: u64,
    t_ns: u64,
    actor: u16,
    task: u32,
    kind: u8,
    payload_len: usize,
) -> usize {
    out[0] = 0x97; // fixarray of 7
    let mut len = 1;
    len += encode_uint(&mut out[len..], seq);
    len += encode_uint(&mut out[len..], t_ns);
    len += encode_uint(&mut out[len..], u64::from(actor));
    len += encode_uint(&mut out[len..], u64::from(task));
    len += encode_uint(&mut out[len..], u64::from(kind));
    len += encode_bin_len(&mut out[len..], payload_len);
    len
}
