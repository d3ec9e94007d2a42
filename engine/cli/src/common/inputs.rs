//! A tape's inputs for the commands: capturing a loaded scenario's files for the tapes a
//! command writes (the notes on what a tape cannot carry are rendered here); reading and
//! unpacking a tape's inputs are the gateway's (`simtape_serve::rerun::tape_inputs`).

use std::path::Path;
use std::sync::Arc;

use simtape_agent::EvalScenario;
pub(crate) use simtape_serve::rerun::tape_inputs::{
    read, sandbox_of, unpack_into, write_like, TapeInputs, Unpacked,
};

use crate::exit::CliError;

/// Reads every file `eval` reads (and the `--process-wasi` modules) into the inputs its
/// tapes carry; a path the tape cannot carry (an absolute one) is named on stderr, since the
/// tape then replays only where it is.
pub(crate) fn capture(
    eval: &EvalScenario,
    process_wasi: Option<&Path>,
) -> Result<Arc<simtape::tape::Inputs>, CliError> {
    let scenario = eval.scenario();
    let captured = scenario.capture_inputs(process_wasi).map_err(|error| {
        CliError::Input(format!(
            "{}: capturing the scenario's inputs: {error}",
            scenario.path().display()
        ))
    })?;
    for path in &captured.skipped {
        eprintln!(
            "note: {path} is an absolute path; the tape does not carry it, so its replay \
             needs that path"
        );
    }
    Ok(Arc::new(captured.inputs))
}
