//! `simtape run`: one scenario at one seed, optionally twice to check determinism.

use std::path::Path;
use std::sync::Arc;

use simtape::cap::fs::FsDiff;
use simtape::scenario::ScenarioFailure;
use simtape::tape::TapeError;
use simtape::time::format_ns;
use simtape::SimError;
use simtape_agent::{EvalFailure, EvalReport, EvalScenario};
use simtape_eval::run_json::{to_json_pretty, FsDiffJson, RunCommandJson};
use simtape_eval::Verdict;

use crate::args::RunArgs;
use crate::common::files::{check_output, create_parent, read, scratch_dir};
use crate::common::record::record_sources;
use crate::common::render::print_diff;
use crate::common::{inputs, load_scenario, run_eval, verdict_outcome};
use crate::exit::{CliError, CliResult, Outcome};
use simtape_eval::reproduce::command_line;
use simtape_eval::reproduce::run_command as reproduce_command;

// Long because: the flags of `run` applied in order before the run and its outputs after;
// moving the record orchestration into a library is planned (docs/ARCHITECTURE.md).
pub(crate) fn run(args: &RunArgs) -> CliResult {
    let mut eval = load_scenario(&args.scenario, args.process_wasi.as_deref())?;
    if args.no_sandbox {
        crate::common::unconfined(&mut eval);
    }
    if let Some(ms) = args.settle_ms {
        eval.set_settle_ms(ms);
    }
    if let Some(agent) = &args.agent {
        eval.select_agent(agent)
            .map_err(|unknown| CliError::Usage(format!("--agent: {unknown}")))?;
    }
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
    // The seed comes first, before anything can fail, so every log names it; with --json it
    // goes to stderr, so stdout is one JSON document (which names the seed too).
    note(args, &format!("seed={seed}"));
    let mut deciding = Vec::new();
    if let Some(file) = &args.decisions {
        deciding.extend(["--decisions".to_string(), file.display().to_string()]);
    }
    if args.no_sandbox {
        deciding.push("--no-sandbox".to_string());
    }
    if let Some(ms) = args.settle_ms {
        deciding.extend(["--settle-ms".to_string(), ms.to_string()]);
    }
    if let Some(agent) = &args.agent {
        deciding.extend(["--agent".to_string(), agent.clone()]);
    }
    let reproduce = reproduce_command(
        &args.scenario,
        seed,
        args.tape.as_deref(),
        args.process_wasi.as_deref(),
        &deciding,
    );
    if args.record.record_llm.is_some() && args.check_determinism {
        return Err(CliError::Usage(
            "--record-llm records one run: --check-determinism would ask the provider twice; \
             record first, then check the replay"
                .into(),
        ));
    }
    let (mut builder, recording) = if args.record_sources {
        let recording = record_sources(&eval, &args.scenario, seed, args.record_dir.as_deref())?;
        (recording.builder, recording.files)
    } else {
        let mut builder = match crate::common::record::recorder(&args.record)? {
            Some(llm) => eval.builder_with_llm(seed, llm),
            None => eval.builder(seed),
        };
        let recording = record_to(args, &eval, &mut builder)?;
        (builder, Vec::from_iter(recording))
    };
    // Evidence needs a tape: the one asked for, or one inside the evidence directory.
    let tape = args.tape.clone().or_else(|| {
        args.evidence
            .as_ref()
            .map(|dir| dir.join(simtape_serve::evidence::TAPE_FILE))
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
        // The tape carries every file the run reads, so it replays anywhere on its own; the
        // files a --record run reads are the ones it is rewriting, so its tape carries none.
        if !args.record_sources {
            builder.inputs(inputs::capture(&eval, args.process_wasi.as_deref())?);
        }
    }
    // Any decisions flag attaches a book; only --decisions stamps the header, so a run that
    // just writes its decisions out keeps the tape of the plain run.
    let digest = scenario.digest();
    let decisions = match &args.decisions {
        Some(path) => {
            let loaded = crate::common::decisions::load(path, &digest)?;
            builder.decisions(Arc::clone(&loaded.book), Some(loaded.digest));
            Some(loaded.book)
        }
        None if args.decisions_out.is_some() => {
            let book = simtape::decision::DecisionBook::new(&[]);
            builder.decisions(Arc::clone(&book), None);
            Some(book)
        }
        None => None,
    };
    let mut report = run_eval(
        &eval,
        &mut builder,
        args.agent_bin.as_deref(),
        args.evidence.as_deref(),
        no_sandbox(args.no_sandbox),
    )?;
    // A tape that could not be written (a full disk) is not the scenario's verdict.
    if let Some(EvalFailure::Scenario(ScenarioFailure::Sim(SimError::Tape(TapeError::Io {
        ..
    })))) = report.failure.as_deref()
    {
        if let Some(EvalFailure::Scenario(ScenarioFailure::Sim(SimError::Tape(TapeError::Io {
            path,
            source,
        })))) = report.failure.take().map(|failure| *failure)
        {
            return Err(CliError::Usage(format!(
                "writing the tape {path} failed: {source}; the run has no verdict"
            )));
        }
    }
    if let (Some(path), Some(book)) = (&args.decisions, &decisions) {
        crate::common::decisions::check_used(path, book)?;
    }
    if let (Some(path), Some(book)) = (&args.decisions_out, &decisions) {
        crate::common::decisions::write(path, &digest, book.taken())?;
    }
    if let (Some(dir), Some(tape)) = (&args.evidence, &tape) {
        let before = simtape_serve::evidence::base_tree_gates(&eval, seed);
        let run = simtape_serve::evidence::RunEvidence {
            scenario: &eval,
            scenario_path: &args.scenario,
            seed,
            report: &report,
            tape,
            reproduce: &reproduce,
            before: &before,
        };
        let manifest = simtape_serve::evidence::write(dir, &run)?;
        note(args, &format!("evidence: {}", manifest.display()));
    }
    if let (Some(path), Some(diff)) = (&args.emit_diff, &report.run.fs_diff) {
        create_parent(path)?;
        diff.write_to(path).map_err(CliError::io(path))?;
    }
    print_report(args, &eval, &report, &reproduce);
    // On stderr, so `--json` output stays one JSON document.
    if args.record_sources {
        for path in &recording {
            eprintln!("recorded: {}", path.display());
        }
    } else if let Some(path) = recording.first() {
        eprintln!("recorded: {} (the programs in record mode)", path.display());
    }
    let outcome = verdict_outcome(&report.verdict);
    if args.check_determinism {
        let determinism = check_determinism(args, &eval, seed)?;
        if determinism != Outcome::Success {
            return Ok(determinism);
        }
    }
    Ok(outcome)
}

// Long because: one block per section of the report as printed (JSON or text), in order.
fn print_report(args: &RunArgs, eval: &EvalScenario, report: &EvalReport, reproduce: &str) {
    if args.json {
        let json = RunCommandJson {
            run: report.to_json(eval.scenario().name()),
            tape: report
                .run
                .summary
                .tape_path
                .as_ref()
                .map(|p| p.display().to_string()),
            fs_diff: report
                .run
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
    let summary = &report.run.summary;
    let mut at = format!(
        "at t={} (virtual), {} events, {} records, fingerprint {:016x}",
        format_ns(summary.end_ns),
        summary.events,
        summary.records,
        summary.fingerprint
    );
    // An agent program's containment belongs to the verdict: a run outside the sandbox
    // guarantees nothing about the host.
    match report.sandbox.as_deref() {
        Some("off") => at.push_str(", sandbox off (the agent ran on the host, unconfined)"),
        Some(label) => at.push_str(&format!(", sandbox {label}")),
        None => {}
    }
    match &report.verdict {
        Verdict::Pass => println!("result: PASS {at}"),
        Verdict::Fail { verifier, saw } => {
            println!("result: FAIL {at}\nverifier {verifier:?} failed: {saw}");
        }
        Verdict::Blocked { policy, reason } => {
            println!("result: BLOCKED ({policy}) {reason}\n{at}");
        }
        Verdict::Error { reason } => {
            let kind = report.failure.as_ref().map_or("error", |f| f.kind());
            println!("result: ERROR ({kind}) {reason}\n{at}");
        }
    }
    print_stderr_tail(&report.stderr_tail);
    for result in &report.verifiers {
        let mark = if result.held { "held  " } else { "FAILED" };
        println!(
            "  verify {mark} {} (line {}): {}",
            result.name, result.line, result.saw
        );
    }
    for property in &report.properties {
        let mark = match (
            property.violated(),
            property.kind.needs_a_hit(),
            property.hit,
        ) {
            (true, _, _) => "FAILED",
            (false, false, _) => "held  ",
            (false, true, true) => "hit   ",
            (false, true, false) => "missed",
        };
        println!(
            "  property {mark} {} {:?}: {}",
            property.kind, property.name, property.saw
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
        for (session, turns) in transcript.sections() {
            println!("  {}", session.line(turns));
        }
        if let Some(answer) = &transcript.answer {
            println!("answer: {answer}");
        }
    }
    for (name, value) in &report.run.outcomes {
        println!("outcome {name} = {value}");
    }
    if let Some(diff) = &report.run.fs_diff {
        println!("{}", diff_line(diff, args.emit_diff.as_deref()));
    }
    if let (Some(path), Some(tape)) = (&summary.tape_path, &summary.tape) {
        println!(
            "tape: {} ({} bytes, final hash {:016x})",
            path.display(),
            tape.bytes,
            tape.final_hash
        );
        let path = path.display().to_string();
        let scenario = args.scenario.display().to_string();
        let replay = if args.record_sources {
            // The files a recording run read are the ones it rewrote: its tape carries none,
            // and its replay reads the recorded files through the scenario.
            command_line(&["simtape", "replay", &path, "--scenario", &scenario])
        } else {
            // The tape carries the scenario and its files: it replays on its own, anywhere.
            command_line(&["simtape", "replay", &path])
        };
        println!("replay: {replay}");
    }
    if report.verdict != Verdict::Pass {
        println!("reproduce: {reproduce}");
    }
}

/// Prints the last lines an agent program wrote to stderr before it failed (none for the
/// built-in agent, a program that exited 0, or a replay: stderr is not on the tape).
fn print_stderr_tail(lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    println!("the agent's stderr ended with (all of it: agent.stderr under --evidence):");
    for line in lines {
        println!("  | {line}");
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

/// Prints a line that is not the run's summary: to stdout, or to stderr under `--json`.
fn note(args: &RunArgs, line: &str) {
    if args.json {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// `--no-sandbox` as the sandbox override it is.
pub(crate) fn no_sandbox(flag: bool) -> Option<simtape_serve::sandbox::SandboxMode> {
    flag.then_some(simtape_serve::sandbox::SandboxMode::Off)
}

/// Runs the scenario twice more into temporary tapes and compares them byte for byte.
fn check_determinism(args: &RunArgs, eval: &EvalScenario, seed: u64) -> CliResult {
    let agent_bin = args.agent_bin.as_deref();
    let dir = scratch_dir("check")?;
    let tapes = [dir.join("first.tape"), dir.join("second.tape")];
    for tape in &tapes {
        let mut builder = eval.builder(seed);
        builder.tape(tape);
        // Every verdict is part of the behaviour under test: its tape is compared too.
        run_eval(
            eval,
            &mut builder,
            agent_bin,
            None,
            no_sandbox(args.no_sandbox),
        )?;
    }
    if read(&tapes[0])? == read(&tapes[1])? {
        note(
            args,
            &format!("determinism: two runs of seed {seed} wrote byte-identical tapes"),
        );
        let _ = std::fs::remove_dir_all(&dir);
        return Ok(Outcome::Success);
    }
    note(
        args,
        &format!("determinism: two runs of seed {seed} differ"),
    );
    print_diff(&tapes[0], &tapes[1], simtape::oracle::Mode::Exact, false)?;
    note(
        args,
        &format!("tapes kept: {} {}", tapes[0].display(), tapes[1].display()),
    );
    Ok(Outcome::Finding)
}

/// Creates the process tape that programs in `[process]` record mode write to:
/// `<record dir>/<scenario>.process.jsonl`, the record dir being `--record-dir` or the
/// scenario file's directory. Returns its path, or `None` when nothing records.
fn record_to(
    args: &RunArgs,
    eval: &EvalScenario,
    builder: &mut simtape::Builder,
) -> Result<Option<std::path::PathBuf>, CliError> {
    let scenario = eval.scenario();
    if !scenario.records_processes() {
        if let Some(dir) = &args.record_dir {
            return Err(CliError::Usage(format!(
                "--record-dir {}: {} puts no program in record mode",
                dir.display(),
                args.scenario.display()
            )));
        }
        return Ok(None);
    }
    if args.check_determinism {
        return Err(CliError::Usage(
            "--check-determinism: programs in record mode run for real; record first, then \
             check the replay"
                .into(),
        ));
    }
    let dir = args.record_dir.clone().unwrap_or_else(|| {
        let parent = args.scenario.parent().unwrap_or(Path::new(""));
        parent.to_path_buf()
    });
    std::fs::create_dir_all(&dir).map_err(CliError::io(&dir))?;
    let path = dir.join(format!("{}.process.jsonl", scenario.name()));
    let tape = simtape_serve::outside::ProcessTapeWriter::create(&path)
        .map_err(|error| CliError::Input(format!("{}: {error}", path.display())))?;
    builder.process_record_to(tape);
    Ok(Some(path))
}
