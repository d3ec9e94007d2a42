//! Replay: answers each invocation from a process tape, starting no process.
//!
//! A call takes the **first unused entry** whose key (program, args, cwd, stdin digest)
//! matches; an entry's `cwd: null` matches any cwd. Identical calls therefore use identical
//! entries in recording order, and calls that merely moved relative to each other still
//! match. When nothing matches, the call is compared with the first unused entry and the
//! first differing field is reported.

use std::sync::Arc;

use super::tape::{ProcessTape, TapeEntry};
use super::{Command, ProcessError};
use crate::tape::sha256_hex;

/// The replay state: the tape (shared between clones of a builder) and which entries are used.
#[derive(Debug, Clone)]
pub(super) struct Replayer {
    tape: Arc<ProcessTape>,
    used: Vec<bool>,
    calls: u64,
}

/// An entry of the tape no call used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnusedEntry {
    /// Its line in the process tape.
    pub line: u64,
    /// Its program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

impl Replayer {
    pub(super) fn new(tape: ProcessTape) -> Replayer {
        Replayer {
            used: vec![false; tape.entries.len()],
            tape: Arc::new(tape),
            calls: 0,
        }
    }

    /// Returns the entry that answers `command`, marking it used.
    pub(super) fn answer(&mut self, command: &Command) -> Result<&TapeEntry, ProcessError> {
        self.calls += 1;
        let stdin_sha256 = sha256_hex(&command.stdin);
        let unused = |index: &usize| !self.used[*index];
        let mut candidates = (0..self.tape.entries.len()).filter(unused);
        let Some(first_unused) = candidates.clone().next() else {
            return Err(ProcessError::Exhausted {
                call: self.calls,
                program: command.program.clone(),
                args: command.args.clone(),
            });
        };
        let matching = candidates.find(|index| {
            first_difference(&self.tape.entries[*index].1, command, &stdin_sha256).is_none()
        });
        match matching {
            Some(index) => {
                self.used[index] = true;
                Ok(&self.tape.entries[index].1)
            }
            None => {
                let (line, entry) = &self.tape.entries[first_unused];
                let (field, expected, found) = first_difference(entry, command, &stdin_sha256)
                    .expect("a non-matching entry has a differing field");
                Err(ProcessError::Diverged {
                    call: self.calls,
                    program: command.program.clone(),
                    line: *line,
                    field: field.to_owned(),
                    expected,
                    found,
                })
            }
        }
    }

    /// Returns the entries no call used, in tape order.
    pub(super) fn unused_entries(&self) -> Vec<UnusedEntry> {
        self.tape
            .entries
            .iter()
            .zip(&self.used)
            .filter(|(_, used)| !**used)
            .map(|((line, entry), _)| UnusedEntry {
                line: *line,
                program: entry.program.clone(),
                args: entry.args.clone(),
            })
            .collect()
    }
}

/// Returns the first key field where `entry` and the call differ: (field, expected, found),
/// values as JSON.
fn first_difference(
    entry: &TapeEntry,
    command: &Command,
    stdin_sha256: &str,
) -> Option<(&'static str, String, String)> {
    if entry.program != command.program {
        return Some(("program", json(&entry.program), json(&command.program)));
    }
    if entry.args != command.args {
        return Some(("args", json(&entry.args), json(&command.args)));
    }
    if entry.cwd.is_some() && entry.cwd != command.cwd {
        return Some(("cwd", json(&entry.cwd), json(&command.cwd)));
    }
    if entry.stdin_sha256 != stdin_sha256 {
        return Some((
            "stdin_sha256",
            json(&entry.stdin_sha256),
            json(&stdin_sha256),
        ));
    }
    None
}

/// Renders a key value as JSON for an error message.
fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("<{e}>"))
}
