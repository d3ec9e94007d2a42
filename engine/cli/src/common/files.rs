//! Files the commands make and read besides their inputs: scratch directories for tapes that
//! are compared and dropped, the parents of output files.

use std::path::{Path, PathBuf};

use crate::exit::CliError;

/// Makes a fresh scratch directory for this process under the system temp directory.
pub(crate) fn scratch_dir(purpose: &str) -> Result<PathBuf, CliError> {
    let dir = std::env::temp_dir().join(format!("simtape-{purpose}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(CliError::io(&dir))?;
    Ok(dir)
}

/// Creates the parent directories of an output file, so `--tape out/x.tape` just works.
pub(crate) fn create_parent(path: &Path) -> Result<(), CliError> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => std::fs::create_dir_all(parent).map_err(CliError::io(parent)),
        None => Ok(()),
    }
}

/// Reads a whole input file of `kind` as text, within its size cap.
pub(crate) fn read_input_text(
    path: &Path,
    kind: simtape::limits::InputKind,
) -> Result<String, CliError> {
    Ok(simtape::input::read_input_text(path, kind)?)
}

/// Reads a whole file.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(CliError::io(path))
}
