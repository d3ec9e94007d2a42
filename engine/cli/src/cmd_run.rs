//! `simtape run`: one scenario at one seed, optionally twice to check determinism.

use std::path::{Path, PathBuf};

use simtape::cap::fs::FsDiff;
use simtape::time::format_ns;
use simtape_agent::{EvalReport, EvalScenario, Verdict};

use crate::args::RunArgs;
use crate::exit::{CliError, CliResult, DIVERGED, OK, RUN_ERROR};
use crate::shell::command_line;

pub(crate) fn run(args: &RunArgs) -> CliResult {
    let eval = load(&args.scenario, args.process_wasi.as_deref())?;
    let scenario = eval.scenario();
    if let (Some(path), false) = (&args.emit_diff, scenario.has_fs()) {
        return Err(CliError::usage(format!(
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
    if let Some(tape) = &tape {
        create_parent(tape)?;
        builder.tape(tape).sidecar_blobs(args.sidecar_blobs);
    }
    let report = eval.run(&mut builder);
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
        diff.write_to(path)
            .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    }
    print_report(args, &eval, &report, &reproduce);
    let code = verdict_code(&report.verdict);
    if args.check_determinism {
        let verdict = check_determinism(&eval, seed)?;
        if verdict != OK {
            return Ok(verdict);
        }
    }
    Ok(code)
}

/// Loads the scenario at `path` with everything it references; with `process_wasi`, programs
/// without a mode run as WASI modules from that directory (`--process-wasi`).
pub(crate) fn load(path: &Path, process_wasi: Option<&Path>) -> Result<EvalScenario, CliError> {
    EvalScenario::check_all_wasi(path, process_wasi)
        .map_err(|mut problems| CliError::usage(problems.swap_remove(0)))
}

/// Returns the exit code of a verdict: pass 0, fail 1 (a finding), error 3.
pub(crate) fn verdict_code(verdict: &Verdict) -> u8 {
    match verdict {
        Verdict::Pass => OK,
        Verdict::Fail { .. } => DIVERGED,
        Verdict::Error { .. } => RUN_ERROR,
    }
}

/// Returns the exact command line that reproduces this run.
/// The guests of `--process-wasi` are part of the run, so the command names them too.
pub(crate) fn reproduce_command(
    scenario: &Path,
    seed: u64,
    tape: Option<&Path>,
    process_wasi: Option<&Path>,
) -> String {
    let mut words = vec![
        "simtape".to_string(),
        "run".to_string(),
        scenario.display().to_string(),
        "--seed".to_string(),
        seed.to_string(),
    ];
    if let Some(tape) = tape {
        words.push("--tape".into());
        words.push(tape.display().to_string());
    }
    if let Some(dir) = process_wasi {
        words.push("--process-wasi".into());
        words.push(dir.display().to_string());
    }
    command_line(&words)
}

/// Returns the report of a run as JSON: what `--json` prints and the evidence's verdict.
pub(crate) fn report_json(eval: &EvalScenario, report: &EvalReport) -> serde_json::Value {
    serde_json::json!({
        "scenario": eval.scenario().name(),
        "seed": report.seed,
        "verdict": report.verdict.label(),
        "reason": verdict_reason(&report.verdict),
        "error": report.failure.as_ref().map(|failure| serde_json::json!({
            "kind": failure.kind(),
            "message": failure.to_string(),
        })),
        "verifiers": report.verifiers,
        "end_ns": report.end_ns,
        "events": report.events,
        "records": report.records,
        "fingerprint": format!("{:016x}", report.fingerprint),
        "tape_bytes": report.tape.as_ref().map(|t| t.bytes),
        "final_hash": report.tape.as_ref().map(|t| format!("{:016x}", t.final_hash)),
        "outcomes": report.outcomes.iter().map(|(k, v)| serde_json::json!({"name": k, "value": v})).collect::<Vec<_>>(),
        "agent": report.transcript.as_ref().map(|t| serde_json::json!({
            "turns": t.turns.len(),
            "tool_calls": t.calls().count(),
            "retries": t.retries,
            "end": t.end_label(),
            "answer": t.answer,
        })),
    })
}

/// Returns what a fail or error verdict says after its label, `None` for a pass.
fn verdict_reason(verdict: &Verdict) -> Option<String> {
    match verdict {
        Verdict::Pass => None,
        Verdict::Fail { verifier, saw } => Some(format!("{verifier}: {saw}")),
        Verdict::Error { reason } => Some(reason.clone()),
    }
}

fn print_report(args: &RunArgs, eval: &EvalScenario, report: &EvalReport, reproduce: &str) {
    if args.json {
        let mut json = report_json(eval, report);
        if let Some(object) = json.as_object_mut() {
            object.insert(
                "tape".into(),
                report
                    .tape_path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .into(),
            );
            object.insert(
                "fs_diff".into(),
                report
                    .fs_diff
                    .as_ref()
                    .map(|diff| diff_json(diff, args.emit_diff.as_deref()))
                    .into(),
            );
            object.insert("reproduce".into(), reproduce.into());
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&json).expect("JSON values serialize")
        );
        return;
    }
    println!(
        "scenario {} ({})",
        eval.scenario().name(),
        args.scenario.display()
    );
    let at = format!(
        "at t={} (virtual), {} events, {} records, fingerprint {:016x}",
        format_ns(report.end_ns),
        report.events,
        report.records,
        report.fingerprint
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
    if let (Some(path), Some(tape)) = (&report.tape_path, &report.tape) {
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

/// Returns the counts of an fs diff and the file it was written to, for `--json`.
fn diff_json(diff: &FsDiff, written: Option<&Path>) -> serde_json::Value {
    serde_json::json!({
        "added": diff.added.len(),
        "modified": diff.modified.len(),
        "deleted": diff.deleted.len(),
        "path": written.map(|p| p.display().to_string()),
    })
}

/// Runs the scenario twice more into temporary tapes and compares them byte for byte.
fn check_determinism(eval: &EvalScenario, seed: u64) -> CliResult {
    let dir = scratch_dir("check")?;
    let tapes = [dir.join("first.tape"), dir.join("second.tape")];
    for tape in &tapes {
        let mut builder = eval.builder(seed);
        builder.tape(tape);
        // Every verdict is part of the behaviour under test: its tape is compared too.
        eval.run(&mut builder);
    }
    let read = |p: &PathBuf| {
        std::fs::read(p).map_err(|e| CliError::usage(format!("{}: {e}", p.display())))
    };
    if read(&tapes[0])? == read(&tapes[1])? {
        println!("determinism: two runs of seed {seed} wrote byte-identical tapes");
        let _ = std::fs::remove_dir_all(&dir);
        return Ok(OK);
    }
    println!("determinism: two runs of seed {seed} differ");
    crate::cmd_diff::print_diff(&tapes[0], &tapes[1], simtape::oracle::Mode::Exact, false)?;
    println!("tapes kept: {} {}", tapes[0].display(), tapes[1].display());
    Ok(DIVERGED)
}

/// Makes a fresh scratch directory for this process under the system temp directory.
pub(crate) fn scratch_dir(purpose: &str) -> Result<PathBuf, CliError> {
    let dir = std::env::temp_dir().join(format!("simtape-{purpose}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::usage(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

/// Creates the parent directories of an output file, so `--tape out/x.tape` just works.
fn create_parent(path: &std::path::Path) -> Result<(), CliError> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => std::fs::create_dir_all(parent)
            .map_err(|e| CliError::usage(format!("{}: {e}", parent.display()))),
        None => Ok(()),
    }
}
