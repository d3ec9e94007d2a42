//! `simtape fork`: a tape's run again, taking its decisions up to a record and drawing from
//! another seed after it. The child tape's header carries the overrides and the branch
//! (parent tape, record, parent seed), so it replays alone, and a fork of a fork is one
//! straight run: its decisions are all on its own header.

use std::path::{Path, PathBuf};

use simtape::oracle::{diff_paths, Mode};
use simtape::tape::{sha256_hex, Branch};
use simtape::time::format_ns;

use crate::args::ForkArgs;
use crate::common::files::{check_output, create_parent, read, scratch_dir};
use crate::common::inputs;
use crate::common::inputs::Unpacked;
use crate::common::record::{recorder, RecordLlmArgs};
use crate::common::rerun::{records, RecordAt, Rerun, Stop, TapeOut};
use crate::common::{load_scenario, refuse_recording};
use crate::exit::{CliError, CliResult};
use simtape_eval::branch::prefix;
use simtape_eval::reproduce::command_line;

pub(crate) fn run(args: &ForkArgs) -> CliResult {
    let scratch = scratch_dir("fork")?;
    let result = fork(args, &scratch);
    if !matches!(result, Err(Stop::Differs(_))) {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    Stop::ending(result, "fork")
}

fn fork(args: &ForkArgs, scratch: &Path) -> Result<(), Stop> {
    let tape = inputs::read(&args.tape)?;
    if tape.section.is_none() {
        return Err(CliError::Usage(format!(
            "{}: the tape carries no scenario files (a Rust pipeline's tape): fork its run from \
             the pipeline",
            args.tape.display()
        ))
        .into());
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| child_path(&args.tape, args.at, args.seed));
    check_output(&out, "--tape")?;
    let records = records(&args.tape)?;
    let ordinal = branch_point(args, &records)?;
    let at = records[ordinal].to_string();
    let ordinal = ordinal as u64;
    let unpacked = inputs::unpack_into(&tape, &scratch.join("inputs"))?;
    let eval = load_scenario(&unpacked.scenario, unpacked.process_wasi.as_deref())?;
    refuse_recording(&eval, "fork", &args.tape)?;
    let rerun = Rerun {
        eval: &eval,
        tape: &tape,
        fresh: inputs::capture(&eval, unpacked.process_wasi.as_deref())?,
        agent_bin: args.agent_bin.as_deref(),
        model: None,
    };
    let (_, taken) = rerun.again(&args.tape, &scratch.join("parent.tape"))?;
    let kept = prefix(&taken, ordinal);
    let from_call = model_calls(&records[..ordinal as usize]) + 1;
    let switched = switch_model(args, &rerun, &unpacked, &kept, from_call, &out)?;
    // With the model switched, the child runs the unpacked scenario as `switch_model`
    // rewrote it: its tape carries the `[llm.handover]` and the other fixture.
    let child_eval = switched
        .as_ref()
        .map(|_| load_scenario(&unpacked.scenario, unpacked.process_wasi.as_deref()))
        .transpose()?;
    let child = match &child_eval {
        Some(child_eval) => Rerun {
            eval: child_eval,
            fresh: inputs::capture(child_eval, unpacked.process_wasi.as_deref())?,
            ..rerun
        },
        None => rerun,
    };
    // The decisions file the child's header names: the kept overrides, beside the tape.
    let decisions_path = out.with_extension("decisions.json");
    let digest = child.eval.scenario().digest();
    crate::common::decisions::write(&decisions_path, &digest, kept.clone())?;
    let branch = Branch {
        parent: sha256_hex(&read(&args.tape)?),
        record: args.at,
        parent_seed: tape.header.seed,
    };
    create_parent(&out)?;
    let stamp = Some(sha256_hex(&read(&decisions_path)?));
    let (report, child_taken) =
        child.run_at(args.seed, &kept, TapeOut::New(&out, stamp), Some(branch))?;
    let parted = diff_paths(&args.tape, &out, Mode::Exact)
        .ok()
        .and_then(|diff| diff.first);
    let header_only = parted.as_ref().is_none_or(|first| first.index_a >= args.at);
    if !header_only {
        let first = parted.as_ref().map_or(0, |f| f.index_a);
        return Err(Stop::Differs(format!(
            "the child parted from its parent at record {first}, before the branch point \
             {}: something the decisions do not hold decides the run; see {}",
            args.at,
            command_line(&[
                "simtape".into(),
                "diff".into(),
                args.tape.display().to_string(),
                out.display().to_string(),
            ])
        )));
    }
    print_child(&Child {
        args,
        at: &at,
        parent_seed: tape.header.seed,
        kept: kept.len(),
        taken: taken.len(),
        drawn: child_taken.len().saturating_sub(kept.len()),
        parted: parted.as_ref(),
        verdict: report.verdict.to_string(),
        decisions_path: &decisions_path,
        out: &out,
        switched: switched.as_ref(),
    });
    Ok(())
}

/// The ordinal of the `--at` record among the run's records.
fn branch_point(args: &ForkArgs, records: &[RecordAt]) -> Result<usize, CliError> {
    records
        .iter()
        .position(|r| r.index == args.at)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--at {}: {} has no such record before its footer (`simtape tape show` \
                 numbers them; checkpoints and blobs are not branch points)",
                args.at,
                args.tape.display()
            ))
        })
}

/// The parent's model calls among `records` (those before the branch point).
fn model_calls(records: &[RecordAt]) -> u64 {
    let calls = records
        .iter()
        .filter(|r| r.actor == simtape::capabilities::LLM_ACTOR && r.kind == "request")
        .count();
    calls as u64
}

/// How the child's model answers from the branch point on, when not as its parent's.
struct Switched {
    /// The child's first model call the other side answers (1-based).
    from_call: u64,
    /// The fixture that answers them (as given, or recorded by `--model`).
    fixture: PathBuf,
    /// `--model`: recorded from this provider.
    recorded_from: Option<&'static str>,
}

/// Switches the child's model at call `from_call` when asked (`--fixture`, `--model`): with
/// `--model`, the child runs once recording those calls from the provider into a fixture
/// beside its tape; either way the fixture is copied beside the unpacked scenario, which gets
/// an `[llm.handover]` naming it, so the child's tape carries both and replays alone.
fn switch_model(
    args: &ForkArgs,
    rerun: &Rerun<'_>,
    unpacked: &Unpacked,
    kept: &[simtape::decision::Decision],
    from_call: u64,
    out: &Path,
) -> Result<Option<Switched>, CliError> {
    let flag = match (&args.fixture, args.model) {
        (None, None) => return Ok(None),
        (Some(_), _) => "--fixture",
        (None, Some(_)) => "--model",
    };
    let scenario = rerun.eval.scenario();
    let Some(fixture) = scenario.llm_fixture() else {
        return Err(CliError::Usage(format!(
            "{flag}: {} has no [llm]: its runs ask no model to switch",
            args.tape.display()
        )));
    };
    let source =
        std::fs::read_to_string(&unpacked.scenario).map_err(CliError::io(&unpacked.scenario))?;
    if let Some(call) = scenario.llm_handover_call() {
        return Err(CliError::Usage(format!(
            "{flag}: the scenario of {} already hands its model over at call {call} \
             ([llm.handover]); fork it without {flag}, or fork the run its model was switched \
             from",
            args.tape.display()
        )));
    }
    let (fixture, recorded_from) = match (&args.fixture, args.model) {
        (Some(given), _) => {
            // Checked here, so a bad file is named as given, not as its copy in the child.
            simtape::cap::llm::Fixture::load(given)
                .map_err(|e| CliError::Input(format!("--fixture {}: {e}", given.display())))?;
            (given.clone(), None)
        }
        (None, Some(provider)) => {
            let recorded = out.with_extension("llm.jsonl");
            check_output(&recorded, "--model's fixture")?;
            let record = RecordLlmArgs {
                record_llm: Some(provider),
                fixture_out: Some(recorded.clone()),
                upstream: args.upstream.clone(),
            };
            let Some(then) = recorder(&record)? else {
                unreachable!("--model names a provider");
            };
            let before = simtape::cap::llm::Llm::replay(&fixture)
                .map_err(|e| CliError::Input(format!("{}: {e}", fixture.display())))?;
            let model = before
                .handing_over(from_call, then)
                .with_faults(scenario.llm_faults().to_vec());
            let recording = Rerun {
                eval: rerun.eval,
                tape: rerun.tape,
                fresh: std::sync::Arc::clone(&rerun.fresh),
                agent_bin: rerun.agent_bin,
                model: Some(model),
            };
            recording.run_at(args.seed, kept, TapeOut::None, None)?;
            (recorded, Some(provider.name()))
        }
        (None, None) => unreachable!("returned above"),
    };
    let dir = unpacked.scenario.parent().unwrap_or(Path::new(""));
    let extension = fixture
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("jsonl");
    let name = format!("handover-at-{}.{extension}", args.at);
    let copied = dir.join(&name);
    std::fs::copy(&fixture, &copied).map_err(CliError::io(&fixture))?;
    let section = format!("\n[llm.handover]\nfrom_call = {from_call}\nfixture = {name:?}\n");
    std::fs::write(&unpacked.scenario, source + &section)
        .map_err(CliError::io(&unpacked.scenario))?;
    Ok(Some(Switched {
        from_call,
        fixture,
        recorded_from,
    }))
}

/// Where a child tape goes by default: beside its parent, named by the record and seed.
fn child_path(parent: &Path, at: u64, seed: u64) -> PathBuf {
    let stem = parent
        .file_stem()
        .map_or_else(|| "run".into(), |s| s.to_string_lossy().to_string());
    parent.with_file_name(format!("{stem}.fork-{at}-{seed}.tape"))
}

/// What a fork prints about its child.
struct Child<'a> {
    args: &'a ForkArgs,
    at: &'a str,
    parent_seed: u64,
    kept: usize,
    taken: usize,
    drawn: usize,
    parted: Option<&'a simtape::oracle::FirstDivergence>,
    verdict: String,
    decisions_path: &'a Path,
    out: &'a Path,
    switched: Option<&'a Switched>,
}

fn print_child(c: &Child<'_>) {
    println!(
        "fork: {} at record {} ({}), parent seed {} -> seed {}",
        c.args.tape.display(),
        c.args.at,
        c.at,
        c.parent_seed,
        c.args.seed
    );
    println!(
        "kept {} of the parent's {} decisions (those taken before the record); the child \
         drew {} of its own",
        c.kept, c.taken, c.drawn
    );
    match c.parted {
        Some(first) => println!(
            "the child parts from its parent at record {} (t={}, {} {})",
            first.index_a,
            format_ns(first.t_ns_a),
            first.actor,
            first.kind
        ),
        None => println!("the child's records are its parent's: no later draw changed the run"),
    }
    if let Some(switched) = c.switched {
        let how = match switched.recorded_from {
            Some(provider) => format!("recorded from {provider} into"),
            None => "answered by".into(),
        };
        println!(
            "model: the child's calls from call {} on are {how} {} (its scenario's \
             [llm.handover])",
            switched.from_call,
            switched.fixture.display()
        );
    }
    println!("child: {}", c.verdict);
    println!("decisions: {}", c.decisions_path.display());
    println!(
        "tape: {} (replays alone: {})",
        c.out.display(),
        command_line(&[
            "simtape".into(),
            "replay".into(),
            c.out.display().to_string()
        ])
    );
}
