//! `simtape fixtures from-tape`: a run's model calls as a replayable LLM fixture.

use std::path::Path;

use simtape::cap::llm::fixture_from_tape;
use simtape::tape::TapeReader;

use crate::args::{FixturesArgs, FixturesCommand};
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
    let reader = TapeReader::open(tape).map_err(tape_error)?.keep_blobs(true);
    let fixture =
        fixture_from_tape(reader, &tape.display().to_string()).map_err(|error| match error {
            simtape::cap::llm::FromTapeError::Tape(error) => tape_error(error),
            other => CliError::Input(format!("{}: {other}", tape.display())),
        })?;
    std::fs::create_dir_all(dir).map_err(CliError::io(dir))?;
    let path = dir.join("llm.jsonl");
    std::fs::write(&path, &fixture.text).map_err(CliError::io(&path))?;
    println!(
        "wrote {} ({} entr(ies); {} call(s) no fixture entry answered, left out: injected \
         faults come from the scenario's [[faults.llm]] again)",
        path.display(),
        fixture.entries,
        fixture.skipped
    );
    // Process output is on a tape only as sizes and SHA-256 digests, so no process tape can
    // be made from one: a scenario records its programs with `[process]` mode "record".
    println!(
        "process calls: not written (a tape keeps only digests of program output; record them \
         with [process] mode = \"record\")"
    );
    Ok(Outcome::Success)
}
