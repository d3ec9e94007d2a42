//! Golden tapes: where `simtape ci` keeps the tape of each (scenario, seed), and the bytes a
//! run writes there.

use std::path::{Path, PathBuf};

use simtape_agent::EvalScenario;
use simtape_eval::property::PropertyResult;

use crate::exit::CliError;

/// Returns where the golden tape of `(scenario, seed)` lives.
pub(crate) fn golden_path(tapes_dir: &Path, scenario: &str, seed: u64) -> PathBuf {
    tapes_dir.join(scenario).join(format!("seed-{seed}.tape"))
}

/// Runs `eval` at `seed` into a tape in memory; returns its bytes and the run's properties.
pub(crate) fn tape_bytes(
    eval: &EvalScenario,
    seed: u64,
) -> Result<(Vec<u8>, Vec<PropertyResult>), CliError> {
    let mut builder = eval.builder(seed);
    builder.tape_in_memory();
    // Every verdict is behaviour the golden tape pins, an expected FAIL or ERROR included.
    let report = super::run_eval(eval, &mut builder, None, None, None)?;
    let bytes = report
        .run
        .summary
        .tape
        .and_then(|t| t.memory)
        .ok_or_else(|| {
            CliError::Input(format!(
                "{} seed {seed}: the run produced no tape",
                eval.scenario().name()
            ))
        })?;
    Ok((bytes, report.properties))
}
