//! `simtape ci`: every scenario at its pinned seeds, compared byte for byte with its golden
//! tape under `tapes/`; `--bless` rewrites the goldens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use simtape_eval::property::PropertyTally;

use crate::args::CiArgs;
use crate::common::{load_scenario, refuse_recording};
use crate::exit::{CliError, CliResult, Outcome};
use crate::sweep::known;
use crate::sweep::progress::Shown;
use simtape_serve::golden::{check, golden_path, tape_bytes, GoldenCheck};
use simtape_serve::sweep::{known as known_runs, Loaded, Plan};
use std::sync::atomic::AtomicBool;

pub(crate) fn run(args: &CiArgs) -> CliResult {
    let scenarios = scenario_files(&args.dir.join("scenarios"))?;
    let tapes_dir = args.dir.join("tapes");
    let (mut matched, mut failed) = (0, 0);
    let mut loaded = Vec::with_capacity(scenarios.len());
    // Golden tapes are kept by scenario name: two files of one name would share them.
    let mut names: BTreeMap<String, &PathBuf> = BTreeMap::new();
    for path in &scenarios {
        let eval = load_scenario(path, None)?;
        let name = eval.scenario().name().to_string();
        if let Some(first) = names.insert(name.clone(), path) {
            return Err(CliError::Usage(format!(
                "{} and {} are both named {name:?}; their golden tapes would be one, so names must differ",
                first.display(),
                path.display()
            )));
        }
        refuse_recording(&eval, "ci", path)?;
        loaded.push(eval);
    }
    let mut unmet = 0;
    let mut known_failing = 0;
    if let Some(dir) = &args.failures {
        (loaded, known_failing) = replay_known(dir, &scenarios, std::mem::take(&mut loaded))?;
    }
    for eval in &loaded {
        let scenario = eval.scenario();
        let mut properties = Vec::new();
        for &seed in scenario.seeds() {
            let golden = golden_path(&tapes_dir, scenario.name(), seed);
            let (tape, judged) = tape_bytes(eval, seed)?;
            properties.push((seed, judged));
            let label = format!("{} seed {seed}", scenario.name());
            match check(&golden, &tape, args.bless)? {
                GoldenCheck::Match => {
                    matched += 1;
                    println!("ok       {label}");
                }
                GoldenCheck::Blessed => {
                    matched += 1;
                    println!("blessed  {label} -> {}", golden.display());
                }
                GoldenCheck::Missing => {
                    failed += 1;
                    println!("MISSING  {label}: no golden tape at {}", golden.display());
                }
                GoldenCheck::Differs(report) => {
                    failed += 1;
                    println!("DIFFERS  {label}: {}", golden.display());
                    for line in report.lines() {
                        println!("         {line}");
                    }
                }
            }
        }
        // A `sometimes` no pinned seed hits: the goldens never reach the state it names.
        let tallies = PropertyTally::of(properties.iter().map(|(s, p)| (*s, p.as_slice())));
        for tally in tallies.iter().filter(|tally| tally.unmet()) {
            unmet += 1;
            println!(
                "NEVER    {}: {} property {:?} is hit by none of its pinned seeds {:?}",
                scenario.name(),
                tally.kind,
                tally.name,
                scenario.seeds()
            );
        }
    }
    println!(
        "ci: {matched} tape(s) match, {failed} failed, {} scenario file(s)",
        scenarios.len()
    );
    if failed > 0 {
        println!("if the change is intended: simtape ci --bless, then review and commit tapes/");
        return Ok(Outcome::Finding);
    }
    if known_failing > 0 {
        println!("ci: {known_failing} known failure(s) still fail");
        return Ok(Outcome::Finding);
    }
    if unmet > 0 {
        println!(
            "ci: {unmet} property(ies) never hit: pin a seed that reaches each ([scenario] seeds)"
        );
        return Ok(Outcome::Finding);
    }
    Ok(Outcome::Success)
}

/// Replays the known failures of the database in `dir` for the scenarios of `paths` (loaded
/// as `evals`) and prints what became of them; returns the scenarios, in order, and how many
/// known failures still fail.
fn replay_known(
    dir: &Path,
    paths: &[PathBuf],
    evals: Vec<simtape_agent::EvalScenario>,
) -> Result<(Vec<simtape_agent::EvalScenario>, usize), CliError> {
    let db = known::open(dir)?;
    let loaded: Vec<Loaded> = evals
        .into_iter()
        .zip(paths)
        .map(|(scenario, path)| Loaded {
            scenario,
            agent: None,
            path: path.clone(),
            inputs: None,
            key: None,
        })
        .collect();
    let plan = Plan {
        scenarios: &loaded,
        seeds: simtape_eval::sweep::SeedRange { start: 0, end: 1 },
        shard: simtape_eval::sweep::Shard::ALL,
        out: None,
        agent_bin: None,
        sandbox: None,
        settle_ms: None,
        stores: &[],
    };
    let stop = AtomicBool::new(false);
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let tasks = known_runs::tasks(&db, &loaded);
    let replay = known_runs::replay(plan, &db, &tasks, jobs, &stop, &mut Shown::new(false))?;
    let replayed = replay.replayed;
    print!("{}", known::text(db.dir(), &replayed));
    print!("{}", known::shrunk_text(&replay.shrunk));
    let still = replayed
        .iter()
        .filter(|r| r.outcome == simtape_eval::failures::ReplayOutcome::StillFails)
        .count();
    Ok((loaded.into_iter().map(|l| l.scenario).collect(), still))
}

/// Returns the scenario files of `dir`, sorted so the output order is stable.
fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let entries = std::fs::read_dir(dir).map_err(CliError::io(dir))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    Ok(files)
}
