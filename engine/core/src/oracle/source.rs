//! Where a tape comes from. The oracle streams each tape more than once (fingerprints first,
//! then the details of what differs), so it takes something it can reopen, not a reader.

use std::io::Read;
use std::path::Path;

use super::{OracleError, Side};
use crate::tape::{RawRecord, RecordKind, TapeError, TapeReader};

/// A tape the oracle can open again from its start.
///
/// ```
/// use simtape::oracle::TapeSource;
/// let path = std::path::Path::new("run.tape");
/// assert_eq!(path.describe(), "run.tape");
/// ```
pub trait TapeSource {
    /// The bytes under the reader.
    type Bytes<'s>: Read
    where
        Self: 's;

    /// Opens a reader positioned after the header.
    fn open_tape(&self) -> Result<TapeReader<Self::Bytes<'_>>, TapeError>;

    /// Returns what to call the tape in errors: its path, or `<memory>`.
    fn describe(&self) -> String;
}

impl TapeSource for Path {
    type Bytes<'s> = std::fs::File;

    fn open_tape(&self) -> Result<TapeReader<std::fs::File>, TapeError> {
        TapeReader::open(self)
    }

    fn describe(&self) -> String {
        self.display().to_string()
    }
}

impl TapeSource for [u8] {
    type Bytes<'s> = &'s [u8];

    fn open_tape(&self) -> Result<TapeReader<&[u8]>, TapeError> {
        TapeReader::new(self)
    }

    fn describe(&self) -> String {
        "<memory>".to_string()
    }
}

/// Returns a function that names `side` of a failed read.
pub(crate) fn on<S: TapeSource + ?Sized>(
    source: &S,
    side: Side,
) -> impl Fn(TapeError) -> OracleError + '_ {
    move |error| OracleError::Tape {
        side,
        path: source.describe(),
        source: error,
    }
}

/// Opens `source` for one pass. A truncated tape (a killed run's) is read up to its cut:
/// its whole records are compared, and the report notes the cut.
pub(crate) fn open<S: TapeSource + ?Sized>(
    source: &S,
    side: Side,
) -> Result<TapeReader<S::Bytes<'_>>, OracleError> {
    source
        .open_tape()
        .map(TapeReader::up_to_truncation)
        .map_err(on(source, side))
}

/// Returns the payload of `record`, fetching a content-stored one. Embedded blobs are found
/// by streaming the tape again up to the record rather than by keeping every blob of the
/// tape in memory: only the first divergence is ever resolved.
pub(crate) fn resolve_payload<S: TapeSource + ?Sized>(
    source: &S,
    side: Side,
    record: &RawRecord,
) -> Result<Vec<u8>, OracleError> {
    if record.string_refs {
        // Its long strings are blobs anywhere before it: read up to it keeping them.
        let mut reader = open(source, side)?.keep_blobs(true);
        while let Some(earlier) = reader.next_record().map_err(on(source, side))? {
            if earlier.index >= record.index {
                break;
            }
        }
        return reader.resolve(record).map_err(on(source, side));
    }
    if !record.blob_ref {
        return Ok(record.payload.clone());
    }
    let mut reader = open(source, side)?;
    while let Some(earlier) = reader.next_record().map_err(on(source, side))? {
        if earlier.index >= record.index {
            break;
        }
        if earlier.kind == RecordKind::Blob && record.payload == sha256(&earlier.payload) {
            return Ok(earlier.payload);
        }
    }
    // Not embedded before the record: the sidecar store, or a named missing blob.
    reader.resolve(record).map_err(on(source, side))
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}
