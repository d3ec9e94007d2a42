//! The process tape: a JSON Lines file of recorded invocations, written by record mode and
//! read by replay mode (the format is documented in `docs/process.md`).
//!
//! Line 1 is the header `{"simtape_process": 1}`; every later line is one [`TapeEntry`].
//! Blank lines and lines starting with `#` are comments. JSON Lines, not one JSON array, so a
//! recording that crashes leaves whole entries behind and a diff of two tapes is line by line.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::tape::{hex_encode, sha256_hex};

/// The process tape format version, in the header line.
pub(crate) const PROCESS_TAPE_VERSION: u64 = 1;

/// Why a process tape cannot be read or written. Fatal for the run that needs it: fix the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProcessTapeError {
    /// The file cannot be opened, read or written.
    #[error("{path}: {detail}")]
    Io {
        /// The process tape file.
        path: String,
        /// The OS error.
        detail: String,
    },
    /// A line is not what the format promises.
    #[error("{path}:{line}: expected {expected}, found {found}")]
    Malformed {
        /// The process tape file.
        path: String,
        /// The 1-based line number.
        line: u64,
        /// What the format allows there.
        expected: String,
        /// What the line holds.
        found: String,
    },
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ExitStatus {
    /// It exited with this code (`{"code": 0}`).
    Code(i32),
    /// A signal ended it (`{"signal": 15}`).
    Signal(i32),
}

impl ExitStatus {
    /// Returns whether the process exited with code 0.
    pub fn success(self) -> bool {
        self == ExitStatus::Code(0)
    }
}

/// Captured bytes: a JSON string when they are UTF-8, `{"hex": "…"}` otherwise, so binary
/// output survives the round trip unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured(pub Vec<u8>);

#[derive(Deserialize)]
#[serde(untagged)]
enum CapturedForm {
    Text(String),
    Hex { hex: String },
}

impl Serialize for Captured {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => {
                let mut map = BTreeMap::new();
                map.insert("hex", hex_encode(&self.0));
                map.serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Captured {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match CapturedForm::deserialize(deserializer)? {
            CapturedForm::Text(text) => Ok(Captured(text.into_bytes())),
            CapturedForm::Hex { hex } => hex_decode(&hex).map(Captured).ok_or_else(|| {
                serde::de::Error::custom(format!("expected lower-case hex, found {hex:?}"))
            }),
        }
    }
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn empty_stdin_sha256() -> String {
    sha256_hex(b"")
}

/// One recorded invocation: the key replay matches on, then what the process did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapeEntry {
    /// The program, as the pipeline named it (`git`, `/usr/bin/env`).
    pub program: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// The working directory; `null` matches any.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The environment variables the pipeline passed (not the inherited environment).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// SHA-256 of the bytes given on stdin (default: of no bytes).
    #[serde(default = "empty_stdin_sha256")]
    pub stdin_sha256: String,
    /// Standard output as kept (at most the output cap).
    #[serde(default)]
    pub stdout: Captured,
    /// Standard error as kept.
    #[serde(default)]
    pub stderr: Captured,
    /// Bytes of stdout dropped by the output cap.
    #[serde(default)]
    pub stdout_dropped_bytes: u64,
    /// Bytes of stderr dropped by the output cap.
    #[serde(default)]
    pub stderr_dropped_bytes: u64,
    /// How it ended.
    pub status: ExitStatus,
    /// Whether the timeout ended it.
    #[serde(default)]
    pub timed_out: bool,
    /// The observed wall-clock duration; replay turns it into virtual latency.
    pub duration_ns: u64,
}

/// A loaded process tape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessTape {
    /// The file name (or a label) used in error messages.
    pub path: String,
    /// The entries with their 1-based line numbers, in file order.
    pub entries: Vec<(u64, TapeEntry)>,
}

impl ProcessTape {
    /// Reads and checks the process tape at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<ProcessTape, ProcessTapeError> {
        let path = path.as_ref();
        let text = crate::input::read_input_text(path, crate::limits::InputFile::ProcessTape)
            .map_err(|e| ProcessTapeError::Io {
                path: path.display().to_string(),
                detail: e.problem.to_string(),
            })?;
        ProcessTape::parse(&path.display().to_string(), &text)
    }

    /// Parses process tape text; `path` labels the errors.
    pub fn parse(path: &str, text: &str) -> Result<ProcessTape, ProcessTapeError> {
        let malformed = |line: u64, expected: &str, found: String| ProcessTapeError::Malformed {
            path: path.to_owned(),
            line,
            expected: expected.to_owned(),
            found,
        };
        let mut header_seen = false;
        let mut entries = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index as u64 + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if !header_seen {
                check_header(trimmed).map_err(|found| {
                    let expected =
                        format!("the header {{\"simtape_process\": {PROCESS_TAPE_VERSION}}}");
                    malformed(line, &expected, found.to_string())
                })?;
                header_seen = true;
                continue;
            }
            let entry: TapeEntry = serde_json::from_str(trimmed)
                .map_err(|e| malformed(line, "a process tape entry", e.to_string()))?;
            entries.push((line, entry));
        }
        if !header_seen {
            let expected = format!("the header {{\"simtape_process\": {PROCESS_TAPE_VERSION}}}");
            return Err(malformed(1, &expected, "an empty file".to_owned()));
        }
        Ok(ProcessTape {
            path: path.to_owned(),
            entries,
        })
    }
}

/// What a process tape's first line holds instead of the header. Fatal to loading the tape.
#[derive(Debug, thiserror::Error)]
enum HeaderMismatch {
    /// The line is not JSON.
    #[error("invalid JSON ({0})")]
    Json(serde_json::Error),
    /// The header names another version.
    #[error("version {0}")]
    Version(u64),
    /// Something else: its first 80 characters.
    #[error("{0}")]
    Other(String),
}

/// Checks the header line; on failure returns what was found instead.
fn check_header(line: &str) -> Result<(), HeaderMismatch> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(HeaderMismatch::Json)?;
    match value
        .get("simtape_process")
        .and_then(serde_json::Value::as_u64)
    {
        Some(PROCESS_TAPE_VERSION) => Ok(()),
        Some(other) => Err(HeaderMismatch::Version(other)),
        None => Err(HeaderMismatch::Other(line.chars().take(80).collect())),
    }
}

/// Returns the header line of a new process tape (without the newline).
pub fn header_line() -> String {
    format!("{{\"simtape_process\": {PROCESS_TAPE_VERSION}}}")
}

#[cfg(test)]
mod tests {
    use super::{Captured, ProcessTape};

    #[test]
    fn binary_output_round_trips_as_hex() {
        // Goal: output that is not UTF-8 is written as hex and read back unchanged.
        let bytes = Captured(vec![0xff, 0x00, b'a']);
        let json = serde_json::to_string(&bytes).unwrap();
        assert_eq!(json, r#"{"hex":"ff0061"}"#);
        assert_eq!(serde_json::from_str::<Captured>(&json).unwrap(), bytes);
        assert!(serde_json::from_str::<Captured>(r#"{"hex":"f"}"#).is_err());
    }

    #[test]
    fn empty_tape_is_malformed() {
        // Goal: a file without a header is an error, not an empty tape.
        let error = ProcessTape::parse("e", "# only a comment\n").unwrap_err();
        assert!(error.to_string().contains("found an empty file"), "{error}");
    }
}
