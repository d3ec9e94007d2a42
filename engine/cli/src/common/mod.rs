//! What more than one command needs, so no command imports another: loading a scenario,
//! scratch and output files, printing a tape diff, and delivering a sweep report.
//!
//! - [`decisions`] — decisions files: a run's overrides in, the decisions it took out.
//! - [`files`] — scratch directories, output parents, reading a file.
//! - [`inputs`] — the files a tape carries: capturing a scenario's, unpacking a tape's.
//! - [`record`] — `--record-llm`: a run's model calls recorded from a real provider.
//! - [`render`] — printing a tape diff; delivering a sweep report and its summary.
//! - [`rerun`] — a tape's run again with given decisions, at its seed or another
//!   (`shrink`, `fork`).

pub(crate) mod decisions;
pub(crate) mod files;
pub(crate) mod inputs;
pub(crate) mod record;
pub(crate) mod render;
pub(crate) mod rerun;

use std::path::Path;

use simtape_agent::EvalScenario;
use simtape_eval::Verdict;

use crate::exit::{CliError, Outcome};

/// Loads the scenario at `path` with everything it references; with `process_wasi`, programs
/// without a mode run as WASI modules from that directory (`--process-wasi`). Programs in
/// `real` or `record` mode run through the gateway, in simtape's sandbox (the core starts
/// none); [`unconfined`] puts them on the host (`--no-sandbox`).
pub(crate) fn load_scenario(
    path: &Path,
    process_wasi: Option<&Path>,
) -> Result<EvalScenario, CliError> {
    let mut eval = EvalScenario::check_all_wasi(path, process_wasi)
        .map_err(|mut problems| CliError::Scenario(problems.swap_remove(0)))?;
    let spawner = simtape_serve::outside::ContainedSpawner {
        network: eval
            .scenario()
            .network()
            .cloned()
            .unwrap_or_else(simtape::cap::net::Network::deny),
        expose: Vec::new(),
    };
    eval.set_process_runner(std::sync::Arc::new(spawner));
    Ok(eval)
}

/// Puts `eval`'s `real` and `record` programs on the host, unconfined (`--no-sandbox`).
pub(crate) fn unconfined(eval: &mut EvalScenario) {
    eval.set_process_runner(std::sync::Arc::new(simtape_serve::outside::Spawner));
}

/// Runs `eval` once at `builder`, whichever its agent (an agent program runs through
/// `simtape-serve`); a program that cannot be found or started is an input error (exit 2).
pub(crate) fn run_eval(
    eval: &EvalScenario,
    builder: &mut simtape::Builder,
    agent_bin: Option<&Path>,
    evidence: Option<&Path>,
    sandbox: Option<simtape_serve::sandbox::SandboxMode>,
) -> Result<simtape_agent::EvalReport, CliError> {
    let options = simtape_serve::command::CommandOptions {
        program: agent_bin.map(Path::to_path_buf),
        evidence: evidence.map(Path::to_path_buf),
        sandbox,
        ..Default::default()
    };
    simtape_serve::command::run_eval(eval, builder, &options)
        .map_err(|error| CliError::Input(format!("{}: {error}", eval.scenario().path().display())))
}

/// Checks, before any run, that an agent-program scenario's program can be found, so a
/// sweep or ci run stops at once (exit 2) instead of failing every seed the same way.
pub(crate) fn require_agent_program(
    eval: &EvalScenario,
    agent_bin: Option<&Path>,
) -> Result<(), CliError> {
    let Some(spec) = &eval.eval().command else {
        return Ok(());
    };
    let dir = eval.scenario().path().parent().unwrap_or(Path::new(""));
    simtape_serve::command::resolve_program(spec, agent_bin, dir)
        .map(drop)
        .map_err(|error| CliError::Input(format!("{}: {error}", eval.scenario().path().display())))
}

/// Refuses a scenario whose `[process]` records real programs for `command`, which runs it
/// more than once or compares it (a sweep, ci, a replay): record with `simtape run`.
/// `shown` names the scenario (or the tape it came from) in the error.
pub(crate) fn refuse_recording(
    eval: &EvalScenario,
    command: &str,
    shown: &Path,
) -> Result<(), CliError> {
    if !eval.scenario().records_processes() {
        return Ok(());
    }
    Err(CliError::Input(format!(
        "{}: [process] puts a program in record mode (it runs for real and writes a process \
         tape): `simtape {command}` does not record; record once with `simtape run`, then \
         replay the process tape (mode \"replay\", tape = the file it wrote)",
        shown.display()
    )))
}

/// Returns how a run with `verdict` ends the command: pass is success, fail a finding, error
/// a run error, blocked its own ending.
pub(crate) fn verdict_outcome(verdict: &Verdict) -> Outcome {
    match verdict {
        Verdict::Pass => Outcome::Success,
        Verdict::Fail { .. } => Outcome::Finding,
        Verdict::Error { .. } => Outcome::RunError,
        Verdict::Blocked { .. } => Outcome::Blocked,
    }
}
