//! `simtape shrink`: a failing tape's run rerun with fewer and simpler decisions until no
//! single further simplification keeps the same failure; writes the minimal decisions, the
//! scenario they belong to, a tape of the minimal run, and prints the decisions that matter
//! with the one command that reproduces it. The search is `simtape_eval::shrink`'s.

use std::path::{Path, PathBuf};

use simtape::decision::Decision;
use simtape::oracle::{diff_paths, DivergenceOp, Mode};
use simtape::tape::sha256_hex;
use simtape::time::format_ns;
use simtape_agent::{EvalReport, EvalScenario};
use simtape_eval::failures::{FailureDb, ShrunkEntry};
use simtape_eval::shrink::{shrink, ShrinkError, Shrunk, Trial};
use simtape_eval::sweep::{ClusterKey, Reason, SeedResult};

use crate::args::ShrinkArgs;
use crate::common::files::{create_output_dir, read};
use crate::common::inputs;
use crate::common::rerun::{reason, records, same_tape, Rerun, Stop, TapeOut};
use crate::common::{load_scenario, refuse_recording};
use crate::exit::{CliError, CliResult};
use simtape_eval::reproduce::command_line;

/// The files a shrink writes in its directory.
const DECISIONS_FILE: &str = "decisions.json";
const MIN_TAPE: &str = "min.tape";
const SCENARIO_DIR: &str = "scenario";

pub(crate) fn run(args: &ShrinkArgs) -> CliResult {
    Stop::ending(shrink_tape(args), "shrink")
}

// Long because: the steps of a shrink in order (check the tape, unpack, rerun, search, write,
// explain, print), each a call.
fn shrink_tape(args: &ShrinkArgs) -> Result<(), Stop> {
    let tape = inputs::read(&args.tape)?;
    if tape.verdict == "pass" {
        return Err(CliError::Usage(format!(
            "{}: nothing to shrink: the run passed",
            args.tape.display()
        ))
        .into());
    }
    let header = &tape.header;
    if tape.section.is_none() {
        return Err(CliError::Usage(format!(
            "{}: the tape carries no scenario files (a Rust pipeline's tape): shrink its run \
             from the pipeline with simtape_eval::shrink",
            args.tape.display()
        ))
        .into());
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.tape.with_extension("shrink"));
    create_output_dir(&out, &out.join(DECISIONS_FILE), "-o")?;
    // The scenario the decisions belong to is written beside them, so the reproduce command
    // runs wherever the directory is.
    let scenario_dir = out.join(SCENARIO_DIR);
    // Only a former shrink's scenario is replaced: a `scenario/` of anything else is kept.
    if scenario_dir.exists() && !out.join(DECISIONS_FILE).is_file() {
        return Err(CliError::Usage(format!(
            "-o {}: {} exists and is not a shrink's (no {DECISIONS_FILE} beside it); choose \
             another directory",
            out.display(),
            scenario_dir.display()
        ))
        .into());
    }
    if scenario_dir.exists() {
        std::fs::remove_dir_all(&scenario_dir).map_err(CliError::io(&scenario_dir))?;
    }
    let unpacked = inputs::unpack_into(&tape, &scenario_dir)?;
    let eval = load_scenario(&unpacked.scenario, unpacked.process_wasi.as_deref())?;
    refuse_recording(&eval, "shrink", &args.tape)?;
    // An agent program's run has the gateway too; a serve tape is one without a program.
    let served = header
        .actors
        .iter()
        .any(|name| name == simtape_serve::GATEWAY_INBOX);
    if served && eval.eval().command.is_none() {
        let _ = std::fs::remove_dir_all(&scenario_dir);
        return Err(CliError::Usage(format!(
            "{}: a `simtape serve` tape: its agent ran outside simtape, so its run cannot be \
             rerun; shrink a tape of `simtape run` (an [agent] kind = \"command\" scenario \
             runs the same program under simtape)",
            args.tape.display()
        ))
        .into());
    }
    let rerun = Rerun {
        eval: &eval,
        tape: &tape,
        fresh: inputs::capture(&eval, unpacked.process_wasi.as_deref())?,
        agent_bin: args.agent_bin.as_deref(),
        model: None,
    };
    let start = original(&rerun, &args.tape, &out)?;
    let shrunk = shrink(&start.taken, &start.reason, args.max_reruns, |decisions| {
        trial(&rerun, decisions, None).map(|(trial, _)| trial)
    })
    .map_err(|error| match error {
        ShrinkError::Rerun { source, .. } => Stop::Cli(source),
        other => Stop::Differs(other.to_string()),
    })?;
    let scenario_path = unpacked.scenario;
    let decisions_path = out.join(DECISIONS_FILE);
    crate::common::decisions::write(
        &decisions_path,
        &eval.scenario().digest(),
        shrunk.decisions.clone(),
    )?;
    let min_tape = out.join(MIN_TAPE);
    let minimal = minimal(&rerun, &shrunk, &decisions_path, &min_tape, &start.reason)?;
    let mut explained = explain(&rerun, &shrunk, &min_tape, &out)?;
    let records = records(&min_tape)?;
    for item in &mut explained {
        item.at = item
            .decision
            .record
            .and_then(|ordinal| records.get(ordinal as usize))
            .map(|record| format!(", at record {} ({record})", record.index));
    }
    let printed = Printed {
        args,
        eval: &eval,
        seed: header.seed,
        target: &start.reason,
        shrunk: &shrunk,
        explained: &explained,
        minimal: &minimal,
        reproduce: command_line(&[
            "simtape".into(),
            "run".into(),
            scenario_path.display().to_string(),
            "--seed".into(),
            header.seed.to_string(),
            "--decisions".into(),
            decisions_path.display().to_string(),
        ]),
        decisions_path: &decisions_path,
        min_tape: &min_tape,
    };
    if !args.quiet {
        print_shrunk(&printed);
    }
    if let Some(db) = failures_dir(args) {
        let name = eval.scenario().name();
        let said = remember(&db, name, header.seed, &decisions_path, &minimal.key)?;
        if !args.quiet {
            println!("{said}");
        }
    }
    Ok(())
}

/// The failure database to record the shrink in: `--failures DIR`, or the one of the sweep
/// whose `--out` holds the tape (`OUT/<scenario>/seed-N.tape` beside `OUT/failures.db/`).
fn failures_dir(args: &ShrinkArgs) -> Option<PathBuf> {
    if let Some(dir) = &args.failures {
        return Some(dir.clone());
    }
    let out = args.tape.parent()?.parent()?;
    let db = out.join("failures.db");
    db.is_dir().then_some(db)
}

/// Writes the shrunk decisions beside the cluster's entry in the failure database and names
/// them in its `shrunk` field, so the next sweep replays the minimal run too; a database with
/// no entry for the cluster is told, not changed. Returns the line that says which.
fn remember(
    dir: &Path,
    scenario: &str,
    seed: u64,
    decisions: &Path,
    key: &ClusterKey,
) -> Result<String, CliError> {
    let database = |error: simtape_eval::failures::FailureDbError| {
        CliError::Input(format!("failure database: {error}"))
    };
    let mut db = FailureDb::open(dir).map_err(database)?;
    let Some(entry) = db
        .of_scenario(scenario)
        .find(|entry| &entry.cluster == key)
        .cloned()
    else {
        return Ok(format!(
            "failure database {}: no entry for this cluster of {scenario} (a sweep with \
             --out writes one); nothing recorded",
            dir.display()
        ));
    };
    let relative = format!("{scenario}/{}.seed-{seed}.shrunk.json", key.id());
    db.write_file(&relative, &read(decisions)?)
        .map_err(database)?;
    let mut updated = entry;
    updated.shrunk = Some(ShrunkEntry {
        seed,
        decisions: relative.clone(),
    });
    db.put(updated).map_err(database)?;
    Ok(format!(
        "failure database: {} records the shrunk run ({})",
        dir.join(format!("{scenario}/{}.json", key.id())).display(),
        relative
    ))
}

/// One rerun for the search: its failure and its decisions.
fn trial(
    rerun: &Rerun<'_>,
    overrides: &[Decision],
    tape_out: Option<&Path>,
) -> Result<(Trial, EvalReport), CliError> {
    let out = tape_out.map_or(TapeOut::None, |path| TapeOut::New(path, None));
    let (report, taken) = rerun.run(overrides, out)?;
    let failure = reason(&report);
    Ok((Trial { failure, taken }, report))
}

/// Reruns the tape's own run, checks it gives the tape again, and returns its failure and
/// decisions.
fn original(rerun: &Rerun<'_>, original: &Path, out: &Path) -> Result<Start, Stop> {
    let (report, taken) = rerun.again(original, &out.join("rerun-1.tape"))?;
    let reason = reason(&report).ok_or_else(|| {
        Stop::Cli(CliError::Usage(format!(
            "{}: nothing to shrink: the run passed",
            original.display()
        )))
    })?;
    Ok(Start { reason, taken })
}

/// Writes the minimal run's tape, stamped with the decisions file, and checks it fails
/// the same way and replays byte for byte.
fn minimal(
    rerun: &Rerun<'_>,
    shrunk: &Shrunk,
    decisions_path: &Path,
    min_tape: &Path,
    target: &Reason,
) -> Result<Minimal, Stop> {
    let digest = sha256_hex(&read(decisions_path)?);
    let (report, _) = rerun.run(
        &shrunk.decisions,
        TapeOut::New(min_tape, Some(digest.clone())),
    )?;
    let again = min_tape.with_extension("again.tape");
    rerun.run(&shrunk.decisions, TapeOut::New(&again, Some(digest)))?;
    same_tape(
        min_tape,
        &again,
        "the minimal run did not give the same tape twice",
    )?;
    match reason(&report) {
        Some(found) if found.cluster() == target.cluster() => {
            let kind = report.failure.as_ref().map(|failure| failure.kind());
            let result = SeedResult::of(&report.run.summary, &report.verdict, kind);
            Ok(Minimal {
                verdict: report.verdict.to_string(),
                key: ClusterKey::of(&result).expect("a failing run has a cluster"),
            })
        }
        found => Err(Stop::Differs(format!(
            "the minimal run, written to {}, did not fail the same way ({}): the run \
             depends on something its decisions do not hold",
            min_tape.display(),
            found.map_or_else(|| "it passed".to_string(), |r| r.message)
        ))),
    }
}

/// The failing run as rerun from its tape: its failure and the decisions it took.
struct Start {
    reason: Reason,
    taken: Vec<Decision>,
}

/// The minimal run: its verdict line.
struct Minimal {
    verdict: String,
    /// The failure cluster, as the failure database keys it.
    key: ClusterKey,
}

/// What simplifying one decision that matters does to the minimal run.
struct Explained {
    decision: Decision,
    /// What the run does with the decision at its simplest.
    instead: String,
    /// Where that run parts from the minimal run, when it does.
    parts: Option<String>,
    /// Where the minimal run took the decision, when an actor drew it.
    at: Option<String>,
}

/// For each decision that matters: the run without it (at its simplest), and the first record
/// where that run parts from the minimal one.
fn explain(
    rerun: &Rerun<'_>,
    shrunk: &Shrunk,
    min_tape: &Path,
    out: &Path,
) -> Result<Vec<Explained>, CliError> {
    let without = out.join("without.tape");
    let mut explained = Vec::new();
    for (index, decision) in shrunk.decisions.iter().enumerate() {
        let Some(draw) = decision.draw else { continue };
        if decision.value == draw.simplest() {
            continue;
        }
        let mut candidate = shrunk.decisions.clone();
        candidate[index].value = draw.simplest();
        let (trial, _) = trial(rerun, &candidate, Some(&without))?;
        let instead = match &trial.failure {
            None => "the run passes".to_string(),
            Some(found) => format!("the run fails another way ({})", found.first_line()),
        };
        let parts = diff_paths(min_tape, &without, Mode::Exact)
            .ok()
            .and_then(|report| report.first)
            .map(|first| {
                let what = match first.op {
                    DivergenceOp::Inserted => "a record the minimal run lacks",
                    DivergenceOp::Deleted => "the minimal run's record missing",
                    _ => "its record differs",
                };
                format!(
                    "parting at record {} (t={}, {} {}): {what}",
                    first.index_a,
                    format_ns(first.t_ns_a),
                    first.actor,
                    first.kind
                )
            });
        explained.push(Explained {
            decision: decision.clone(),
            instead,
            parts,
            at: None,
        });
    }
    let _ = std::fs::remove_file(&without);
    Ok(explained)
}

/// Everything the report of a shrink prints.
struct Printed<'a> {
    args: &'a ShrinkArgs,
    eval: &'a EvalScenario,
    seed: u64,
    target: &'a Reason,
    shrunk: &'a Shrunk,
    explained: &'a [Explained],
    minimal: &'a Minimal,
    reproduce: String,
    decisions_path: &'a PathBuf,
    min_tape: &'a PathBuf,
}

fn print_shrunk(p: &Printed<'_>) {
    println!(
        "shrink: {} seed {} ({}): {}: {}",
        p.eval.scenario().name(),
        p.seed,
        p.args.tape.display(),
        p.target.kind,
        p.target.first_line()
    );
    let matter = p.explained.len();
    println!(
        "{matter} of {} decisions matter ({} reruns of at most {}{}):",
        p.shrunk.original,
        p.shrunk.reruns,
        p.args.max_reruns,
        if p.shrunk.exhausted {
            "; the budget ran out, so the result may not be minimal"
        } else {
            ""
        }
    );
    for item in p.explained {
        let draw = item
            .decision
            .draw
            .map_or(String::new(), |d| d.reads(item.decision.value));
        let at = item.at.as_deref().unwrap_or("");
        println!("  {}: {draw}{at}", item.decision.name);
        match &item.parts {
            Some(parts) => println!("    without it, {}, {parts}", item.instead),
            None => println!("    without it, {}", item.instead),
        }
    }
    if matter == 0 {
        println!("  none: the run fails the same way with every decision at its simplest");
    }
    println!("minimal run: {}", p.minimal.verdict);
    println!("decisions: {}", p.decisions_path.display());
    println!(
        "minimal tape: {} (replays alone: {})",
        p.min_tape.display(),
        command_line(&[
            "simtape".into(),
            "replay".into(),
            p.min_tape.display().to_string()
        ])
    );
    println!("reproduce: {}", p.reproduce);
}
