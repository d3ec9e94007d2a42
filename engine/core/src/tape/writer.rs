//! Streams records into the tape format through one reused buffer.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{
    chain_step, hex_encode, RecordKind, TapeError, TapeFooter, TapeHeader, BUFFER_BYTES,
    CHECKPOINT_INTERVAL_RECORDS, KIND_BLOB_REF_BIT, MAGIC,
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
    /// Memory, returned by [`TapeWriter::finish`].
    Memory(Vec<u8>),
}

impl TapeSink {
    /// Creates (truncates) the file at `path`.
    pub fn create(path: &Path) -> Result<TapeSink, TapeError> {
        let file = std::fs::File::create(path).map_err(|source| TapeError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Ok(TapeSink::File(file, path.to_path_buf()))
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<(), TapeError> {
        match self {
            TapeSink::File(file, path) => file.write_all(bytes).map_err(|source| TapeError::Io {
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

/// Writes a tape record by record. See `docs/tape-format.md`.
#[derive(Debug)]
pub struct TapeWriter {
    sink: TapeSink,
    buffer: Vec<u8>,
    payload: Vec<u8>,
    chain: u64,
    records: u64,
    bytes_written: u64,
    bytes_max: u64,
    blob_mode: BlobMode,
    blob_threshold_bytes: usize,
    blobs_written: BTreeSet<[u8; 32]>,
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
    /// Starts a tape: writes the magic and the header.
    pub fn new(
        sink: TapeSink,
        header: &TapeHeader,
        blob_mode: BlobMode,
        bytes_max: u64,
    ) -> Result<TapeWriter, TapeError> {
        let header_bytes = rmp_serde::to_vec(header).map_err(|e| TapeError::BadHeader {
            detail: e.to_string(),
        })?;
        let mut buffer = Vec::with_capacity(BUFFER_BYTES + 1024);
        buffer.extend_from_slice(MAGIC);
        rmp::encode::write_bin(&mut buffer, &header_bytes).expect("writes to a Vec cannot fail");
        if let BlobMode::Sidecar(dir) = &blob_mode {
            std::fs::create_dir_all(dir).map_err(|source| TapeError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let chain = chain_step(0, &buffer);
        let writer = TapeWriter {
            sink,
            buffer,
            payload: Vec::with_capacity(256),
            chain,
            records: 0,
            bytes_written: 0,
            bytes_max,
            blob_mode,
            blob_threshold_bytes: header.blob_threshold_bytes as usize,
            blobs_written: BTreeSet::new(),
        };
        writer.check_size()?;
        Ok(writer)
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
        self.frame(t_ns, actor, task, kind as u8, &[])
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
        if payload.len() <= self.blob_threshold_bytes {
            return self.frame(t_ns, actor, task, kind as u8, payload);
        }
        let hash: [u8; 32] = {
            use sha2::Digest;
            sha2::Sha256::digest(payload).into()
        };
        self.store_blob(t_ns, task, &hash, payload)?;
        self.frame(t_ns, actor, task, kind as u8 | KIND_BLOB_REF_BIT, &hash)
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
            BlobMode::Embedded => self.frame(t_ns, 0, task, RecordKind::Blob as u8, payload),
            BlobMode::Sidecar(dir) => {
                let path = dir.join(hex_encode(hash));
                if path.exists() {
                    return Ok(());
                }
                let temp = dir.join(format!("{}.tmp", hex_encode(hash)));
                std::fs::write(&temp, payload)
                    .and_then(|()| std::fs::rename(&temp, &path))
                    .map_err(|source| TapeError::Io {
                        path: path.display().to_string(),
                        source,
                    })
            }
        }
    }

    #[inline]
    fn frame(
        &mut self,
        t_ns: u64,
        actor: u16,
        task: u32,
        kind: u8,
        payload: &[u8],
    ) -> Result<(), TapeError> {
        if self.records > 0 && self.records % CHECKPOINT_INTERVAL_RECORDS == 0 {
            self.checkpoint(t_ns)?;
        }
        self.frame_unchecked(t_ns, actor, task, kind, payload)
    }

    fn checkpoint(&mut self, t_ns: u64) -> Result<(), TapeError> {
        let mut payload = Vec::with_capacity(16);
        rmp::encode::write_array_len(&mut payload, 2).expect("Vec write");
        rmp::encode::write_uint(&mut payload, self.records).expect("Vec write");
        rmp::encode::write_uint(&mut payload, self.chain).expect("Vec write");
        self.frame_unchecked(t_ns, 0, 0, RecordKind::Checkpoint as u8, &payload)
    }

    #[inline]
    fn frame_unchecked(
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
        let mut head = [0u8; FRAME_STAGING_BYTES];
        head[0] = 0x97; // fixarray of 7
        let mut len = 1;
        len += encode_uint(&mut head[len..], self.records);
        len += encode_uint(&mut head[len..], t_ns);
        len += encode_uint(&mut head[len..], u64::from(actor));
        len += encode_uint(&mut head[len..], u64::from(task));
        len += encode_uint(&mut head[len..], u64::from(kind));
        len += encode_bin_len(&mut head[len..], payload.len());
        if len + payload.len() + 5 <= FRAME_STAGING_BYTES {
            // Small records (wakes, exits) are staged whole and appended in one copy.
            head[len..len + payload.len()].copy_from_slice(payload);
            len += payload.len();
            self.chain = chain_step(self.chain, &head[..len]);
            len += encode_uint(&mut head[len..], self.chain & 0xffff_ffff);
            self.buffer.extend_from_slice(&head[..len]);
        } else {
            let start = self.buffer.len();
            self.buffer.extend_from_slice(&head[..len]);
            self.buffer.extend_from_slice(payload);
            self.chain = chain_step(self.chain, &self.buffer[start..]);
            let mut check = [0u8; 5];
            let check_len = encode_uint(&mut check, self.chain & 0xffff_ffff);
            self.buffer.extend_from_slice(&check[..check_len]);
        }
        self.records += 1;
        if self.buffer.len() >= BUFFER_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn check_size(&self) -> Result<(), TapeError> {
        let total = self.bytes_written + self.buffer.len() as u64;
        if total > self.bytes_max {
            return Err(TapeError::TooLarge {
                bytes_max: self.bytes_max,
            });
        }
        Ok(())
    }

    /// Writes the buffered bytes to the sink.
    pub fn flush(&mut self) -> Result<(), TapeError> {
        self.check_size()?;
        self.sink.write_all(&self.buffer)?;
        self.bytes_written += self.buffer.len() as u64;
        self.buffer.clear();
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
        self.frame_unchecked(t_ns, 0, 0, RecordKind::Footer as u8, &payload)?;
        self.flush()?;
        if let TapeSink::File(file, path) = &mut self.sink {
            file.flush().map_err(|source| TapeError::Io {
                path: path.display().to_string(),
                source,
            })?;
        }
        let memory = match self.sink {
            TapeSink::Memory(bytes) => Some(bytes),
            TapeSink::File(..) => None,
        };
        Ok(TapeSummary {
            record_count: footer.record_count,
            final_hash: footer.final_hash,
            bytes: self.bytes_written,
            memory,
        })
    }
}

/// Bytes of the stack buffer a small record is assembled in before one copy to the buffer.
const FRAME_STAGING_BYTES: usize = 96;

/// Writes `value` as the smallest MessagePack unsigned integer into `out`; returns the length.
#[inline]
fn encode_uint(out: &mut [u8], value: u64) -> usize {
    if value < 0x80 {
        out[0] = value as u8;
        1
    } else if value <= 0xff {
        out[0] = 0xcc;
        out[1] = value as u8;
        2
    } else if value <= 0xffff {
        out[0] = 0xcd;
        out[1..3].copy_from_slice(&(value as u16).to_be_bytes());
        3
    } else if value <= 0xffff_ffff {
        out[0] = 0xce;
        out[1..5].copy_from_slice(&(value as u32).to_be_bytes());
        5
    } else {
        out[0] = 0xcf;
        out[1..9].copy_from_slice(&value.to_be_bytes());
        9
    }
}

/// Writes a MessagePack bin length marker into `out`; returns its length.
#[inline]
fn encode_bin_len(out: &mut [u8], len: usize) -> usize {
    if len <= 0xff {
        out[0] = 0xc4;
        out[1] = len as u8;
        2
    } else if len <= 0xffff {
        out[0] = 0xc5;
        out[1..3].copy_from_slice(&(len as u16).to_be_bytes());
        3
    } else {
        out[0] = 0xc6;
        let len = u32::try_from(len).expect("payloads are limited far below 4 GiB");
        out[1..5].copy_from_slice(&len.to_be_bytes());
        5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_encoding_matches_rmp() {
        // Goal: the hot-path encoder writes exactly the bytes rmp writes, at every boundary.
        let values = [0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x1_0000, 0xffff_ffff, 0x1_0000_0000, u64::MAX];
        for value in values {
            let mut ours = [0u8; 9];
            let len = encode_uint(&mut ours, value);
            let mut theirs = Vec::new();
            rmp::encode::write_uint(&mut theirs, value).unwrap();
            assert_eq!(&ours[..len], theirs.as_slice(), "uint {value}");
        }
        for len in [0usize, 1, 0xff, 0x100, 0xffff, 0x1_0000] {
            let mut ours = [0u8; 5];
            let n = encode_bin_len(&mut ours, len);
            let mut theirs = Vec::new();
            rmp::encode::write_bin_len(&mut theirs, len as u32).unwrap();
            assert_eq!(&ours[..n], theirs.as_slice(), "bin len {len}");
        }
    }
}
