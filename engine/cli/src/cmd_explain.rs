//! `simtape explain`: when did a failing run's failure become inevitable? At each record where
//! the run took a decision, K forks keep the decisions before it and draw the rest from fresh
//! seeds; the share that fail the same way, record by record, is the curve, and the first
//! record from which nearly all do is where the failure was baked in. The curve's judgement is
//! `simtape_eval::explain`'s.

use std::collections::BTreeSet;

use simtape_eval::explain::{inevitable_from, Point};

use crate::args::ExplainArgs;
use crate::common::files::scratch_dir;
use crate::common::inputs;
use crate::common::rerun::{prefix, reason, records, Rerun, Stop, TapeOut};
use crate::common::{load_scenario, refuse_recording};
use crate::exit::{CliError, CliResult};

/// "Nearly certain": at least this share of the forks fail the same way.
const NEARLY_CERTAIN: (u32, u32) = (9, 10);

pub(crate) fn run(args: &ExplainArgs) -> CliResult {
    let scratch = scratch_dir("explain")?;
    let result = explain(args, &scratch);
    if !matches!(result, Err(Stop::Differs(_))) {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    Stop::ending(result, "explain")
}

// Long because: the steps in order (check the tape, rerun it, fork at each point, print the
// curve and its point of no return), each a few lines.
fn explain(args: &ExplainArgs, scratch: &std::path::Path) -> Result<(), Stop> {
    let tape = inputs::read(&args.tape)?;
    if tape.verdict == "pass" {
        return Err(CliError::Usage(format!(
            "{}: nothing to explain: the run passed",
            args.tape.display()
        ))
        .into());
    }
    if tape.section.is_none() {
        return Err(CliError::Usage(format!(
            "{}: the tape carries no scenario files (a Rust pipeline's tape)",
            args.tape.display()
        ))
        .into());
    }
    let unpacked = inputs::unpack_into(&tape, &scratch.join("inputs"))?;
    let eval = load_scenario(&unpacked.scenario, unpacked.process_wasi.as_deref())?;
    refuse_recording(&eval, "explain", &args.tape)?;
    let rerun = Rerun {
        eval: &eval,
        tape: &tape,
        fresh: inputs::capture(&eval, unpacked.process_wasi.as_deref())?,
        agent_bin: args.agent_bin.as_deref(),
    };
    let (report, taken) = rerun.again(&args.tape, &scratch.join("parent.tape"))?;
    let target = reason(&report).ok_or_else(|| {
        Stop::Cli(CliError::Usage(format!(
            "{}: nothing to explain: the run passed",
            args.tape.display()
        )))
    })?;
    let records = records(&args.tape)?;
    // The points: each record an actor took a decision at, and the run's start.
    let ordinals: BTreeSet<u64> = std::iter::once(0)
        .chain(taken.iter().filter_map(|d| d.record))
        .collect();
    println!(
        "explain: {} seed {} ({}): {}: {}",
        eval.scenario().name(),
        tape.header.seed,
        args.tape.display(),
        target.kind,
        target.first_line()
    );
    println!(
        "{} forks from before each of {} records where the run took a decision:",
        args.forks,
        ordinals.len()
    );
    let mut curve = Vec::new();
    let mut taken_at = Vec::new();
    for &ordinal in &ordinals {
        let Some(record) = records.get(ordinal as usize) else {
            continue;
        };
        let kept = prefix(&taken, ordinal);
        let mut same = 0;
        for fork in 0..args.forks {
            // Fork seeds are fixed by the point and the fork's number: the curve is the
            // same every time.
            let seed = fork_seed(tape.header.seed, record.index, fork);
            let (child, _) = rerun.run_at(seed, &kept, TapeOut::None, None)?;
            if reason(&child).is_some_and(|found| found.cluster() == target.cluster()) {
                same += 1;
            }
        }
        let point = Point {
            record: record.index,
            same,
            forks: args.forks,
        };
        let decided: Vec<String> = taken
            .iter()
            .filter(|d| d.record == Some(ordinal))
            .map(|d| match d.draw {
                Some(draw) => format!("{} ({})", d.name, draw.reads(d.value)),
                None => d.name.clone(),
            })
            .collect();
        println!(
            "  record {:>5} ({record}): {:>3}/{} fail the same way{}",
            record.index,
            same,
            args.forks,
            if decided.is_empty() {
                String::new()
            } else {
                format!("; then decided: {}", decided.join(", "))
            }
        );
        curve.push(point);
        taken_at.push(decided);
    }
    match inevitable_from(&curve, NEARLY_CERTAIN) {
        Some(0) => println!(
            "the failure was nearly certain from the start: {}/{} futures fail the same way \
             before any decision",
            curve[0].same, curve[0].forks
        ),
        Some(index) => {
            let (before, after) = (curve[index - 1], curve[index]);
            let what = taken_at[index - 1].join(", ");
            println!(
                "after record {} ({what}), {}/{} futures fail the same way; before it, {}/{}",
                before.record, after.same, after.forks, before.same, before.forks
            );
        }
        None => println!(
            "the failure never became nearly certain: even the last point's futures fail the \
             same way only {}/{} times (a late decision, or one no fork redraws, decides it)",
            curve.last().map_or(0, |p| p.same),
            args.forks
        ),
    }
    Ok(())
}

/// The seed of fork `fork` at `record` of a run at `seed`: a hash, so no two points share
/// their futures' draws.
fn fork_seed(seed: u64, record: u64, fork: u32) -> u64 {
    let text = format!("simtape.explain.v1:{seed}:{record}:{fork}");
    let digest = simtape::tape::sha256_hex(text.as_bytes());
    u64::from_str_radix(&digest[..16], 16).unwrap_or(0)
}
