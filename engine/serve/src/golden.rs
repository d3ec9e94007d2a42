//! Golden tapes (`simtape ci`, `simtape new`): where the tape of each (scenario, seed) is
//! kept, the bytes a run writes there, and a run's tape checked against it (`--bless`
//! rewrites it, whole or not at all).

use std::path::{Path, PathBuf};

use simtape::oracle::{diff_bytes, Mode};
use simtape_agent::EvalScenario;
use simtape_eval::property::PropertyResult;

use crate::command::{run_eval, CommandOptions};
use crate::ServeError;

/// Why a golden tape could not be made or checked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GoldenError {
    /// The run could not start (its agent program cannot be found or started).
    #[error("{}: {error}", scenario.display())]
    Run {
        /// The scenario.
        scenario: PathBuf,
        /// Why.
        error: ServeError,
    },
    /// The run wrote no tape.
    #[error("{scenario} seed {seed}: the run produced no tape")]
    NoTape {
        /// The scenario's name.
        scenario: String,
        /// The seed.
        seed: u64,
    },
    /// A golden tape that cannot be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The golden tape.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What a run's tape is to its golden tape.
#[derive(Debug, PartialEq, Eq)]
pub enum GoldenCheck {
    /// The same bytes.
    Match,
    /// Written (`--bless`).
    Blessed,
    /// There is no golden tape.
    Missing,
    /// Other bytes: the oracle's report of where they part.
    Differs(String),
}

/// Returns where the golden tape of `(scenario, seed)` lives.
pub fn golden_path(tapes_dir: &Path, scenario: &str, seed: u64) -> PathBuf {
    tapes_dir.join(scenario).join(format!("seed-{seed}.tape"))
}

/// Runs `eval` at `seed` into a tape in memory; returns its bytes and the run's properties.
pub fn tape_bytes(
    eval: &EvalScenario,
    seed: u64,
) -> Result<(Vec<u8>, Vec<PropertyResult>), GoldenError> {
    let mut builder = eval.builder(seed);
    builder.tape_in_memory();
    // Every verdict is behaviour the golden tape pins, an expected FAIL or ERROR included.
    let report = run_eval(eval, &mut builder, &CommandOptions::default()).map_err(|error| {
        GoldenError::Run {
            scenario: eval.scenario().path().to_path_buf(),
            error,
        }
    })?;
    let bytes = report
        .run
        .summary
        .tape
        .and_then(|t| t.memory)
        .ok_or_else(|| GoldenError::NoTape {
            scenario: eval.scenario().name().to_string(),
            seed,
        })?;
    Ok((bytes, report.properties))
}

/// Checks `tape` against the golden tape at `golden`; with `bless`, a tape that is not its
/// golden one (or has none) becomes it.
pub fn check(golden: &Path, tape: &[u8], bless: bool) -> Result<GoldenCheck, GoldenError> {
    let io = |source| GoldenError::Io {
        path: golden.to_path_buf(),
        source,
    };
    let existing = match std::fs::read(golden) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    if existing.as_deref() == Some(tape) {
        return Ok(GoldenCheck::Match);
    }
    if bless {
        if let Some(parent) = golden.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        crate::files::write_atomic(golden, tape).map_err(io)?;
        return Ok(GoldenCheck::Blessed);
    }
    let Some(existing) = existing else {
        return Ok(GoldenCheck::Missing);
    };
    let report = diff_bytes(&existing, tape, Mode::Exact)
        .map(|r| r.render_text())
        .unwrap_or_else(|e| format!("the golden tape does not read: {e}"));
    Ok(GoldenCheck::Differs(report))
}
