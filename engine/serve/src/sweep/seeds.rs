//! A sweep's runs in order: the failure database's known failures first (their seeds, then
//! their shrunk decisions), then every other seed of the plan; the results merged back so
//! the report counts the plan's seeds only and the database sees them all.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

use simtape_eval::failures::FailureDb;
use simtape_eval::sweep::SeedResult;

use super::{known, Observer, Plan, Ran, SweepError, Tasks};

/// What a sweep ran.
#[derive(Debug)]
pub struct Swept {
    /// The plan's results (the known failures' seeds of the plan included), by scenario
    /// index, each sorted by seed, and the plan's seeds a store gave.
    pub ran: Ran,
    /// Every result by scenario index, the known failures' seeds outside the plan included
    /// (what the failure database is brought up to date with), each sorted by seed.
    pub everything: Vec<Vec<SeedResult>>,
}

/// Runs the sweep's seeds on `jobs` threads, the known failures of `failures` first;
/// `observer` is told what became of them before the rest start, and sees every run end.
pub fn run(
    plan: Plan<'_>,
    jobs: usize,
    stop: &AtomicBool,
    failures: Option<&FailureDb>,
    observer: &mut dyn Observer,
) -> Result<Swept, SweepError> {
    let scenarios = plan.scenarios;
    let known_tasks = failures.map_or_else(Vec::new, |db| known::tasks(db, scenarios));
    let mut replayed = vec![Vec::new(); scenarios.len()];
    let mut reused = vec![Vec::new(); scenarios.len()];
    if let (Some(db), false) = (failures, known_tasks.is_empty()) {
        observer.known_first(known_tasks.len(), db.dir());
        let known = known::replay(plan, db, &known_tasks, jobs, stop, observer)?;
        observer.known_judged(db.dir(), Some(&known.replayed), &known.shrunk);
        (replayed, reused) = (known.ran.results, known.ran.reused);
    } else if let Some(db) = failures {
        // No seed to replay (none known, or only explored ones, which fail only with their
        // decisions): the shrunk decisions are still replayed.
        let shrunk = known::replay_shrunk(db, scenarios)?;
        observer.known_judged(db.dir(), None, &shrunk);
    }
    let in_plan: BTreeSet<(usize, u64)> = known_tasks
        .iter()
        .copied()
        .filter(|&(_, seed)| plan.has_seed(seed))
        .collect();
    let rest = plan.runs() - in_plan.len() as u64;
    let mut ran = super::observed_pool(
        plan,
        Tasks::Plan(&in_plan),
        jobs.min(rest.max(1) as usize),
        stop,
        rest,
        observer,
    )?;
    let mut everything = ran.results.clone();
    for (index, known) in replayed.into_iter().enumerate() {
        for result in known {
            if plan.has_seed(result.seed) {
                ran.results[index].push(result.clone());
            }
            everything[index].push(result);
        }
        ran.results[index].sort_by_key(|r| r.seed);
        everything[index].sort_by_key(|r| r.seed);
        // Only the plan's seeds count as skipped runs of the sweep.
        let in_plan_reused = reused[index].iter().filter(|&&seed| plan.has_seed(seed));
        ran.reused[index].extend(in_plan_reused);
    }
    Ok(Swept { ran, everything })
}
