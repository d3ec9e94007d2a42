//! The known failures a sweep or `simtape ci` replays first, from the failure database
//! (`simtape_eval::failures`, docs/failures.md): which seeds to run, what their replay says,
//! and, after a sweep, the database brought up to date with the first seed's decisions.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use simtape::decision::DecisionBook;
use simtape_eval::failures::{
    stale_decisions, update, FailureDb, FailureDbError, FailureEntry, Replayed,
};
use simtape_eval::sweep::SeedResult;

use crate::common::decisions::DecisionsFile;
use crate::exit::CliError;
use simtape_serve::sweep::Loaded;

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

/// Returns the (scenario index, seed) of every known failure of `scenarios` (matched by
/// name), sorted and without repeats.
pub(crate) fn tasks(db: &FailureDb, scenarios: &[Loaded]) -> Vec<(usize, u64)> {
    let mut tasks: Vec<(usize, u64)> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(index, loaded)| {
            db.of_scenario(loaded.scenario.scenario().name())
                .filter(|entry| !entry.explored)
                .flat_map(move |entry| entry.seeds.iter().map(move |&seed| (index, seed)))
        })
        .collect();
    tasks.sort_unstable();
    tasks.dedup();
    tasks
}

/// Judges every known failure of `scenarios` from the results of its replay (`results` by
/// scenario index), in the database's order.
pub(crate) fn judge(
    db: &FailureDb,
    scenarios: &[Loaded],
    results: &[Vec<SeedResult>],
) -> Vec<Replayed> {
    scenarios
        .iter()
        .zip(results)
        .flat_map(|(loaded, results)| {
            db.of_scenario(loaded.scenario.scenario().name())
                .filter(|entry| !entry.explored)
                .map(|entry| Replayed::of(entry, results))
        })
        .collect()
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
            simtape_eval::failures::ReplayOutcome::StillFails => {
                format!(
                    "{} of {} seed(s) fail the same way",
                    one.same.len(),
                    one.seeds.len()
                )
            }
            simtape_eval::failures::ReplayOutcome::FailsOtherwise => format!(
                "{} of {} seed(s) fail, otherwise",
                one.otherwise.len(),
                one.seeds.len()
            ),
            simtape_eval::failures::ReplayOutcome::Resolved => {
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

/// Replays the shrunk decisions of every known failure of `scenarios` that has them (the
/// seed they were shrunk from, with the decisions `simtape shrink` left), and returns one line for each: the
/// same cluster (`still fails`), another, or a pass. Decisions taken on another version of
/// the scenario are not replayed (its draws may have moved), and the line says so.
pub(crate) fn replay_shrunk(db: &FailureDb, scenarios: &[Loaded]) -> Result<String, CliError> {
    let mut out = String::new();
    for loaded in scenarios {
        let digest = loaded.scenario.scenario().digest();
        for entry in db.of_scenario(loaded.scenario.scenario().name()) {
            let Some(shrunk) = &entry.shrunk else {
                continue;
            };
            let path = db.dir().join(&shrunk.decisions);
            let seed = shrunk.seed;
            let said = match stamped_digest(&path)? {
                Some(stamp) if stamp != digest => {
                    "taken on another version of the scenario, not replayed".to_string()
                }
                _ => {
                    let decided = crate::common::decisions::load(&path, &digest)?;
                    let mut builder = loaded.scenario.builder(seed);
                    builder.decisions(decided.book, None);
                    let result = loaded.scenario.run_summary(&mut builder).seed_result();
                    match simtape_eval::sweep::ClusterKey::of(&result) {
                        Some(key) if key == entry.cluster => "still fails".to_string(),
                        Some(key) => format!("fails otherwise: {key}"),
                        None => "passes".to_string(),
                    }
                }
            };
            let _ = writeln!(
                out,
                "  {:<15} {}: {}: {} (seed {seed} with {}: {said})",
                "shrunk",
                entry.scenario,
                entry.cluster.kind,
                entry.cluster.reason,
                path.display()
            );
        }
    }
    Ok(out)
}

/// Returns the scenario digest a decisions file is stamped with, if any (read within the
/// database's cap).
fn stamped_digest(path: &Path) -> Result<Option<String>, CliError> {
    let text = simtape::input::read_input_text(path, simtape::limits::InputFile::FailureEntry)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|error| {
        CliError::Input(format!("{}: (file): not JSON: {error}", path.display()))
    })?;
    Ok(value
        .get("scenario")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string))
}

/// Brings the entries of `loaded` up to date after a sweep whose every result (known
/// failures replayed first included) is `results`, and writes the first seed's decisions of
/// each failing entry that has none yet.
pub(crate) fn record(
    db: &mut FailureDb,
    loaded: &Loaded,
    results: &[SeedResult],
) -> Result<(), CliError> {
    let scenario = loaded.scenario.scenario();
    let digest = scenario.digest();
    let known: Vec<FailureEntry> = db.of_scenario(scenario.name()).cloned().collect();
    let known: Vec<&FailureEntry> = known.iter().collect();
    let entries = update(scenario.name(), &digest, &known, results);
    for stale in stale_decisions(&known, &entries) {
        db.remove_file(&stale).map_err(db_error)?;
    }
    for mut entry in entries {
        let first = entry.seeds[0];
        let failing = entry.status == simtape_eval::failures::EntryStatus::Failing;
        // An agent program's rerun is a real process, and costs what its run cost: its
        // entries keep no decisions.
        if failing && entry.decisions.is_none() && loaded.scenario.eval().command.is_none() {
            let relative = entry.decisions_path(first);
            let file = DecisionsFile {
                scenario: Some(digest.clone()),
                decisions: decisions_of(loaded, first),
            };
            let mut text = serde_json::to_string_pretty(&file).expect("decisions serialize");
            text.push('\n');
            db.write_file(&relative, text.as_bytes())
                .map_err(db_error)?;
            entry.decisions = Some(relative);
        }
        db.put(entry).map_err(db_error)?;
    }
    Ok(())
}

/// Runs `seed` once more with a decision book and returns the decisions it took: the run is
/// the seed's own (a book without overrides changes no draw), so they are its decisions.
fn decisions_of(loaded: &Loaded, seed: u64) -> Vec<simtape::decision::Decision> {
    let book = DecisionBook::new(&[]);
    let mut builder = loaded.scenario.builder(seed);
    builder.decisions(Arc::clone(&book), None);
    loaded.scenario.run_summary(&mut builder);
    book.taken()
}
