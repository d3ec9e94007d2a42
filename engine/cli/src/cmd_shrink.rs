//! `simtape shrink`: a failing tape's run rerun with fewer and simpler decisions until no
//! single further simplification keeps the same failure; writes the minimal decisions, the
//! scenario they belong to, a tape of the minimal run, and prints the decisions that matter
//! with the one command that reproduces it. The search is `simtape_eval::shrink`'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use simtape::decision::{Decision, DecisionBook};
use simtape::oracle::{diff_paths, DivergenceOp, Mode};
use simtape::tape::{sha256_hex, TapeReader};
use simtape::time::format_ns;
use simtape_agent::{EvalReport, EvalScenario};
use simtape_eval::shrink::{shrink, ShrinkError, Shrunk, Trial};
use simtape_eval::sweep::{Reason, SeedResult};

use crate::args::ShrinkArgs;
use crate::common::files::{create_output_dir, read};
use crate::common::inputs::{self, TapeInputs};
use crate::common::shell::command_line;
use crate::common::{load_scenario, refuse_recording};
use crate::exit::{CliError, CliResult, Outcome};

/// The files a shrink writes in its directory.
const DECISIONS_FILE: &str = "decisions.json";
const MIN_TAPE: &str = "min.tape";
const SCENARIO_DIR: &str = "scenario";

pub(crate) fn run(args: &ShrinkArgs) -> CliResult {
    match shrink_tape(args) {
        Ok(()) => Ok(Outcome::Success),
        Err(Stop::Cli(error)) => Err(error),
        Err(Stop::Differs(why)) => {
            println!("shrink: {why}");
            Ok(Outcome::Finding)
        }
    }
}

/// Why a shrink stopped before its end.
enum Stop {
    /// Bad input, or a file that cannot be read or written.
    Cli(CliError),
    /// A rerun that should have given the same run did not (exit 1).
    Differs(String),
}

impl From<CliError> for Stop {
    fn from(error: CliError) -> Stop {
        Stop::Cli(error)
    }
}

// Long because: the steps of a shrink in order (check the tape, unpack, rerun, search, write,
// explain, print), each a call.
fn shrink_tape(args: &ShrinkArgs) -> Result<(), Stop> {
    let tape = inputs::read(&args.tape)?;
    let verdict = footer_verdict(&args.tape)?;
    if verdict == "pass" {
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
    };
    let start = rerun.original(&args.tape, &out)?;
    let shrunk = shrink(&start.taken, &start.reason, args.max_reruns, |decisions| {
        rerun.trial(decisions, None).map(|(trial, _)| trial)
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
    let minimal = rerun.minimal(&shrunk, &decisions_path, &min_tape, &start.reason)?;
    let explained = explain(&rerun, &shrunk, &min_tape, &out)?;
    print_shrunk(&Printed {
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
    });
    Ok(())
}

/// The verdict in the tape's footer; a tape without one (a killed run's prefix) has no
/// failure to shrink.
fn footer_verdict(path: &Path) -> Result<String, CliError> {
    let tape_error = |error| CliError::Tape {
        path: Some(path.to_path_buf()),
        error,
    };
    let mut reader = TapeReader::open(path).map_err(tape_error)?;
    while reader.next_record().map_err(tape_error)?.is_some() {}
    match reader.footer() {
        Some(footer) => Ok(footer.verdict.clone()),
        None => Err(CliError::Usage(format!(
            "{}: the tape ends before its footer (a prefix of a run): shrink needs a whole run",
            path.display()
        ))),
    }
}

/// Reruns the tape's scenario at its seed with given decisions.
struct Rerun<'a> {
    eval: &'a EvalScenario,
    tape: &'a TapeInputs,
    /// The scenario's files as a new run's tape carries them. The tape's own inputs section
    /// also holds what its agent program sent and got, which a rerun would be held to.
    fresh: Arc<simtape::tape::Inputs>,
    agent_bin: Option<&'a Path>,
}

/// Where a rerun's tape goes, and the decisions file's digest its header names.
enum TapeOut<'a> {
    /// No tape (a step of the search).
    None,
    /// The tape's own run again: written as the tape was, to give the same bytes.
    Again(&'a Path, Option<String>),
    /// Another run: its tape carries the scenario's files.
    New(&'a Path, Option<String>),
}

/// The failing run as rerun from its tape: its failure and the decisions it took.
struct Start {
    reason: Reason,
    taken: Vec<Decision>,
}

/// The minimal run: its verdict line.
struct Minimal {
    verdict: String,
}

impl Rerun<'_> {
    /// Runs with `overrides`, writing a tape when asked (stamped with a decisions file's
    /// digest when given).
    fn run(
        &self,
        overrides: &[Decision],
        tape_out: TapeOut<'_>,
    ) -> Result<(EvalReport, Vec<Decision>), CliError> {
        let book = DecisionBook::new(overrides);
        let mut builder = self.eval.builder(self.tape.header.seed);
        let mut stamp = None;
        match tape_out {
            TapeOut::None => {}
            TapeOut::Again(path, digest) => {
                inputs::write_like(&mut builder, self.tape, path);
                stamp = digest;
            }
            TapeOut::New(path, digest) => {
                builder.tape(path).inputs(Arc::clone(&self.fresh));
                stamp = digest;
            }
        }
        builder.decisions(Arc::clone(&book), stamp);
        let report = crate::common::run_eval(
            self.eval,
            &mut builder,
            self.agent_bin,
            None,
            inputs::sandbox_of(&self.tape.header),
        )?;
        Ok((report, book.taken()))
    }

    /// One rerun for the search: its failure and its decisions.
    fn trial(
        &self,
        overrides: &[Decision],
        tape_out: Option<&Path>,
    ) -> Result<(Trial, EvalReport), CliError> {
        let out = tape_out.map_or(TapeOut::None, |path| TapeOut::New(path, None));
        let (report, taken) = self.run(overrides, out)?;
        let failure = reason(&report);
        Ok((Trial { failure, taken }, report))
    }

    /// Reruns the tape's own run (with the overrides its header carries) and checks it gives
    /// the tape again byte for byte: a run that does not is not one the search can shrink.
    fn original(&self, original: &Path, out: &Path) -> Result<Start, Stop> {
        let header = &self.tape.header;
        let overrides = header
            .decisions
            .as_ref()
            .map(|stamp| stamp.overrides.clone())
            .unwrap_or_default();
        let again = out.join("rerun-1.tape");
        let stamp = header.decisions.as_ref().map(|stamp| stamp.digest.clone());
        let (report, taken) = self.run(&overrides, TapeOut::Again(&again, stamp))?;
        same_tape(
            original,
            &again,
            &format!(
                "rerun 1 of {} did not give its tape again: the run depends on something its \
                 decisions do not hold",
                original.display()
            ),
        )?;
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
        &self,
        shrunk: &Shrunk,
        decisions_path: &Path,
        min_tape: &Path,
        target: &Reason,
    ) -> Result<Minimal, Stop> {
        let digest = sha256_hex(&read(decisions_path)?);
        let (report, _) = self.run(
            &shrunk.decisions,
            TapeOut::New(min_tape, Some(digest.clone())),
        )?;
        let again = min_tape.with_extension("again.tape");
        self.run(&shrunk.decisions, TapeOut::New(&again, Some(digest)))?;
        same_tape(
            min_tape,
            &again,
            "the minimal run did not give the same tape twice",
        )?;
        match reason(&report) {
            Some(found) if found.cluster() == target.cluster() => Ok(Minimal {
                verdict: report.verdict.to_string(),
            }),
            found => Err(Stop::Differs(format!(
                "the minimal run, written to {}, did not fail the same way ({}): the run \
                 depends on something its decisions do not hold",
                min_tape.display(),
                found.map_or_else(|| "it passed".to_string(), |r| r.message)
            ))),
        }
    }
}

/// Checks that the rerun's tape `again` has the bytes of `tape`, and removes it; when it does
/// not, it stays, and the stop says `why` with the diff command that shows where they part.
fn same_tape(tape: &Path, again: &Path, why: &str) -> Result<(), Stop> {
    if read(tape)? != read(again)? {
        let diff = command_line(&[
            "simtape".into(),
            "diff".into(),
            tape.display().to_string(),
            again.display().to_string(),
        ]);
        return Err(Stop::Differs(format!("{why}; see {diff}")));
    }
    let _ = std::fs::remove_file(again);
    Ok(())
}

/// Why a run did not pass, as a sweep groups it; `None` for a pass.
fn reason(report: &EvalReport) -> Option<Reason> {
    let kind = report.failure.as_ref().map(|failure| failure.kind());
    SeedResult::of(&report.summary, &report.verdict, kind).reason
}

/// What simplifying one decision that matters does to the minimal run.
struct Explained {
    decision: Decision,
    /// What the run does with the decision at its simplest.
    instead: String,
    /// Where that run parts from the minimal run, when it does.
    parts: Option<String>,
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
        let (trial, _) = rerun.trial(&candidate, Some(&without))?;
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
        println!("  {}: {draw}", item.decision.name);
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
