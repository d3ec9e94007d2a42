//! The explore bench (`bench/data/explore/rare.toml`): runs to the first failure that needs
//! three faults in one run, for uniform seeds, swarm runs and swarm runs guided by novelty,
//! side by side, each a median over exploration seeds. Every hunt is a function of its
//! strategy and seed, so its run count is exact and the same on every machine; only the wall
//! time varies.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use simtape::decision::DecisionBook;
use simtape_agent::EvalScenario;
use simtape_eval::explore::{Explorer, Observation, PlannedRun, Strategy, BATCH};

/// The least ratio of uniform seeds' median runs to the first failure over guided
/// exploration's.
pub const GUIDED_GAIN_MIN: u64 = 10;

/// Returns the path of the rare-failure scenario.
pub fn rare_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/explore/rare.toml")
}

/// Loads the rare-failure scenario with everything it references.
pub fn load() -> Result<EvalScenario, String> {
    EvalScenario::load(&rare_path()).map_err(|error| error.to_string())
}

/// One hunt: a strategy from one exploration seed, until the first failure or `max_runs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hunt {
    /// The strategy.
    pub strategy: Strategy,
    /// The exploration seed.
    pub seed: u64,
    /// The run that failed first; `None` when none did within the bound.
    pub runs: Option<u64>,
    /// The runs made (whole batches: up to [`BATCH`] − 1 past the first failure).
    pub made: u64,
    /// Host time of the whole hunt.
    pub wall: Duration,
    /// The points `simtape explain` forks from on the first failing run (its start and each
    /// record where it took a decision); 0 when none failed.
    pub points: usize,
}

/// Runs one planned trial and reads what it did.
pub fn run_trial(eval: &EvalScenario, trial: &PlannedRun) -> Observation {
    let book = DecisionBook::new(&trial.overrides);
    let mut builder = eval.builder(trial.seed);
    builder.decisions(Arc::clone(&book), None);
    let report = eval.run_summary(&mut builder);
    Observation::read(report.seed_result(), &book)
}

/// Hunts with `strategy` from exploration seed `seed`, on this thread, for at most
/// `max_runs` runs.
pub fn hunt(eval: &EvalScenario, strategy: Strategy, seed: u64, max_runs: u64) -> Hunt {
    let started = Instant::now();
    let mut explorer = Explorer::new(seed, strategy, &eval.swarm_sites());
    let mut made = 0;
    while made < max_runs {
        for trial in explorer.plan(BATCH) {
            let observed = run_trial(eval, &trial);
            explorer.fold(&trial, &observed);
        }
        made += BATCH as u64;
        if let Some(found) = explorer.clusters().first() {
            let records: std::collections::BTreeSet<u64> =
                found.decisions.iter().filter_map(|d| d.record).collect();
            return Hunt {
                strategy,
                seed,
                runs: Some(found.first_run),
                made,
                wall: started.elapsed(),
                points: records.len() + 1,
            };
        }
    }
    Hunt {
        strategy,
        seed,
        runs: None,
        made,
        wall: started.elapsed(),
        points: 0,
    }
}

/// Runs the seeds `0..runs` as a sweep does (no overrides) and counts the failures: how rare
/// the failure is for uniform seeds.
pub fn failures_in(eval: &EvalScenario, runs: u64) -> u64 {
    (0..runs)
        .filter(|&seed| {
            let mut builder = eval.builder(seed);
            eval.run_summary(&mut builder).verdict != simtape_agent::Verdict::Pass
        })
        .count() as u64
}

/// The median of the hunts' runs to the first failure (a hunt that found nothing counts as
/// its bound, above every finding), and of their wall times.
pub fn median(hunts: &[Hunt], max_runs: u64) -> (u64, Duration) {
    let mut runs: Vec<u64> = hunts.iter().map(|h| h.runs.unwrap_or(max_runs)).collect();
    let mut walls: Vec<Duration> = hunts.iter().map(|h| h.wall).collect();
    runs.sort_unstable();
    walls.sort_unstable();
    (runs[runs.len() / 2], walls[walls.len() / 2])
}
