//! A tape's inputs for the commands: capturing a loaded scenario's files for the tapes a
//! command writes, and unpacking a tape's inputs into a directory that runs the same.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use simtape::scenario::unpack;
use simtape::tape::{InputsSection, TapeHeader, TapeReader};
use simtape_agent::EvalScenario;

use crate::exit::CliError;

/// Reads every file `eval` reads (and the `--process-wasi` modules) into the inputs its
/// tapes carry; a path the tape cannot carry (an absolute one) is named on stderr, since the
/// tape then replays only where it is.
pub(crate) fn capture(
    eval: &EvalScenario,
    process_wasi: Option<&Path>,
) -> Result<Arc<simtape::tape::Inputs>, CliError> {
    let scenario = eval.scenario();
    let captured = scenario.capture_inputs(process_wasi).map_err(|error| {
        CliError::Input(format!(
            "{}: capturing the scenario's inputs: {error}",
            scenario.path().display()
        ))
    })?;
    for path in &captured.skipped {
        eprintln!(
            "note: {path} is an absolute path; the tape does not carry it, so its replay \
             needs that path"
        );
    }
    Ok(Arc::new(captured.inputs))
}

/// A tape's header, its footer's verdict and its inputs section (every file loaded), if it
/// has one.
pub(crate) struct TapeInputs {
    pub(crate) header: TapeHeader,
    pub(crate) section: Option<InputsSection>,
    /// The footer's verdict line.
    pub(crate) verdict: String,
}

/// Reads the header, the verdict and the inputs of the tape at `path`, in one pass (a tape
/// cut before its footer is the reader's truncation error).
pub(crate) fn read(path: &Path) -> Result<TapeInputs, CliError> {
    let tape_error = |error| CliError::Tape {
        path: Some(path.to_path_buf()),
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
pub(crate) struct Unpacked {
    pub(crate) scenario: PathBuf,
    pub(crate) process_wasi: Option<PathBuf>,
}

/// Writes the tape's scenario and inputs under `dir` (empty or absent). A tape without an
/// inputs section gives the scenario file alone.
pub(crate) fn unpack_into(tape: &TapeInputs, dir: &Path) -> Result<Unpacked, CliError> {
    let stamp = &tape.header.scenario;
    if simtape::tape::sha256_hex(stamp.source.as_bytes()) != stamp.digest {
        return Err(CliError::Input(
            "the scenario source embedded in the tape does not match its digest".into(),
        ));
    }
    let alone = simtape::tape::Inputs::new(&format!("{}.toml", stamp.name));
    let inputs = tape.section.as_ref().map_or(&alone, |s| &s.inputs);
    let scenario = unpack(inputs, &stamp.source, dir)
        .map_err(|error| CliError::Input(format!("{}: {error}", dir.display())))?;
    Ok(Unpacked {
        scenario,
        process_wasi: inputs.process_wasi().map(|path| dir.join(path)),
    })
}

/// Sets `builder` to write its tape to `out` as the tape `like` was written: the same blob
/// mode and threshold, and the same inputs section (its files where that tape keeps them), so
/// the same run gives the same bytes.
pub(crate) fn write_like(builder: &mut simtape::Builder, like: &TapeInputs, out: &Path) {
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
pub(crate) fn sandbox_of(header: &TapeHeader) -> Option<simtape_serve::sandbox::SandboxMode> {
    match header.sandbox.as_deref() {
        Some("off") => Some(simtape_serve::sandbox::SandboxMode::Off),
        _ => None,
    }
}
