//! Journals: a long-lived command appends what it will owe (each recorded message, each world
//! call) to a JSONL file next to its output as it passes, one `write` per line, so a process
//! killed without warning (SIGKILL, the OOM killer) leaves enough to rebuild the output. The
//! clean shutdown builds the output from the journal too, then deletes it: one path, always
//! exercised.
//!
//! The first line is a header `{"format": "simtape-mcp-journal", "version": 1, "kind": …}`
//! with what the rebuild needs; each later line is one entry. The writing process holds an
//! exclusive advisory lock on the file, which the kernel drops when the process dies however
//! it dies: an unlocked journal was left by a dead process, a locked one belongs to a live one.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use simtape_mcp::error::McpError;

/// The `format` of a journal's header line.
pub const FORMAT: &str = "simtape-mcp-journal";
/// The journal version this build reads and writes.
pub const VERSION: u64 = 1;
/// What a journal's name adds to its output's name.
pub const SUFFIX: &str = ".journal.jsonl";

/// Returns the journal path of an output file: `out.json` → `out.json.journal.jsonl`.
pub fn path_for(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(SUFFIX);
    PathBuf::from(name)
}

/// A journal being written; the lock is held until it is dropped or removed.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
}

impl Journal {
    /// Creates the journal at `path` and writes its header: `fields` (an object) plus the
    /// format, version and `kind`. A journal already there is refused: the caller recovers a
    /// left one first ([`is_left`]).
    pub fn create(path: &Path, kind: &str, fields: Value) -> Result<Journal, McpError> {
        let io = |source| McpError::Output {
            path: path.into(),
            source,
        };
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io)?;
        lock(&file, path)?;
        let mut header = json!({"format": FORMAT, "version": VERSION, "kind": kind});
        if let (Some(header), Value::Object(fields)) = (header.as_object_mut(), fields) {
            header.extend(fields);
        }
        let mut journal = Journal {
            file,
            path: path.into(),
        };
        journal.append(&header)?;
        Ok(journal)
    }

    /// Appends one entry as one line, in one `write` (so a kill leaves at most the last line
    /// cut short). The file is unbuffered: once this returns, the line survives the process.
    pub fn append(&mut self, entry: &Value) -> Result<(), McpError> {
        let mut line = serde_json::to_vec(entry).expect("a Value always serializes");
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|source| McpError::Output {
                path: self.path.clone(),
                source,
            })
    }

    /// Returns the journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the journal (dropping its lock) and returns its path, to be read back with
    /// [`read`] and deleted with [`remove`] once the output is written.
    pub fn close(self) -> PathBuf {
        self.path
    }
}

/// Deletes a journal whose output is safely written.
pub fn remove(path: &Path) -> Result<(), McpError> {
    std::fs::remove_file(path).map_err(|source| McpError::Output {
        path: path.into(),
        source,
    })
}

fn lock(file: &File, path: &Path) -> Result<(), McpError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(McpError::JournalBusy { path: path.into() }),
        Err(TryLockError::Error(source)) => Err(McpError::Output {
            path: path.into(),
            source,
        }),
    }
}

/// Returns whether a journal was left at `path` by a process that is gone; a journal that a
/// running process holds is [`McpError::JournalBusy`].
pub fn is_left(path: &Path) -> Result<bool, McpError> {
    match File::open(path) {
        Ok(file) => lock(&file, path).map(|()| true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(McpError::Output {
            path: path.into(),
            source,
        }),
    }
}

/// What a journal holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Contents {
    /// The header line (an object).
    pub header: Value,
    /// Every complete entry, in order.
    pub entries: Vec<Value>,
    /// Lines that were skipped, each described (a kill mid-write leaves a cut last line).
    pub skipped: Vec<String>,
}

/// Reads a journal of `kind` that no running process holds.
pub fn read(path: &Path, kind: &str) -> Result<Contents, McpError> {
    let io = |source| McpError::Output {
        path: path.into(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    lock(&file, path)?;
    let bytes = simtape::input::read_opened(&file, path, simtape::limits::InputFile::McpJournal)
        .map_err(|error| io(error.into_io()))?;
    let invalid = |reason: String| McpError::JournalInvalid {
        path: path.into(),
        reason,
    };
    let mut lines = bytes.split_inclusive(|&b| b == b'\n');
    let header: Value = lines
        .next()
        .and_then(|line| serde_json::from_slice(line).ok())
        .ok_or_else(|| invalid("no header line".into()))?;
    if header["format"] != FORMAT || header["version"] != VERSION {
        return Err(invalid(format!(
            "the header is not a {FORMAT} version {VERSION} header"
        )));
    }
    if header["kind"] != kind {
        return Err(invalid(format!(
            "a journal of kind {}, expected {kind:?}",
            header["kind"]
        )));
    }
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    for (index, line) in lines.enumerate() {
        let number = index + 2;
        match serde_json::from_slice::<Value>(line) {
            Ok(entry) if line.ends_with(b"\n") => entries.push(entry),
            _ if !line.ends_with(b"\n") => skipped.push(format!(
                "line {number}: cut short ({} bytes, no newline): the process died writing it",
                line.len()
            )),
            _ => skipped.push(format!("line {number}: not JSON")),
        }
    }
    Ok(Contents {
        header,
        entries,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_last_line_is_skipped_and_reported() {
        // Goal: every complete line is read back; a half-written one is named, not fatal.
        let dir = crate::mcp_stdio::files::test_dir("journal");
        let path = path_for(&dir.join("out.json"));
        let mut journal = Journal::create(&path, "test", json!({"extra": 1})).unwrap();
        assert!(matches!(is_left(&path), Err(McpError::JournalBusy { .. })));
        assert!(Journal::create(&path, "test", json!({})).is_err());
        journal.append(&json!({"n": 1})).unwrap();
        drop(journal);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"n": 2"#).unwrap();
        assert!(is_left(&path).unwrap());
        let contents = read(&path, "test").unwrap();
        assert_eq!(contents.header["extra"], 1);
        assert_eq!(contents.entries, vec![json!({"n": 1})]);
        assert_eq!(contents.skipped.len(), 1, "{:?}", contents.skipped);
        assert!(contents.skipped[0].starts_with("line 3: cut short"));
        assert!(read(&path, "other").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
