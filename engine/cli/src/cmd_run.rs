//! `simtape run`: one scenario at one seed, optionally twice to check determinism.

use std::path::Path;

use simtape::cap::fs::FsDiff;
use simtape::tape::TapeError;
use simtape::time::format_ns;
use simtape::SimError;
use simtape_agent::{EvalFailure, EvalReport, EvalScenario};
use simtape_eval::run_json::{to_json_pretty, FsDiffJson, RunCommandJson};
use simtape_eval::Verdict;

use crate::args::RunArgs;
use crate::common::files::{check_output, create_parent, read, scratch_dir};
use crate::common::render::print_diff;
use crate::common::shell::command_line;
use crate::common::{load_scenario, reproduce_command, run_eval, verdict_outcome};
use crate::exit::{CliError, CliResult, Outcome};

pub(crate) fn run(args: &RunArgs) -> CliResult {
    let eval = load_scenario(&args.scenario, args.process_wasi.as_deref())?;
    let scenario = eval.scenario();
    if let (Some(path), false) = (&args.emit_diff, scenario.has_fs()) {
        return Err(CliError::Usage(format!(
            "--emit-diff {}: {} has no [fs] table, so its runs have no fs diff",
            path.display(),
            args.scenario.display()
        )));
    }
    let seed = args
        .seed
        .unwrap_or_else(|| scenario.seeds().first().copied().unwrap_or(0));
    // The seed comes first, before anything can fail, so every log names it.
    println!("seed={seed}");
    let reproduce = reproduce_command(
        &args.scenario,
        seed,
        args.tape.as_deref(),
        args.process_wasi.as_deref(),
    );
    let mut builder = eval.builder(seed);
    // Evidence needs a tape: the one asked for, or one inside the evidence directory.
    let tape = args.tape.clone().or_else(|| {
        args.evidence
            .as_ref()
            .map(|dir| dir.join(crate::evidence::TAPE_FILE))
    });
    if let Some(path) = &args.tape {
        check_output(path, "--tape")?;
    }
    if let Some(path) = &args.emit_diff {
        check_output(path, "--emit-diff")?;
    }
    if let Some(tape) = &tape {
        create_parent(tape)?;
        builder.tape(tape).sidecar_blobs(args.sidecar_blobs);
    }
    let mut report = run_eval(
        &eval,
        &mut builder,
        args.agent_bin.as_deref(),
        args.evidence.as_deref(),
    )?;
    // A tape that could not be written (a full disk) is not the scenario's verdict.
    if let Some(EvalFailure::Sim(SimError::Tape(TapeError::Io { .. }))) = report.failure.as_deref()
    {
        if let Some(EvalFailure::Sim(SimError::Tape(TapeError::Io { path, source }))) =
            report.failure.take().map(|failure| *failure)
        {
            return Err(CliError::Usage(format!(
                "writing the tape {path} failed: {source}; the run has no verdict"
            )));
        }
    }
    if let (Some(dir), Some(tape)) = (&args.evidence, &tape) {
        let run = crate::evidence::RunEvidence {
            scenario: &eval,
            scenario_path: &args.scenario,
            seed,
            report: &report,
            tape,
            reproduce: &reproduce,
        };
        let manifest = crate::evidence::write(dir, &run)?;
        println!("evidence: {}", manifest.display());
    }
    if let (Some(path), Some(diff)) = (&args.emit_diff, &report.fs_diff) {
        create_parent(path)?;
        diff.write_to(path).map_err(CliError::io(path))?;
    }
    print_report(args, &eval, &report, &reproduce);
    let outcome = verdict_outcome(&report.verdict);
    if args.check_determinism {
        let determinism = check_determinism(&eval, seed, args.agent_bin.as_deref())?;
        if determinism != Outcome::Success {
            return Ok(determinism);
        }
    }
    Ok(outcome)
}

fn print_report(args: &RunArgs, eval: &EvalScenario, report: &EvalReport, reproduce: &str) {
    if args.json {
        let json = RunCommandJson {
            run: report.to_json(eval.scenario().name()),
            tape: report
                .summary
                .tape_path
                .as_ref()
                .map(|p| p.display().to_string()),
            fs_diff: report
                .fs_diff
                .as_ref()
                .map(|diff| FsDiffJson::new(diff, args.emit_diff.as_deref())),
            reproduce: reproduce.to_string(),
        };
        println!("{}", to_json_pretty(&json));
        return;
    }
    println!(
        "scenario {} ({})",
        eval.scenario().name(),
        args.scenario.display()
    );
    let summary = &report.summary;
    let at = format!(
        "at t={} (virtual), {} events, {} records, fingerprint {:016x}",
        format_ns(summary.end_ns),
        summary.events,
        summary.records,
        summary.fingerprint
    );
    match &report.verdict {
        Verdict::Pass => println!("result: PASS {at}"),
        Verdict::Fail { verifier, saw } => {
            println!("result: FAIL {at}\nverifier {verifier:?} failed: {saw}")
        }
        Verdict::Error { reason } => {
            let kind = report.failure.as_ref().map_or("error", |f| f.kind());
            println!("result: ERROR ({kind}) {reason}\n{at}");
        }
    }
    for result in &report.verifiers {
        let mark = if result.held { "held  " } else { "FAILED" };
        println!(
            "  verify {mark} {} (line {}): {}",
            result.name, result.line, result.saw
        );
    }
    if let Some(transcript) = &report.transcript {
        println!(
            "agent: {} turn(s), {} tool call(s), {} retr(ies), ended by {}",
            transcript.turns.len(),
            transcript.calls().count(),
            transcript.retries,
            transcript.end_label()
        );
        if let Some(answer) = &transcript.answer {
            println!("answer: {answer}");
        }
    }
    for (name, value) in &report.outcomes {
        println!("outcome {name} = {value}");
    }
    if let Some(diff) = &report.fs_diff {
        println!("{}", diff_line(diff, args.emit_diff.as_deref()));
    }
    if let (Some(path), Some(tape)) = (&summary.tape_path, &summary.tape) {
        println!(
            "tape: {} ({} bytes, final hash {:016x})",
            path.display(),
            tape.bytes,
            tape.final_hash
        );
        println!(
            "replay: {}",
            // With --scenario the replay resolves the scenario's files (fs root, fixtures) the
            // way this run did, wherever the tape is kept.
            command_line(&[
                "simtape",
                "replay",
                &path.display().to_string(),
                "--scenario",
                &args.scenario.display().to_string(),
            ])
        );
    }
    if report.verdict != Verdict::Pass {
        println!("reproduce: {reproduce}");
    }
}

/// Returns the summary line of an fs diff: `fs diff: N added, M modified, K deleted`, with
/// the file it was written to.
fn diff_line(diff: &FsDiff, written: Option<&Path>) -> String {
    let mut line = format!(
        "fs diff: {} added, {} modified, {} deleted",
        diff.added.len(),
        diff.modified.len(),
        diff.deleted.len()
    );
    if let Some(path) = written {
        line.push_str(&format!(" ({})", path.display()));
    }
    line
}

/// Runs the scenario twice more into temporary tapes and compares them byte for byte.
fn check_determinism(eval: &EvalScenario, seed: u64, agent_bin: Option<&Path>) -> CliResult {
    let dir = scratch_dir("check")?;
    let tapes = [dir.join("first.tape"), dir.join("second.tape")];
    for tape in &tapes {
        let mut builder = eval.builder(seed);
        builder.tape(tape);
        // Every verdict is part of the behaviour under test: its tape is compared too.
        run_eval(eval, &mut builder, agent_bin, None)?;
    }
    if read(&tapes[0])? == read(&tapes[1])? {
        println!("determinism: two runs of seed {seed} wrote byte-identical tapes");
        let _ = std::fs::remove_dir_all(&dir);
        return Ok(Outcome::Success);
    }
    println!("determinism: two runs of seed {seed} differ");
    print_diff(&tapes[0], &tapes[1], simtape::oracle::Mode::Exact, false)?;
    println!("tapes kept: {} {}", tapes[0].display(), tapes[1].display());
    Ok(Outcome::Finding)
}
