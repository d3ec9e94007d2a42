//! `simtape fixtures from-tape`: a run's calls as replayable inputs: an LLM fixture of its
//! model calls, a process tape of its program runs, a cassette per MCP server.

use std::path::Path;

use simtape::cap::llm::fixture_from_tape;
use simtape::cap::process::{process_tape_from_tape, ProcessTape};
use simtape::capabilities::{LLM_ACTOR, PROCESS_ACTOR};
use simtape::tape::{FromTapeError, TapeReader};
use simtape_mcp::from_tape::cassettes_from_tape;

use crate::args::{FixturesArgs, FixturesCommand};
use crate::common::inputs;
use crate::exit::{CliError, CliResult, Outcome};

pub(crate) fn run(args: &FixturesArgs) -> CliResult {
    match &args.command {
        FixturesCommand::FromTape { tape, dir } => from_tape(tape, dir),
    }
}

fn from_tape(tape: &Path, dir: &Path) -> CliResult {
    let tape_error = |error| CliError::Tape {
        path: Some(tape.to_path_buf()),
        error,
    };
    let call_error = |error| match error {
        FromTapeError::Tape(error) => tape_error(error),
        other => CliError::Input(format!("{}: {other}", tape.display())),
    };
    let reader = || {
        TapeReader::open(tape)
            .map(|reader| reader.keep_blobs(true))
            .map_err(tape_error)
    };
    let origin = tape.display().to_string();
    let actors = reader()?.header().actors.clone();
    std::fs::create_dir_all(dir).map_err(CliError::io(dir))?;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(CliError::io(&path))?;
        Ok::<_, CliError>(path)
    };
    if actors.iter().any(|actor| actor == LLM_ACTOR) {
        let fixture = fixture_from_tape(reader()?, &origin).map_err(call_error)?;
        let path = write("llm.jsonl", &fixture.text)?;
        println!(
            "wrote {} ({} entr(ies); {} call(s) no fixture entry answered, left out: injected \
             faults come from the scenario's [[faults.llm]] again)",
            path.display(),
            fixture.entries,
            fixture.skipped
        );
    }
    if actors.iter().any(|actor| actor == PROCESS_ACTOR) {
        let known = process_tapes(tape)?;
        let made = process_tape_from_tape(reader()?, &origin, &known).map_err(call_error)?;
        let path = write("process.jsonl", &made.text)?;
        println!(
            "wrote {} ({} entr(ies); {} run(s) whose output the tape's inputs do not hold, \
             left out: record those with [process] mode \"record\"; {} failed call(s) left out)",
            path.display(),
            made.entries,
            made.unknown_output,
            made.failed
        );
    }
    for server in cassettes_from_tape(reader()?, &origin).map_err(call_error)? {
        let path = dir.join(format!("mcp-{}.cassette.json", server.server));
        simtape_serve::mcp_stdio::files::save_cassette(&server.cassette, &path)
            .map_err(|error| CliError::Input(error.to_string()))?;
        println!(
            "wrote {} ({} exchange(s) for [[mcp]] {:?}; {} call(s) with nothing to replay left \
             out)",
            path.display(),
            server.exchanges,
            server.server,
            server.skipped
        );
    }
    Ok(Outcome::Success)
}

/// Returns the process tapes among the files the tape carries (its inputs section): the
/// recorded output its program runs answered with, found again by digest.
fn process_tapes(tape: &Path) -> Result<Vec<ProcessTape>, CliError> {
    let Some(mut section) = inputs::read(tape)?.section else {
        return Ok(Vec::new());
    };
    let tape_dir = tape.parent().unwrap_or(Path::new(""));
    section
        .load_files(tape_dir)
        .map_err(|error| CliError::Tape {
            path: Some(tape.to_path_buf()),
            error,
        })?;
    let mut found = Vec::new();
    for entry in section.inputs.entries() {
        let simtape::tape::InputEntry::File { path, sha256, .. } = entry else {
            continue;
        };
        let text = section
            .inputs
            .blob(sha256)
            .and_then(|bytes| std::str::from_utf8(bytes).ok());
        // Only a file that parses as a process tape is one; any other input is skipped.
        if let Some(parsed) = text
            .filter(|text| text.contains("\"simtape_process\""))
            .and_then(|text| ProcessTape::parse(path, text).ok())
        {
            found.push(parsed);
        }
    }
    Ok(found)
}
