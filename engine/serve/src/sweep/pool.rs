//! Runs the seeds of a sweep on a pool of OS threads. Each run is one single-threaded
//! simulation; the scenarios are loaded once and shared read-only (`Scenario` is `Sync`).
//! Workers take the next task from one atomic counter, so the pool size changes only which
//! thread runs a seed, never what the run does.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use simtape::tape::{InputStore, Inputs};
use simtape::RunSummary;
use simtape_agent::EvalScenario;
use simtape_eval::reproduce::run_command;
use simtape_eval::sweep::key::ScenarioKey;
use simtape_eval::sweep::{SeedRange, SeedResult, Shard};
use simtape_eval::{Verdict, VerdictKind};

use super::store::{write_atomically, Store};
use super::SweepError;
use crate::sandbox::SandboxMode;

/// The most worker threads a sweep starts (`--jobs`): far above the cores of any one machine
/// (a sweep wider than that is sharded across machines), far below what exhausts a
/// process's threads.
pub const JOBS_MAX: usize = 256;

/// A scenario loaded once for the whole sweep.
#[derive(Debug)]
pub struct Loaded {
    /// The scenario, its agent the one named by `agent` when a sweep runs several.
    pub scenario: EvalScenario,
    /// The agent that runs it, in a sweep across agents (`--agents`).
    pub agent: Option<String>,
    /// The file, as given on the command line (replay commands name it).
    pub path: PathBuf,
    /// The files its runs read, captured once for the kept tapes (with `--out`) and the
    /// result stores' keys.
    pub inputs: Option<Arc<Inputs>>,
    /// What decides its runs but the seed, when its results are stored: `None` without a
    /// store, and for what a key cannot cover (an agent program, an absolute input path).
    pub key: Option<ScenarioKey>,
}

impl Loaded {
    /// The scenario's name in the report and under `--out`: `S`, or `S@AGENT` in a sweep
    /// across agents.
    pub fn label(&self) -> String {
        let name = self.scenario.scenario().name();
        match &self.agent {
            Some(agent) => format!("{name}@{agent}"),
            None => name.to_string(),
        }
    }
}

/// The content directory under `--out` that every kept tape's inputs share, so a thousand
/// failing seeds of one scenario store its files once. Scenario names have no `.`, so no
/// scenario's tape directory can take this name.
pub const SHARED_CAS: &str = "inputs.cas";

/// Points `builder` at the tape kept at `path` under `out`, its inputs in the shared store.
fn keep_tape(builder: &mut simtape::Builder, loaded: &Loaded, out: &Path, path: &Path) {
    builder.tape(path);
    if let Some(inputs) = &loaded.inputs {
        builder
            .inputs(Arc::clone(inputs))
            .inputs_store(InputStore::Sidecar {
                relative: format!("../{SHARED_CAS}"),
                dir: Some(out.join(SHARED_CAS)),
            });
    }
}

/// What the pool runs: every scenario at every seed of the shard.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// The scenarios, each loaded once.
    pub scenarios: &'a [Loaded],
    /// The seed range.
    pub seeds: SeedRange,
    /// The shard of the range this sweep runs.
    pub shard: Shard,
    /// Where failing seeds' tapes go (`DIR/<scenario>/seed-<N>.tape`), if anywhere.
    pub out: Option<&'a Path>,
    /// The agent program of `[agent] kind = "command"` scenarios, when given.
    pub agent_bin: Option<&'a Path>,
    /// The sandbox override (`--no-sandbox`).
    pub sandbox: Option<SandboxMode>,
    /// The settle window override (`--settle-ms`), which the reproduce commands carry.
    pub settle_ms: Option<u64>,
    /// Where results are looked up and stored (`--out`'s, `--cache`'s).
    pub stores: &'a [Store],
}

impl Plan<'_> {
    /// The command that reruns `seed` of `loaded` as this sweep ran it.
    fn reproduce(&self, loaded: &Loaded, seed: u64) -> String {
        let mut deciding = match self.sandbox {
            Some(SandboxMode::Off) => vec!["--no-sandbox".to_string()],
            _ => Vec::new(),
        };
        if let Some(ms) = self.settle_ms {
            deciding.extend(["--settle-ms".to_string(), ms.to_string()]);
        }
        if let Some(agent) = &loaded.agent {
            deciding.extend(["--agent".to_string(), agent.clone()]);
        }
        run_command(&loaded.path, seed, None, None, &deciding)
    }

    /// Returns how many runs the plan has.
    pub fn runs(&self) -> u64 {
        self.seeds.shard_seeds(self.shard).1 * self.scenarios.len() as u64
    }

    /// Returns whether `seed` is one of the plan's (in the range and the shard).
    pub fn has_seed(&self, seed: u64) -> bool {
        self.seeds.has_seed(self.shard, seed)
    }

    /// Returns the (scenario index, seed) of task `task`, `task < self.runs()`.
    fn task(&self, task: u64) -> (usize, u64) {
        let per_scenario = self.seeds.shard_seeds(self.shard).1;
        let scenario = usize::try_from(task / per_scenario).expect("task < runs");
        (
            scenario,
            self.seeds.nth_seed(self.shard, task % per_scenario),
        )
    }
}

/// Runs one seed of an agent-program scenario: once, with its tape (a real agent costs
/// seconds, and a second run is a second agent process), kept only when the seed does not
/// pass.
fn run_program_seed(loaded: &Loaded, seed: u64, plan: Plan<'_>) -> SeedResult {
    let eval = &loaded.scenario;
    let mut builder = eval.builder(seed);
    let path = plan
        .out
        .map(|out| (out, tape_path(out, &loaded.label(), seed)));
    if let Some((out, path)) = &path {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        keep_tape(&mut builder, loaded, out, path);
    }
    let path = path.map(|(_, path)| path);
    let options = crate::command::CommandOptions {
        program: plan.agent_bin.map(Path::to_path_buf),
        sandbox: plan.sandbox,
        ..Default::default()
    };
    let report = match crate::command::run_eval(eval, &mut builder, &options) {
        Ok(report) => report,
        Err(error) => {
            let verdict = Verdict::Error {
                reason: format!("{}: {error}", eval.scenario().path().display()),
            };
            return SeedResult::of(&RunSummary::unstarted(seed), &verdict, Some("config"));
        }
    };
    let mut result = report.seed_result();
    if result.verdict == VerdictKind::Pass {
        if let Some(path) = &path {
            let _ = std::fs::remove_file(path);
        }
        return result;
    }
    result.tape = report
        .run
        .summary
        .tape_path
        .map(|p| p.display().to_string());
    result.replay = Some(plan.reproduce(loaded, seed));
    result
}

/// Returns where a failing seed's tape is kept.
pub fn tape_path(out: &Path, scenario: &str, seed: u64) -> PathBuf {
    out.join(scenario).join(format!("seed-{seed}.tape"))
}

/// Which runs the pool does.
#[derive(Debug, Clone, Copy)]
pub enum Tasks<'a> {
    /// Every (scenario index, seed) of the plan but those in the set (already run: the
    /// known failures a sweep replays first).
    Plan(&'a std::collections::BTreeSet<(usize, u64)>),
    /// Exactly these (scenario index, seed), which may lie outside the plan's seeds.
    Listed(&'a [(usize, u64)]),
}

impl Tasks<'_> {
    /// Returns how many tasks there are to take (skipped ones included).
    fn count(&self, plan: &Plan<'_>) -> u64 {
        match self {
            Tasks::Plan(_) => plan.runs(),
            Tasks::Listed(list) => list.len() as u64,
        }
    }

    /// Returns task `task`, or `None` when it is skipped.
    fn get(&self, plan: &Plan<'_>, task: u64) -> Option<(usize, u64)> {
        match self {
            Tasks::Plan(skip) => Some(plan.task(task)).filter(|t| !skip.contains(t)),
            Tasks::Listed(list) => Some(list[usize::try_from(task).expect("a listed task")]),
        }
    }
}

/// What the pool did: the records by scenario index, each sorted by seed, and the seeds of
/// each scenario whose record came from a result store instead of a run.
#[derive(Debug)]
pub struct Ran {
    /// The records, by scenario index, each sorted by seed.
    pub results: Vec<Vec<SeedResult>>,
    /// The seeds whose record a store gave, by scenario index.
    pub reused: Vec<Vec<u64>>,
}

/// Runs `tasks` of `plan` on `jobs` threads, calling `finished` on this thread with whether
/// each run passed, as it ends (the caller draws progress). Workers stop taking tasks once
/// `stop` is set, or once a result store fails (that error is returned).
pub fn run(
    plan: Plan<'_>,
    tasks: Tasks<'_>,
    jobs: usize,
    stop: &AtomicBool,
    finished: &mut dyn FnMut(bool),
) -> Result<Ran, SweepError> {
    let next = AtomicU64::new(0);
    let failed: Mutex<Option<SweepError>> = Mutex::new(None);
    let runs = tasks.count(&plan);
    let (sender, receiver) = mpsc::channel::<bool>();
    let mut collected: Vec<(usize, SeedResult, bool)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                let sender = sender.clone();
                let (next, failed) = (&next, &failed);
                scope.spawn(move || {
                    let mut done = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let task = next.fetch_add(1, Ordering::Relaxed);
                        if task >= runs {
                            break;
                        }
                        let Some((index, seed)) = tasks.get(&plan, task) else {
                            continue;
                        };
                        let (result, from_store) =
                            match stored_or_run(&plan.scenarios[index], seed, plan) {
                                Ok(done) => done,
                                Err(error) => {
                                    let mut failed = failed.lock().expect("no worker panics");
                                    failed.get_or_insert(error);
                                    stop.store(true, Ordering::Relaxed);
                                    break;
                                }
                            };
                        // The receiver lives until every worker is done.
                        let _ = sender.send(result.verdict == VerdictKind::Pass);
                        done.push((index, result, from_store));
                    }
                    done
                })
            })
            .collect();
        drop(sender);
        for passed in receiver {
            finished(passed);
        }
        workers
            .into_iter()
            .flat_map(|worker| worker.join().expect("a sweep worker panicked"))
            .collect()
    });
    if let Some(error) = failed.into_inner().expect("no worker panics") {
        return Err(error);
    }
    collected.sort_by_key(|(index, result, _)| (*index, result.seed));
    let mut by_scenario = vec![Vec::new(); plan.scenarios.len()];
    let mut reused = vec![Vec::new(); plan.scenarios.len()];
    for (index, result, from_store) in collected {
        if from_store {
            reused[index].push(result.seed);
        }
        by_scenario[index].push(result);
    }
    Ok(Ran {
        results: by_scenario,
        reused,
    })
}

/// Returns the seed's stored result when a store has one for its key (and true), or runs it
/// and stores what it gave (and false).
fn stored_or_run(
    loaded: &Loaded,
    seed: u64,
    plan: Plan<'_>,
) -> Result<(SeedResult, bool), SweepError> {
    let Some(key) = loaded.key.as_ref().map(|key| key.run(seed)) else {
        return Ok((run_seed(loaded, seed, plan), false));
    };
    for store in plan.stores {
        if let Some(result) = reuse(store, &key, loaded, seed, plan)? {
            return Ok((result, true));
        }
    }
    let result = run_seed(loaded, seed, plan);
    let tape = result.tape.as_deref().map(Path::new);
    for store in plan.stores {
        store.put(&key, &result, tape)?;
    }
    Ok((result, false))
}

/// Returns `store`'s result of run `key` as this sweep reports it (its kept tape under
/// `--out`, the command that reproduces it), or `None` when the store has none or kept no
/// tape where this sweep must keep one.
fn reuse(
    store: &Store,
    key: &str,
    loaded: &Loaded,
    seed: u64,
    plan: Plan<'_>,
) -> Result<Option<SeedResult>, SweepError> {
    let Some(found) = store.get(key)? else {
        return Ok(None);
    };
    let mut result = found.result;
    if result.verdict == VerdictKind::Pass {
        return Ok(Some(result));
    }
    if let Some(out) = plan.out {
        let path = tape_path(out, &loaded.label(), seed);
        if !path.is_file() {
            let Some(stored) = found.tape else {
                return Ok(None);
            };
            copy_kept_tape(&stored, &path, loaded, out)?;
        }
        result.tape = Some(path.display().to_string());
    }
    result.replay = Some(plan.reproduce(loaded, seed));
    Ok(Some(result))
}

/// Puts a stored tape where this sweep keeps it, with the inputs it lists in the shared
/// content directory (the same files: they are part of the run's key).
fn copy_kept_tape(
    stored: &Path,
    path: &Path,
    loaded: &Loaded,
    out: &Path,
) -> Result<(), SweepError> {
    if let Some(inputs) = &loaded.inputs {
        let cas = out.join(SHARED_CAS);
        std::fs::create_dir_all(&cas).map_err(SweepError::io(&cas))?;
        for entry in inputs.entries() {
            if let simtape::tape::InputEntry::File { sha256, .. } = entry {
                let file = cas.join(sha256);
                if !file.is_file() {
                    let bytes = inputs
                        .blob(sha256)
                        .expect("a captured file's bytes are kept");
                    write_atomically(&file, bytes)?;
                }
            }
        }
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(SweepError::io(parent))?;
    }
    let bytes = std::fs::read(stored).map_err(SweepError::io(stored))?;
    write_atomically(path, &bytes)
}

/// Runs one seed without a tape; a seed that does not pass runs again with its tape kept
/// under `out`.
fn run_seed(loaded: &Loaded, seed: u64, plan: Plan<'_>) -> SeedResult {
    let eval = &loaded.scenario;
    let out = plan.out;
    if eval.eval().command.is_some() {
        return run_program_seed(loaded, seed, plan);
    }
    let report = eval.run_summary(&mut eval.builder(seed));
    let mut result = report.seed_result();
    if result.verdict == VerdictKind::Pass {
        return result;
    }
    // The second run is the same run (same seed, same scenario), now writing its tape.
    result.tape = out.and_then(|out| {
        let path = tape_path(out, &loaded.label(), seed);
        let mut builder = eval.builder(seed);
        keep_tape(&mut builder, loaded, out, &path);
        eval.run(&mut builder)
            .run
            .summary
            .tape_path
            .map(|p| p.display().to_string())
    });
    result.replay = Some(plan.reproduce(loaded, seed));
    result
}
