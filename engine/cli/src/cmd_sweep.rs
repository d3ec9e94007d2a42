//! `simtape sweep`: every scenario at every seed of a range (or of one shard of it), on a pool
//! of threads; a summary for people, a report for machines, failing tapes kept under `--out`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use simtape_eval::sweep::{ScenarioResults, Shard, SweepReport, SWEEP_RUNS_MAX};

use crate::args::{PlanArgs, SweepArgs, SweepCommand};
use crate::common::files::{check_output, create_output_dir};
use crate::common::render::deliver;
use crate::common::{inputs, load_scenario, refuse_recording, require_agent_program};
use crate::exit::{CliError, CliResult, Outcome};
use crate::sweep::known;
use crate::sweep::progress::Shown;
use simtape_eval::sweep::key::{EngineDigest, ScenarioKey};
use simtape_eval::sweep::plan::{self as job_plan, K8s, Sweep};
use simtape_serve::shard::ShardArg;
use simtape_serve::sweep::seeds::{self, Swept};
use simtape_serve::sweep::{known as known_runs, pool, store, Loaded, Plan, Store};

// Long because: the flags of `sweep` applied in order (plan, shards, stores, pool), then
// the report as printed.
pub(crate) fn run(args: &SweepArgs) -> CliResult {
    if let Some(SweepCommand::Plan(plan)) = &args.command {
        return write_plan(plan);
    }
    let seeds = args
        .seeds
        .expect("clap requires --seeds without a subcommand");
    if let Some(jobs) = args.jobs.filter(|jobs| jobs.get() > pool::JOBS_MAX) {
        return Err(CliError::Usage(format!(
            "--jobs {jobs}: a sweep runs on at most {} threads (each seed is single-threaded; \
             the default is this machine's parallelism)",
            pool::JOBS_MAX
        )));
    }
    let shard = match args.shard {
        None => None,
        Some(ShardArg::Fixed(shard)) => Some(shard),
        Some(ShardArg::Auto { count }) => {
            let found = simtape_serve::shard::from_env(count)
                .map_err(|error| CliError::Usage(error.to_string()))?;
            eprintln!("sweep: {found}");
            Some(found.shard)
        }
    };
    let stores = stores(args)?;
    // The failure database keys its clusters by scenario: several agents of one scenario
    // would mix theirs, so a sweep across agents keeps none.
    let failures = match args
        .failures
        .clone()
        .or_else(|| args.out.as_ref().map(|out| out.join(FAILURES)))
        .filter(|_| args.agents.is_empty())
    {
        Some(dir) => Some(known::open(&dir)?),
        None => None,
    };
    let scenarios = load(
        &args.scenarios,
        args.out.is_some(),
        !stores.is_empty(),
        args.no_sandbox,
        args.settle_ms,
    )?;
    let scenarios = per_agent(scenarios, &args.agents)?;
    for loaded in &scenarios {
        require_agent_program(&loaded.scenario, args.agent_bin.as_deref())?;
        refuse_recording(&loaded.scenario, "sweep", &loaded.path)?;
    }
    let plan = Plan {
        scenarios: &scenarios,
        seeds,
        shard: shard.unwrap_or(Shard::ALL),
        out: args.out.as_deref(),
        agent_bin: args.agent_bin.as_deref(),
        sandbox: args
            .no_sandbox
            .then_some(simtape_serve::sandbox::SandboxMode::Off),
        settle_ms: args.settle_ms,
        stores: &stores,
    };
    let runs = plan.runs();
    if runs > SWEEP_RUNS_MAX {
        return Err(CliError::Usage(format!(
            "{runs} runs (scenarios × seeds of the shard): a sweep takes at most {SWEEP_RUNS_MAX}; split it with --shard"
        )));
    }
    if let Some(path) = &args.report_out {
        check_output(path, "--report-out")?;
    }
    if let Some(out) = &args.out {
        for loaded in &scenarios {
            let dir = out.join(loaded.label());
            create_output_dir(&dir, out, "--out")?;
        }
    }
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |n| n.get(),
    );
    let stop = stop_on_ctrl_c();
    // Printed once Ctrl-C is handled, so a supervisor (or a test) knows it may interrupt.
    eprintln!(
        "sweep: {runs} run(s) on {} thread(s)",
        jobs.min(runs.max(1) as usize)
    );
    let summary_on_stderr = args.report.is_some() && args.report_out.is_none();
    let mut shown = Shown::new(summary_on_stderr);
    let Swept { ran, everything } = seeds::run(plan, jobs, stop, failures.as_ref(), &mut shown)?;
    if stores.iter().any(|store| store.read) {
        // On standard error: the report is the same whether a result was run or reused.
        for ((loaded, results), reused) in scenarios.iter().zip(&ran.results).zip(&ran.reused) {
            eprintln!(
                "sweep: {}: {} of {} run(s) skipped (a result stored under the same key)",
                loaded.label(),
                reused.len(),
                results.len()
            );
        }
    }
    let results = ran.results;
    if let Some(out) = &args.out {
        // A scenario with no failing seed keeps no tape: leave no empty directory for it
        // (`remove_dir` removes only empty ones, and every worker is done).
        for loaded in &scenarios {
            let _ = std::fs::remove_dir(out.join(loaded.label()));
        }
    }
    let done = results.iter().map(Vec::len).sum::<usize>() as u64;
    if done != runs {
        eprintln!("interrupted: {done} of {runs} run(s) done; the report is partial");
    }
    if let Some(db) = failures {
        remember(db, &scenarios, &everything, done == runs)?;
    }
    let report = SweepReport::new(
        seeds,
        shard,
        done != runs,
        scenarios
            .iter()
            .zip(results)
            .map(|(loaded, results)| {
                let scenario = loaded.scenario.scenario();
                let entry = ScenarioResults::new(
                    loaded.label(),
                    loaded.path.display().to_string(),
                    scenario.digest(),
                    results,
                );
                match &loaded.agent {
                    Some(agent) => entry.with_agent(agent),
                    None => entry,
                }
            })
            .collect(),
    );
    deliver(&report, args.report, args.report_out.as_deref())
}

/// The failure database's directory under `--out` (scenario names have no `.`, so no
/// scenario's tape directory can take this name).
const FAILURES: &str = "failures.db";

/// Brings the failure database up to date with every result of a sweep, unless the sweep
/// stopped part-way: it did not see every cluster, and would call the unseen ones resolved.
fn remember(
    db: simtape_eval::failures::FailureDb,
    scenarios: &[Loaded],
    everything: &[Vec<simtape_eval::sweep::SeedResult>],
    complete: bool,
) -> Result<(), CliError> {
    if !complete {
        eprintln!(
            "note: the failure database {} is left as it was",
            db.dir().display()
        );
        return Ok(());
    }
    Ok(known_runs::remember(db.dir(), scenarios, everything)?)
}

/// Writes the job file of `simtape sweep plan` (to `--out`, or standard output).
fn write_plan(args: &PlanArgs) -> CliResult {
    job_plan::check_name(&args.name).map_err(|error| CliError::Usage(error.to_string()))?;
    let seeds = args.seeds.end - args.seeds.start;
    if args.shards > seeds {
        return Err(CliError::Usage(format!(
            "--shards {}: more shards than the {seeds} seed(s) of --seeds",
            args.shards
        )));
    }
    let cwd = std::env::current_dir().map_err(CliError::io("."))?;
    let (text, submit) = if args.slurm {
        // The jobs share this machine's files: catch a scenario that does not load now,
        // not in every array task.
        load(&args.scenarios, false, false, false, None)?;
        let simtape = match &args.simtape {
            Some(path) => path.clone(),
            None => std::env::current_exe()
                .map_err(CliError::io("the simtape binary"))?
                .display()
                .to_string(),
        };
        let sweep = sweep_of(args, simtape, "sweep-results".into());
        (sweep.slurm(&cwd), "bash")
    } else {
        let results = args.results.clone().unwrap_or_else(|| "/results".into());
        if !results.is_absolute() {
            return Err(CliError::Usage(format!(
                "--results {}: a Kubernetes results directory is a mount path, absolute",
                results.display()
            )));
        }
        let simtape = args.simtape.clone().unwrap_or_else(|| "simtape".into());
        let k8s = K8s {
            image: args
                .image
                .clone()
                .expect("clap requires --image with --k8s"),
            claim: args.claim.clone(),
        };
        (
            sweep_of(args, simtape, results).k8s(&k8s),
            "kubectl apply -f",
        )
    };
    match &args.out {
        Some(path) => {
            crate::common::files::create_parent(path)?;
            std::fs::write(path, text).map_err(CliError::io(path))?;
            eprintln!(
                "plan: wrote {}; submit it with `{submit} {}`",
                path.display(),
                path.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(Outcome::Success)
}

fn sweep_of(args: &PlanArgs, simtape: String, default_results: PathBuf) -> Sweep {
    Sweep {
        simtape,
        scenarios: args.scenarios.clone(),
        seeds: args.seeds,
        shards: args.shards,
        results: args.results.clone().unwrap_or(default_results),
        name: args.name.clone(),
    }
}

/// Returns the key of a scenario's stored results, or `None` (with a note) when a key could
/// not cover everything that decides its runs: an agent program is a real process (its
/// interpreter, libraries and network are not inputs), and a file named by an absolute path
/// is not captured.
fn result_key(
    engine: &EngineDigest,
    scenario: &simtape_agent::EvalScenario,
    path: &std::path::Path,
    inputs: &simtape::tape::Inputs,
) -> Option<ScenarioKey> {
    let why_not = if scenario.eval().command.is_some() {
        Some("its agent is a program, whose runs depend on more than its files")
    } else if scenario
        .scenario()
        .input_paths()
        .iter()
        .any(|input| std::path::Path::new(input).is_absolute())
    {
        Some("it reads a file by an absolute path, which the key cannot cover")
    } else {
        None
    };
    if let Some(why) = why_not {
        eprintln!(
            "note: {}: results are not stored or reused: {why}",
            path.display()
        );
        return None;
    }
    Some(ScenarioKey::new(
        engine,
        &scenario.scenario().digest(),
        inputs,
    ))
}

/// Returns the flag Ctrl-C sets: workers stop taking seeds, the runs under way finish, and
/// the partial report is written. A second Ctrl-C exits at once (130). Without a handler
/// (one is already set) Ctrl-C keeps its default effect.
fn stop_on_ctrl_c() -> &'static AtomicBool {
    static UNSTOPPABLE: AtomicBool = AtomicBool::new(false);
    simtape_serve::signals::stop_on_ctrl_c(|| {
        eprintln!("\nstopping: the runs under way finish, then the partial report is written");
    })
    .unwrap_or_else(|error| {
        eprintln!("warning: Ctrl-C will not stop the sweep cleanly: {error}");
        &UNSTOPPABLE
    })
}

/// Opens the result stores: the one under `--out` (read with `--resume`) and `--cache`'s.
fn stores(args: &SweepArgs) -> Result<Vec<Store>, CliError> {
    let mut stores = Vec::new();
    if let Some(out) = &args.out {
        let dir = out.join(store::OUT_STORE);
        create_output_dir(&dir, &dir, "--out")?;
        stores.push(Store::under_out(out, args.resume));
    }
    if let Some(dir) = &args.cache {
        create_output_dir(dir, dir, "--cache")?;
        stores.push(Store::cache(dir));
    }
    Ok(stores)
}

/// Each scenario once per agent of `agents` (`--agents`), sorted by label (`S@AGENT`), or
/// as loaded without it. An agent the scenario does not know is a usage error naming the
/// known ones.
fn per_agent(scenarios: Vec<Loaded>, agents: &[String]) -> Result<Vec<Loaded>, CliError> {
    if agents.is_empty() {
        return Ok(scenarios);
    }
    let mut distinct = std::collections::BTreeSet::new();
    if let Some(twice) = agents.iter().find(|agent| !distinct.insert(agent.as_str())) {
        return Err(CliError::Usage(format!("--agents names {twice:?} twice")));
    }
    let mut each = Vec::with_capacity(scenarios.len() * agents.len());
    for loaded in scenarios {
        for agent in agents {
            let mut scenario = loaded.scenario.clone();
            scenario.select_agent(agent).map_err(|unknown| {
                CliError::Usage(format!("--agents: {}: {unknown}", loaded.path.display()))
            })?;
            each.push(Loaded {
                scenario,
                agent: Some(agent.clone()),
                path: loaded.path.clone(),
                inputs: loaded.inputs.clone(),
                key: loaded.key.clone(),
            });
        }
    }
    each.sort_by_key(Loaded::label);
    Ok(each)
}

/// Loads every scenario once, sorted by name, with the files its runs read when tapes are
/// kept or results stored, and its result key when results are stored; two scenarios may
/// not share a name (their tapes and records would mix).
fn load(
    paths: &[PathBuf],
    keep_tapes: bool,
    keyed: bool,
    no_sandbox: bool,
    settle_ms: Option<u64>,
) -> Result<Vec<Loaded>, CliError> {
    let engine = match keyed {
        true => Some(store::this_binary()?),
        false => None,
    };
    let mut scenarios = Vec::with_capacity(paths.len());
    for path in paths {
        let mut scenario = load_scenario(path, None)?;
        if no_sandbox {
            crate::common::unconfined(&mut scenario);
        }
        if let Some(ms) = settle_ms {
            scenario.set_settle_ms(ms);
        }
        let inputs = match keep_tapes || keyed {
            true => Some(inputs::capture(&scenario, None)?),
            false => None,
        };
        let key = match (&engine, &inputs) {
            (Some(engine), Some(inputs)) => result_key(engine, &scenario, path, inputs),
            _ => None,
        };
        scenarios.push(Loaded {
            scenario,
            agent: None,
            path: path.clone(),
            inputs,
            key,
        });
    }
    scenarios.sort_by(|a, b| {
        a.scenario
            .scenario()
            .name()
            .cmp(b.scenario.scenario().name())
    });
    if let Some(pair) = scenarios
        .windows(2)
        .find(|pair| pair[0].scenario.scenario().name() == pair[1].scenario.scenario().name())
    {
        return Err(CliError::Usage(format!(
            "{} and {} are both named {:?}; a sweep needs distinct scenario names",
            pair[0].path.display(),
            pair[1].path.display(),
            pair[0].scenario.scenario().name()
        )));
    }
    Ok(scenarios)
}
