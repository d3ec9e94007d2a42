//! Record mode's writer: appends one process tape entry per real invocation. The gateway's
//! side of the [`ProcessRecorder`] seam: the core writes no process tape itself.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use simtape::cap::process::tape::header_line;
use simtape::cap::process::{ProcessRecorder, ProcessTapeError, TapeEntry};

/// The process tape being written. Clones share the file, so every run built from one
/// builder appends to it. Give it to a builder with `Builder::process_record_to`.
#[derive(Debug, Clone)]
pub struct ProcessTapeWriter {
    inner: Arc<Mutex<WriterState>>,
}

#[derive(Debug)]
struct WriterState {
    path: PathBuf,
    file: std::fs::File,
}

impl ProcessTapeWriter {
    /// Creates (or truncates) the file and writes the header; returns it ready for
    /// `Builder::process_record_to`.
    pub fn create(path: &Path) -> Result<Arc<ProcessTapeWriter>, ProcessTapeError> {
        let file = std::fs::File::create(path).map_err(|e| io_error(path, &e))?;
        let mut state = WriterState {
            path: path.to_path_buf(),
            file,
        };
        state.append(&header_line())?;
        Ok(Arc::new(ProcessTapeWriter {
            inner: Arc::new(Mutex::new(state)),
        }))
    }
}

impl ProcessRecorder for ProcessTapeWriter {
    fn append(&self, entry: &TapeEntry) -> Result<(), ProcessTapeError> {
        let line = serde_json::to_string(entry).expect("a tape entry always encodes as JSON");
        match self.inner.lock() {
            Ok(mut state) => state.append(&line),
            // A poisoned lock means a run panicked between whole lines: go on appending.
            Err(poisoned) => poisoned.into_inner().append(&line),
        }
    }
}

impl WriterState {
    fn append(&mut self, line: &str) -> Result<(), ProcessTapeError> {
        // One write per line, flushed at once, so a crash leaves whole entries behind.
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| io_error(&self.path, &e))
    }
}

fn io_error(path: &Path, error: &std::io::Error) -> ProcessTapeError {
    ProcessTapeError::Io {
        path: path.display().to_string(),
        detail: error.to_string(),
    }
}
