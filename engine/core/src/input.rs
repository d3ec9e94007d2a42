//! Reading an input file whole, bounded: every file simtape holds in memory (scenarios,
//! fixtures, process tapes, WASI modules, cassettes, world specs and states, sweep reports)
//! comes through [`read_input`], which refuses devices and directories and stops at the kind's
//! cap ([`InputFile::bytes_max`]), so `/dev/zero` or a runaway file is an error, not an
//! out-of-memory kill.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::limits::{InputFile, INPUT_BYTES_MAX_SETTING};

/// An input file that cannot be read whole, and why. Fatal to the command that reads it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct InputError {
    /// The file.
    pub path: PathBuf,
    /// Why it cannot be read.
    pub problem: InputProblem,
}

/// Why an input file cannot be read whole (the message does not repeat the path).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputProblem {
    /// The file does not open or read.
    #[error(transparent)]
    Io(std::io::Error),
    /// A directory or device, not a file.
    #[error("the {} must be a file, not {what}", kind.name())]
    NotAFile {
        /// What was expected.
        kind: InputFile,
        /// What it is ("a directory", "a character device", …).
        what: &'static str,
    },
    /// Larger than the kind's cap.
    #[error(
        "larger than {cap} bytes, the cap on one {} (raise it with {INPUT_BYTES_MAX_SETTING}=BYTES)",
        kind.name()
    )]
    TooLarge {
        /// Its kind.
        kind: InputFile,
        /// The cap in force, in bytes.
        cap: u64,
    },
}

impl InputError {
    /// Returns the problem as an I/O error, for the error types that carry the path beside
    /// an `std::io::Error`.
    pub fn into_io(self) -> std::io::Error {
        match self.problem {
            InputProblem::Io(source) => source,
            other => std::io::Error::other(other.to_string()),
        }
    }
}

/// Reads the file at `path` whole, refusing a directory or a device and anything past the
/// cap of `kind`. A pipe (`<(…)`, `/dev/stdin`) is read up to the cap.
pub fn read_input(path: &Path, kind: InputFile) -> Result<Vec<u8>, InputError> {
    let fail = |problem| InputError {
        path: path.to_path_buf(),
        problem,
    };
    let io = |source| fail(InputProblem::Io(source));
    let file = std::fs::File::open(path).map_err(io)?;
    read_opened(&file, path, kind)
}

/// Reads the already opened `file` (at `path`) whole, as [`read_input`] does: for a file the
/// caller must hold open first (a journal it locks).
pub fn read_opened(
    mut file: &std::fs::File,
    path: &Path,
    kind: InputFile,
) -> Result<Vec<u8>, InputError> {
    let fail = |problem| InputError {
        path: path.to_path_buf(),
        problem,
    };
    let io = |source| fail(InputProblem::Io(source));
    let file_type = file.metadata().map_err(io)?.file_type();
    if let Some(what) = not_a_file(&file_type) {
        return Err(fail(InputProblem::NotAFile { kind, what }));
    }
    let cap = kind.bytes_max();
    let mut bytes = Vec::new();
    Read::by_ref(&mut file)
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(fail(InputProblem::TooLarge { kind, cap }));
    }
    Ok(bytes)
}

/// Reads the file at `path` whole as UTF-8 text, as [`read_input`] does; text that is not
/// UTF-8 is an I/O error of kind `InvalidData`, as `std::fs::read_to_string` gives.
pub fn read_input_text(path: &Path, kind: InputFile) -> Result<String, InputError> {
    let bytes = read_input(path, kind)?;
    String::from_utf8(bytes).map_err(|error| InputError {
        path: path.to_path_buf(),
        problem: InputProblem::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            error.utf8_error(),
        )),
    })
}

/// Names a file type that is not read as input: directories and devices.
fn not_a_file(file_type: &std::fs::FileType) -> Option<&'static str> {
    if file_type.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_directories_are_refused_by_name() {
        // Goal: /dev/zero is refused at once (no read), naming the path and the kind.
        let error = read_input(Path::new("/dev/zero"), InputFile::WorldSpec).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/dev/zero: the world spec must be a file, not a character device"
        );
        let error = read_input(Path::new("/"), InputFile::McpCassette).unwrap_err();
        assert!(matches!(
            error.problem,
            InputProblem::NotAFile {
                what: "a directory",
                ..
            }
        ));
    }

    #[test]
    fn a_file_past_its_cap_names_the_cap_and_the_setting() {
        // Goal: one byte past the scenario cap is refused with the cap and the variable that
        // raises it; a file at the cap reads.
        let dir = crate::testing::unit_test_dir("input");
        std::fs::create_dir_all(&dir).unwrap();
        let cap = InputFile::Scenario.default_bytes_max();
        let path = dir.join("big.toml");
        std::fs::write(&path, vec![b'#'; cap as usize + 1]).unwrap();
        let error = read_input(&path, InputFile::Scenario).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: larger than 4194304 bytes, the cap on one scenario file (raise it with SIMTAPE_INPUT_BYTES_MAX=BYTES)",
                path.display()
            )
        );
        std::fs::write(&path, vec![b'#'; cap as usize]).unwrap();
        assert_eq!(
            read_input(&path, InputFile::Scenario).unwrap().len() as u64,
            cap
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
