//! `simtape explore`: a search for failures instead of a sweep of seeds. The search itself
//! (swarm settings, the novelty corpus, forks, the report) is `simtape_eval::explore`'s; this
//! command runs the runs it plans, in batches on a pool of threads, prints what it found, and
//! with `--out` keeps each failure cluster's first run, shrinks it and stores it in the
//! failure database.

use std::path::Path;
use std::sync::Arc;

use simtape::decision::DecisionBook;
use simtape::tape::sha256_hex;
use simtape_agent::EvalScenario;
use simtape_eval::explore::{
    formats, ClusterFound, ExploreReport, Explorer, Observation, Origin, PlannedRun, BATCH,
};
use simtape_eval::failures::{EntryStatus, FailureDb, FailureEntry, FAILURE_FORMAT};
use simtape_eval::sweep::ReportFormat;

use crate::args::{ExploreArgs, ShrinkArgs};
use crate::common::{decisions, inputs, load_scenario, refuse_recording, require_agent_program};
use crate::exit::{CliError, CliResult, Outcome};
use simtape_eval::reproduce::command_line;

pub(crate) fn run(args: &ExploreArgs) -> CliResult {
    let eval = load_scenario(&args.scenario, None)?;
    refuse_recording(&eval, "explore", &args.scenario)?;
    require_agent_program(&eval, args.agent_bin.as_deref())?;
    let sites = eval.swarm_sites();
    if sites.is_empty() {
        // Without fault rules, only the scenario's own draws (latencies, alternatives) are
        // left to vary: one run says whether it makes any.
        let pilot = PlannedRun {
            run: 0,
            seed: 0,
            overrides: Vec::new(),
            origin: Origin::Uniform,
        };
        if run_trial(&eval, &pilot, args.agent_bin.as_deref())?
            .taken
            .is_empty()
        {
            return Err(CliError::Usage(format!(
                "{}: nothing to explore: the scenario draws nothing (no fault rule, no random \
                 latency, alternative or pick)",
                args.scenario.display()
            )));
        }
    }
    // The report to standard output instead of the text: `--json`, or `--report` alone.
    let format = args.report.or(args.json.then_some(ReportFormat::Json));
    let report_on_stdout = format.is_some() && args.report_out.is_none();
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        usize::from,
    );
    let mut explorer = Explorer::new(args.seed, args.strategy, &sites);
    let started = std::time::Instant::now();
    let mut cut = false;
    while explorer.runs() < args.runs {
        if args
            .budget
            .is_some_and(|budget| started.elapsed() >= budget)
        {
            cut = true;
            break;
        }
        let left = args.runs - explorer.runs();
        let trials = explorer.plan(BATCH.min(left as usize));
        let observed = simtape_serve::parallel::map_ordered(&trials, jobs, |trial| {
            run_trial(&eval, trial, args.agent_bin.as_deref())
        });
        for (trial, observed) in trials.iter().zip(observed) {
            explorer.fold(trial, &observed?);
            let first = explorer
                .clusters()
                .into_iter()
                .find(|f| f.first_run == trial.run);
            if let (Some(found), false) = (first, report_on_stdout) {
                println!("run {}: new failure: {}", trial.run, found.cluster);
            }
        }
    }
    let report = explorer.report();
    let kept = match &args.out {
        Some(out) => keep(args, &eval, &report, out)?,
        None => Vec::new(),
    };
    let name = eval.scenario().name();
    if let Some(path) = &args.report_out {
        let rendered = formats::render(&report, name, format.unwrap_or(ReportFormat::Json));
        crate::common::files::create_parent(path)?;
        std::fs::write(path, rendered).map_err(CliError::io(path))?;
    }
    match format {
        Some(format) if report_on_stdout => print!("{}", formats::render(&report, name, format)),
        _ => {
            print!("{}", text(&eval, &report, cut));
            for line in kept {
                println!("{line}");
            }
            if let Some(path) = &args.report_out {
                println!("report: {}", path.display());
            }
        }
    }
    Ok(if report.failed > 0 {
        Outcome::Finding
    } else {
        Outcome::Success
    })
}

/// Runs one planned trial with a decision book and reads what it did.
fn run_trial(
    eval: &EvalScenario,
    trial: &PlannedRun,
    agent_bin: Option<&Path>,
) -> Result<Observation, CliError> {
    let book = DecisionBook::new(&trial.overrides);
    let mut builder = eval.builder(trial.seed);
    builder.decisions(Arc::clone(&book), None);
    let report = crate::common::run_eval(eval, &mut builder, agent_bin, None, None)?;
    Ok(Observation::read(report.seed_result(), &book))
}

/// The report for people: the totals, each cluster with its runs to first failure, and the
/// coverage curve.
fn text(eval: &EvalScenario, report: &ExploreReport, cut: bool) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "explore: {} (strategy {}, seed {}): {}{}\n",
        eval.scenario().name(),
        report.strategy.name(),
        report.seed,
        report.totals(),
        if cut { "; stopped by --budget" } else { "" }
    );
    if report.clusters.is_empty() {
        out.push_str("no failure found\n");
    } else {
        out.push_str("failure clusters, by runs to first failure:\n");
    }
    for found in &report.clusters {
        let _ = writeln!(
            out,
            "  run {:>6}: {} ({} run(s); first at seed {}, {})",
            found.first_run, found.cluster, found.runs, found.seed, found.origin
        );
    }
    let curve: Vec<String> = report
        .coverage
        .iter()
        .map(|point| format!("{}:{}", point.run, point.features))
        .collect();
    if curve.is_empty() {
        out.push_str("coverage: no run reached anything (no fault fired, no retry, model call or property hit)\n");
    } else {
        let _ = writeln!(
            out,
            "coverage (run:things reached, at each run that reached something new): {}",
            curve.join(" ")
        );
    }
    out
}

/// With `--out`: writes the report, and for each cluster its first failing run (tape and
/// decisions, replaying alone), an entry in the failure database and the run's shrink.
/// Returns the lines that say where each went.
fn keep(
    args: &ExploreArgs,
    eval: &EvalScenario,
    report: &ExploreReport,
    out: &Path,
) -> Result<Vec<String>, CliError> {
    crate::common::files::create_output_dir(out, &out.join("explore.json"), "--out")?;
    let json = formats::render(report, eval.scenario().name(), ReportFormat::Json);
    std::fs::write(out.join("explore.json"), json)
        .map_err(CliError::io(&out.join("explore.json")))?;
    let db_dir = args
        .failures
        .clone()
        .unwrap_or_else(|| out.join("failures.db"));
    let mut lines = Vec::new();
    for found in &report.clusters {
        lines.extend(keep_cluster(args, eval, found, out, &db_dir)?);
    }
    Ok(lines)
}

fn keep_cluster(
    args: &ExploreArgs,
    eval: &EvalScenario,
    found: &ClusterFound,
    out: &Path,
    db_dir: &Path,
) -> Result<Vec<String>, CliError> {
    let scenario = eval.scenario();
    let dir = out.join(scenario.name()).join(found.cluster.id());
    let decisions_path = dir.join("found.decisions.json");
    let tape = dir.join("found.tape");
    let digest = scenario.digest();
    decisions::write(&decisions_path, &digest, found.decisions.clone())?;
    let written = crate::common::files::read(&decisions_path)?;
    let stamp = sha256_hex(&written);
    // The first failing run again, its decisions all given: the same run, now on a tape.
    let book = DecisionBook::new(&found.decisions);
    let mut builder = eval.builder(found.seed);
    builder
        .tape(&tape)
        .inputs(inputs::capture(eval, None)?)
        .decisions(Arc::clone(&book), Some(stamp));
    crate::common::run_eval(eval, &mut builder, args.agent_bin.as_deref(), None, None)?;
    let database = |error| CliError::Input(format!("failure database: {error}"));
    let mut db = FailureDb::open(db_dir).map_err(database)?;
    let mut entry = FailureEntry {
        format: FAILURE_FORMAT.to_string(),
        scenario: scenario.name().to_string(),
        scenario_sha256: digest.clone(),
        cluster: found.cluster.clone(),
        status: EntryStatus::Failing,
        seeds: vec![found.seed],
        decisions: None,
        shrunk: None,
        explored: true,
    };
    let relative = entry.decisions_path(found.seed);
    db.write_file(&relative, &written).map_err(database)?;
    entry.decisions = Some(relative);
    db.put(entry).map_err(database)?;
    let shrink_dir = dir.join("shrink");
    let shrink = ShrinkArgs {
        tape: tape.clone(),
        out: Some(shrink_dir.clone()),
        failures: Some(db_dir.to_path_buf()),
        max_reruns: 200,
        agent_bin: args.agent_bin.clone(),
        quiet: true,
    };
    crate::cmd_shrink::run(&shrink)?;
    let shrunk = shrink_dir.join("decisions.json");
    Ok(vec![
        format!("{}:", found.cluster),
        format!(
            "  first failing run: {} (replays alone: {})",
            tape.display(),
            command_line(&[
                "simtape".into(),
                "replay".into(),
                tape.display().to_string()
            ])
        ),
        format!(
            "  shrunk: {} (reproduce: {})",
            shrunk.display(),
            reproduce(&args.scenario, found.seed, &shrunk)
        ),
        format!("  stored in the failure database {}", db_dir.display()),
    ])
}

fn reproduce(scenario: &Path, seed: u64, decisions: &Path) -> String {
    command_line(&[
        "simtape".into(),
        "run".into(),
        scenario.display().to_string(),
        "--seed".into(),
        seed.to_string(),
        "--decisions".into(),
        decisions.display().to_string(),
    ])
}
