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

/// Checks, before any run, that an output file can be written at `path`: its parent
/// directories are made, and the file opened for writing (and removed again when it was not
/// there), so a bad path is a usage error with its real reason, not work lost after a run.
pub(crate) fn check_output(path: &Path, flag: &str) -> Result<(), CliError> {
    let refuse = |why: String| CliError::Usage(format!("{flag} {}: {why}", path.display()));
    if path.is_dir() {
        return Err(refuse("is a directory; expected a file path".into()));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_output_dir(parent, path, flag)?;
    }
    if path.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(false)
            .open(path)
            .map_err(|e| refuse(format!("cannot be written: {e}")))?;
        return Ok(());
    }
    // Nothing is created at `path` itself: a process killed between a create and a remove
    // would leave an empty file there, where a tape is promised whole or a named prefix.
    // An unnamed file in its directory tests the same permissions and leaves nothing.
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => parent.to_path_buf(),
        None => PathBuf::from("."),
    };
    use std::os::unix::fs::OpenOptionsExt;
    let unnamed = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(&dir);
    match unnamed {
        Ok(_) => Ok(()),
        // A file system without unnamed files: a hidden sibling, removed at once.
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR)) => {
            let mut name = std::ffi::OsString::from(".");
            name.push(path.file_name().unwrap_or(path.as_os_str()));
            name.push(format!(".check-{}", std::process::id()));
            let probe = path.with_file_name(name);
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&probe)
                .map_err(|e| refuse(format!("cannot be written: {e}")))?;
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(refuse(format!("cannot be written: {e}"))),
    }
}

/// Creates the directory `dir` of the output `path` given to `flag` (`--out DIR` itself, or
/// a file's parent), saying when a file stands where a directory should be (mkdir's "File
/// exists" does not).
pub(crate) fn create_output_dir(dir: &Path, path: &Path, flag: &str) -> Result<(), CliError> {
    let refuse = |why: String| CliError::Usage(format!("{flag} {}: {why}", path.display()));
    if let Some(file) = dir
        .ancestors()
        .find(|ancestor| ancestor.exists())
        .filter(|ancestor| !ancestor.is_dir())
    {
        return Err(refuse(format!(
            "cannot be created: {} is a file, not a directory",
            file.display()
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| refuse(format!("cannot create {}: {e}", dir.display())))
}

/// Reads a whole input file of `kind` as text, within its size cap.
pub(crate) fn read_input_text(
    path: &Path,
    kind: simtape::limits::InputFile,
) -> Result<String, CliError> {
    Ok(simtape::input::read_input_text(path, kind)?)
}

/// Reads a whole file.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(CliError::io(path))
}
