//! What a sweep or `simtape ci` prints of the failure database's known failures
//! (docs/failures.md): which seeds, what their replay and their shrunk decisions said. The
//! runs and the database's update are the gateway's (`simtape_serve::sweep::known`), what
//! a replay means `simtape_eval::failures`'s.

use std::fmt::Write as _;
use std::path::Path;

use simtape_eval::failures::{FailureDb, FailureDbError, ReplayOutcome, Replayed};
use simtape_serve::sweep::{ShrunkOutcome, ShrunkReplay};

use crate::exit::CliError;

/// Opens the database in `dir` (none yet: an empty one); a damaged entry exits 2 naming its
/// file and field.
pub(crate) fn open(dir: &Path) -> Result<FailureDb, CliError> {
    FailureDb::open(dir).map_err(db_error)
}

/// Returns a database error as the command line reports it: I/O as I/O, a bad entry as bad
/// input (exit 2).
pub(crate) fn db_error(error: FailureDbError) -> CliError {
    match error {
        FailureDbError::Io { path, source } => CliError::Io { path, source },
        other => CliError::Input(other.to_string()),
    }
}

/// Returns the lines that say what became of the known failures.
pub(crate) fn text(dir: &Path, replayed: &[Replayed]) -> String {
    let seeds: usize = replayed.iter().map(|r| r.seeds.len()).sum();
    let mut out = format!(
        "known failures ({}): {} cluster(s), {seeds} seed(s) replayed first\n",
        dir.display(),
        replayed.len()
    );
    for one in replayed {
        let detail = match one.outcome {
            ReplayOutcome::StillFails => {
                format!(
                    "{} of {} seed(s) fail the same way",
                    one.same.len(),
                    one.seeds.len()
                )
            }
            ReplayOutcome::FailsOtherwise => format!(
                "{} of {} seed(s) fail, otherwise",
                one.otherwise.len(),
                one.seeds.len()
            ),
            ReplayOutcome::Resolved => {
                format!("all {} seed(s) pass", one.seeds.len())
            }
        };
        let list: Vec<String> = one.seeds.iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "  {:<15} {}: {}: {} (seeds {}: {detail})",
            one.outcome.label(),
            one.scenario,
            one.cluster.kind,
            one.cluster.reason,
            list.join(", ")
        );
    }
    out
}

/// Returns one line for each known failure's shrunk decisions run again: the same cluster
/// (`still fails`), another, a pass, or not run (taken on another version of the scenario).
pub(crate) fn shrunk_text(shrunk: &[ShrunkReplay]) -> String {
    let mut out = String::new();
    for one in shrunk {
        let said = match &one.outcome {
            ShrunkOutcome::OtherVersion => {
                "taken on another version of the scenario, not replayed".to_string()
            }
            ShrunkOutcome::StillFails => "still fails".to_string(),
            ShrunkOutcome::FailsOtherwise(key) => format!("fails otherwise: {key}"),
            ShrunkOutcome::Passes => "passes".to_string(),
            // A new outcome prints its debug form until it has words of its own.
            other => format!("{other:?}"),
        };
        let _ = writeln!(
            out,
            "  {:<15} {}: {}: {} (seed {} with {}: {said})",
            "shrunk",
            one.scenario,
            one.cluster.kind,
            one.cluster.reason,
            one.seed,
            one.path.display()
        );
    }
    out
}
