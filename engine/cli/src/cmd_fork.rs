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
use crate::common::rerun::{records, Rerun, Stop, TapeOut};
use crate::common::shell::command_line;
use crate::common::{load_scenario, refuse_recording};
use crate::exit::{CliError, CliResult};
use simtape_eval::branch::prefix;

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
    let Some(ordinal) = records.iter().position(|r| r.index == args.at) else {
        return Err(CliError::Usage(format!(
            "--at {}: {} has no such record before its footer (`simtape tape show` numbers \
             them; checkpoints and blobs are not branch points)",
            args.at,
            args.tape.display()
        ))
        .into());
    };
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
    };
    let (_, taken) = rerun.again(&args.tape, &scratch.join("parent.tape"))?;
    let kept = prefix(&taken, ordinal);
    // The decisions file the child's header names: the kept overrides, beside the tape.
    let decisions_path = out.with_extension("decisions.json");
    let digest = eval.scenario().digest();
    crate::common::decisions::write(&decisions_path, &digest, kept.clone())?;
    let branch = Branch {
        parent: sha256_hex(&read(&args.tape)?),
        record: args.at,
        parent_seed: tape.header.seed,
    };
    create_parent(&out)?;
    let stamp = Some(sha256_hex(&read(&decisions_path)?));
    let (report, child_taken) =
        rerun.run_at(args.seed, &kept, TapeOut::New(&out, stamp), Some(branch))?;
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
    });
    Ok(())
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
