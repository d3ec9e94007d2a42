//! The known failures a sweep or `simtape ci` replays first, from the failure database
//! (`simtape_eval::failures`, docs/failures.md): which seeds to run, what their replay says,
//! the shrunk decisions run again, and, after a sweep, the database brought up to date with
//! the first seed's decisions. The runs are the pool's; what a replay means and the
//! database's format are `simtape_eval::failures`'s; the command line only prints.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use simtape::decision::DecisionBook;
use simtape_eval::failures::{
    stale_decisions, update, EntryStatus, FailureDb, FailureEntry, Replayed,
};
use simtape_eval::sweep::{ClusterKey, SeedResult};

use super::{Loaded, Observer, Plan, Ran, SweepError, Tasks};

/// Returns the (scenario index, seed) of every known failure of `scenarios` (matched by
/// name), sorted and without repeats; explored entries are left out (they fail only with
/// their decisions).
pub fn tasks(db: &FailureDb, scenarios: &[Loaded]) -> Vec<(usize, u64)> {
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

/// Returns every known failure of `scenarios` judged from the results of its replay
/// (`results` by scenario index), in the database's order.
pub fn judge(db: &FailureDb, scenarios: &[Loaded], results: &[Vec<SeedResult>]) -> Vec<Replayed> {
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

/// What the known failures' replay did: the pool's results, each failure judged, and the
/// shrunk decisions run again.
#[derive(Debug)]
pub struct KnownReplay {
    /// The replayed seeds' results, by scenario index.
    pub ran: Ran,
    /// Each known failure judged, in the database's order.
    pub replayed: Vec<Replayed>,
    /// Each entry with shrunk decisions, run with them.
    pub shrunk: Vec<ShrunkReplay>,
}

/// Runs the seeds `tasks` (from [`tasks`]) of `plan`'s scenarios on `jobs` threads (at most
/// one per seed), judges each known failure of `db` from them, and replays the shrunk
/// decisions; `observer` sees the pool's runs end.
pub fn replay(
    plan: Plan<'_>,
    db: &FailureDb,
    tasks: &[(usize, u64)],
    jobs: usize,
    stop: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<KnownReplay, SweepError> {
    let ran = super::observed_pool(
        plan,
        Tasks::Listed(tasks),
        jobs.clamp(1, tasks.len().max(1)),
        stop,
        tasks.len() as u64,
        observer,
    )?;
    let replayed = judge(db, plan.scenarios, &ran.results);
    let shrunk = replay_shrunk(db, plan.scenarios)?;
    Ok(KnownReplay {
        ran,
        replayed,
        shrunk,
    })
}

/// One known failure's shrunk decisions, run again on the seed they were shrunk from.
#[derive(Debug)]
pub struct ShrunkReplay {
    /// The entry's scenario.
    pub scenario: String,
    /// The entry's cluster.
    pub cluster: ClusterKey,
    /// The seed the decisions were shrunk from.
    pub seed: u64,
    /// The decisions file.
    pub path: PathBuf,
    /// What the run with them did.
    pub outcome: ShrunkOutcome,
}

/// What a run with a known failure's shrunk decisions did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShrunkOutcome {
    /// Not run: the decisions were taken on another version of the scenario (its draws may
    /// have moved).
    OtherVersion,
    /// It failed in the entry's cluster.
    StillFails,
    /// It failed in another cluster.
    FailsOtherwise(ClusterKey),
    /// It passed.
    Passes,
}

/// Replays the shrunk decisions of every known failure of `scenarios` that has them (the
/// seed they were shrunk from, with the decisions `simtape shrink` left), in the
/// database's order. Decisions taken on another version of the scenario are not run.
pub fn replay_shrunk(
    db: &FailureDb,
    scenarios: &[Loaded],
) -> Result<Vec<ShrunkReplay>, SweepError> {
    let mut replays = Vec::new();
    for loaded in scenarios {
        let digest = loaded.scenario.scenario().digest();
        for entry in db.of_scenario(loaded.scenario.scenario().name()) {
            let Some(shrunk) = &entry.shrunk else {
                continue;
            };
            let path = db.dir().join(&shrunk.decisions);
            let text =
                simtape::input::read_input_text(&path, simtape::limits::InputFile::FailureEntry)?;
            let outcome = match simtape_eval::decisions::stamped_digest(&path, &text)? {
                Some(stamp) if stamp != digest => ShrunkOutcome::OtherVersion,
                _ => {
                    let bytes =
                        simtape::input::read_input(&path, simtape::limits::InputFile::Decisions)?;
                    let decided = simtape_eval::decisions::parse(&path, &bytes, &digest)?;
                    let mut builder = loaded.scenario.builder(shrunk.seed);
                    builder.decisions(DecisionBook::new(&decided), None);
                    let result = loaded.scenario.run_summary(&mut builder).seed_result();
                    match ClusterKey::of(&result) {
                        Some(key) if key == entry.cluster => ShrunkOutcome::StillFails,
                        Some(key) => ShrunkOutcome::FailsOtherwise(key),
                        None => ShrunkOutcome::Passes,
                    }
                }
            };
            replays.push(ShrunkReplay {
                scenario: entry.scenario.clone(),
                cluster: entry.cluster.clone(),
                seed: shrunk.seed,
                path,
                outcome,
            });
        }
    }
    Ok(replays)
}

/// Brings the database in `dir` up to date with every result of a finished sweep
/// (`everything`, by scenario index, the known failures' seeds outside the plan included).
/// The database is read again first, so what other shards wrote meanwhile is merged, not
/// overwritten (two shards writing one entry at the same instant: the last one wins).
pub fn remember(
    dir: &Path,
    scenarios: &[Loaded],
    everything: &[Vec<SeedResult>],
) -> Result<(), SweepError> {
    let mut db = FailureDb::open(dir)?;
    for (loaded, results) in scenarios.iter().zip(everything) {
        record(&mut db, loaded, results)?;
    }
    Ok(())
}

/// Brings the entries of `loaded` up to date after a sweep whose every result (known
/// failures replayed first included) is `results`, and writes the first seed's decisions of
/// each failing entry that has none yet.
fn record(db: &mut FailureDb, loaded: &Loaded, results: &[SeedResult]) -> Result<(), SweepError> {
    let scenario = loaded.scenario.scenario();
    let digest = scenario.digest();
    let known: Vec<FailureEntry> = db.of_scenario(scenario.name()).cloned().collect();
    let known: Vec<&FailureEntry> = known.iter().collect();
    let entries = update(scenario.name(), &digest, &known, results);
    for stale in stale_decisions(&known, &entries) {
        db.remove_file(&stale)?;
    }
    for mut entry in entries {
        let first = entry.seeds[0];
        let failing = entry.status == EntryStatus::Failing;
        // An agent program's rerun is a real process, and costs what its run cost: its
        // entries keep no decisions.
        if failing && entry.decisions.is_none() && loaded.scenario.eval().command.is_none() {
            let relative = entry.decisions_path(first);
            let text = simtape_eval::decisions::encode(Some(&digest), decisions_of(loaded, first));
            db.write_file(&relative, text.as_bytes())?;
            entry.decisions = Some(relative);
        }
        db.put(entry)?;
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
