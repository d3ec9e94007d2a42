//! A process tape from a tape: the program runs of any run, as entries that answer the same
//! commands the same way (`simtape fixtures from-tape`).
//!
//! A `run` call's records hold the command whole but its output only as sizes and SHA-256
//! digests (`docs/process.md`), so the bytes come from elsewhere: from process tapes the run
//! read (a self-contained tape carries them in its inputs section), found by digest. An
//! output of zero bytes needs no source. A run whose output is in none of them (a program
//! that ran for real, a WASI guest that printed) is left out and counted: record it with
//! `[process]` mode `record` instead. Failed calls (not covered, a replay divergence) are
//! left out too: there was no run to answer with.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::Value;

use super::tape::{header_line, Captured, ExitStatus, ProcessTape, TapeEntry};
use crate::tape::{each_call, sha256_hex, CallShape, FromTapeError, TapeCall, TapeReader};

/// The process tape made from a tape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TapeProcessTape {
    /// The process tape file's text (JSONL, `docs/process.md`).
    pub text: String,
    /// The entries written: one per run whose output was known.
    pub entries: usize,
    /// The runs left out because no process tape given held their output.
    pub unknown_output: usize,
    /// The calls left out because they failed (no run answered them).
    pub failed: usize,
}

/// Reads the program runs of the tape `reader` reads (the actor named `process`) into a
/// process tape, taking their output bytes from `known` by SHA-256; `origin` names the tape
/// in the first comment line.
pub fn process_tape_from_tape<R: Read>(
    mut reader: TapeReader<R>,
    origin: &str,
    known: &[ProcessTape],
) -> Result<TapeProcessTape, FromTapeError> {
    let mut outputs: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (_, entry) in known.iter().flat_map(|tape| &tape.entries) {
        for bytes in [&entry.stdout.0, &entry.stderr.0] {
            outputs.insert(sha256_hex(bytes), bytes.clone());
        }
    }
    let seed = reader.header().seed;
    let mut lines = vec![
        format!("# Made by `simtape fixtures from-tape` from {origin} (seed {seed})."),
        header_line(),
    ];
    let mut made = TapeProcessTape {
        text: String::new(),
        entries: 0,
        unknown_output: 0,
        failed: 0,
    };
    each_call(
        &mut reader,
        |name| name == crate::capabilities::PROCESS_ACTOR,
        |call| {
            match entry(&call, &outputs)? {
                Made::Entry(entry) => {
                    let line = serde_json::to_string(&entry).expect("an entry serializes");
                    lines.push(line);
                    made.entries += 1;
                }
                Made::UnknownOutput => made.unknown_output += 1,
                Made::Failed => made.failed += 1,
            }
            Ok(())
        },
    )?;
    made.text = lines.join("\n") + "\n";
    Ok(made)
}

/// What one call gives.
enum Made {
    Entry(Box<TapeEntry>),
    UnknownOutput,
    Failed,
}

/// Returns the entry of a call: request `{"Run": [program, args, cwd, env, stdin_size,
/// stdin_sha256]}`, reply `{"Ok": {"Ran": [status, stdout_size, stdout_sha256, stderr_size,
/// stderr_sha256, duration_ns, [stdout_dropped, stderr_dropped], timed_out, …]}}`.
fn entry(call: &TapeCall, outputs: &BTreeMap<String, Vec<u8>>) -> Result<Made, CallShape> {
    let Some(ran) = call.reply.get("Ok").and_then(|ok| ok.get("Ran")) else {
        return Ok(Made::Failed);
    };
    let run = call
        .request
        .get("Run")
        .ok_or_else(|| CallShape::missing("`Run` of the process request"))?;
    let output = |size: usize, digest: usize, what: &str| -> Result<Option<Captured>, CallShape> {
        let size: u64 = take(ran, size, what)?;
        let digest: String = take(ran, digest, what)?;
        if size == 0 {
            return Ok(Some(Captured::default()));
        }
        Ok(outputs.get(&digest).cloned().map(Captured))
    };
    let (Some(stdout), Some(stderr)) = (output(1, 2, "stdout")?, output(3, 4, "stderr")?) else {
        return Ok(Made::UnknownOutput);
    };
    let (stdout_dropped_bytes, stderr_dropped_bytes) = take(ran, 6, "dropped bytes")?;
    Ok(Made::Entry(Box::new(TapeEntry {
        program: take(run, 0, "program")?,
        args: take(run, 1, "args")?,
        cwd: take(run, 2, "cwd")?,
        env: take(run, 3, "env")?,
        stdin_sha256: take(run, 5, "stdin digest")?,
        stdout,
        stderr,
        stdout_dropped_bytes,
        stderr_dropped_bytes,
        status: take::<ExitStatus>(ran, 0, "status")?,
        timed_out: take(ran, 7, "timed_out")?,
        duration_ns: take(ran, 5, "duration")?,
    })))
}

/// Decodes field `index` of a record body's array.
fn take<T: serde::de::DeserializeOwned>(
    value: &Value,
    index: usize,
    what: &str,
) -> Result<T, CallShape> {
    let field = value
        .get(index)
        .cloned()
        .ok_or_else(|| CallShape::missing(format!("{what} (field {index})")))?;
    serde_json::from_value(field).map_err(|e| CallShape::invalid(what, e))
}
