//! A tape's inputs: its header, verdict and inputs section read in one pass, unpacked into a
//! directory that runs the same, and a new tape set to be written as it was.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use simtape::scenario::unpack;
use simtape::tape::{InputsSection, TapeHeader, TapeReader};

use super::RerunError;
use crate::sandbox::SandboxMode;

/// A tape's header, its footer's verdict and its inputs section (every file loaded), if it
/// has one.
#[derive(Debug)]
pub struct TapeInputs {
    /// The tape's header.
    pub header: TapeHeader,
    /// Its inputs section, with every file loaded.
    pub section: Option<InputsSection>,
    /// The footer's verdict line.
    pub verdict: String,
}

/// Reads the header, the verdict and the inputs of the tape at `path`, in one pass (a tape
/// cut before its footer is the reader's truncation error).
pub fn read(path: &Path) -> Result<TapeInputs, RerunError> {
    let tape_error = |error| RerunError::Tape {
        path: path.to_path_buf(),
        error,
    };
    let mut reader = TapeReader::open(path).map_err(tape_error)?;
    while reader.next_record().map_err(tape_error)?.is_some() {}
    let header = reader.header().clone();
    let verdict = reader
        .footer()
        .map(|footer| footer.verdict.clone())
        .unwrap_or_default();
    let section = match reader.inputs().cloned() {
        Some(mut section) => {
            section
                .load_files(path.parent().unwrap_or(Path::new("")))
                .map_err(tape_error)?;
            Some(section)
        }
        None => None,
    };
    Ok(TapeInputs {
        header,
        section,
        verdict,
    })
}

/// A tape's inputs written out: the scenario file, and the `--process-wasi` directory its
/// run had.
#[derive(Debug)]
pub struct Unpacked {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The directory of the WASI modules its programs ran as, when it had one.
    pub process_wasi: Option<PathBuf>,
}

/// Writes the tape's scenario and inputs under `dir` (empty or absent). A tape without an
/// inputs section gives the scenario file alone.
pub fn unpack_into(tape: &TapeInputs, dir: &Path) -> Result<Unpacked, RerunError> {
    let stamp = &tape.header.scenario;
    if simtape::tape::sha256_hex(stamp.source.as_bytes()) != stamp.digest {
        return Err(RerunError::ScenarioDigest);
    }
    let alone = simtape::tape::Inputs::new(&format!("{}.toml", stamp.name));
    let inputs = tape.section.as_ref().map_or(&alone, |s| &s.inputs);
    let scenario = unpack(inputs, &stamp.source, dir).map_err(|error| RerunError::Unpack {
        dir: dir.to_path_buf(),
        error,
    })?;
    Ok(Unpacked {
        scenario,
        process_wasi: inputs.process_wasi().map(|path| dir.join(path)),
    })
}

/// Sets `builder` to write its tape to `out` as the tape `like` was written: the same blob
/// mode and threshold, and the same inputs section (its files where that tape keeps them), so
/// the same run gives the same bytes.
pub fn write_like(builder: &mut simtape::Builder, like: &TapeInputs, out: &Path) {
    let header = &like.header;
    builder
        .tape(out)
        .sidecar_blobs(header.blob_mode == "sidecar");
    builder.blob_threshold_bytes(header.blob_threshold_bytes as usize);
    if let Some(section) = &like.section {
        builder
            .inputs(Arc::new(section.inputs.clone()))
            .inputs_store(section.store());
    }
}

/// The sandbox a tape says its agent program ran in: `None` (the default, contained) unless
/// the header says `off`.
pub fn sandbox_of(header: &TapeHeader) -> Option<SandboxMode> {
    match header.sandbox.as_deref() {
        Some("off") => Some(SandboxMode::Off),
        _ => None,
    }
}
