//! `simtape explain`: when did a failing run's failure become inevitable? At each record where
//! the run took a decision, K forks keep the decisions before it and draw the rest from fresh
//! seeds; the share that fail the same way, record by record, is the curve, and the first
//! record from which nearly all do is where the failure was baked in. The curve's judgement is
//! `simtape_eval::explain`'s.

use std::collections::BTreeSet;

use simtape_eval::explain::{inevitable_from, Explanation, Placed, Point};
use simtape_eval::view::html::tape::{render_explained, TapeView};

use crate::args::ExplainArgs;
use crate::common::files::scratch_dir;
use crate::common::inputs;
use crate::common::rerun::{reason, records, Rerun, Stop, TapeOut};
use crate::common::{load_scenario, refuse_recording};
use crate::exit::{CliError, CliResult};
use simtape_eval::branch::{future_seed, prefix};

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
        model: None,
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
    for &ordinal in &ordinals {
        let Some(record) = records.get(ordinal as usize) else {
            continue;
        };
        let kept = prefix(&taken, ordinal);
        let mut same = 0;
        for fork in 0..args.forks {
            // Fork seeds are fixed by the point and the fork's number: the curve is the
            // same every time.
            let seed = future_seed(
                "explain",
                &[tape.header.seed, record.index, u64::from(fork)],
            );
            let (child, _) = rerun.run_at(seed, &kept, TapeOut::None, None)?;
            if reason(&child).is_some_and(|found| found.cluster() == target.cluster()) {
                same += 1;
            }
        }
        let placed = Placed {
            point: Point {
                record: record.index,
                same,
                forks: args.forks,
            },
            t_ns: record.t_ns,
            decided: taken
                .iter()
                .filter(|d| d.record == Some(ordinal))
                .map(|d| match d.draw {
                    Some(draw) => format!("{} ({})", d.name, draw.reads(d.value)),
                    None => d.name.clone(),
                })
                .collect(),
        };
        println!(
            "  record {:>5} ({record}): {:>3}/{} fail the same way{}",
            record.index,
            same,
            args.forks,
            if placed.decided.is_empty() {
                String::new()
            } else {
                format!("; then decided: {}", placed.decided.join(", "))
            }
        );
        curve.push(placed);
    }
    let points: Vec<Point> = curve.iter().map(|placed| placed.point).collect();
    let explanation = Explanation {
        failure: format!("{}: {}", target.kind, target.first_line()),
        inevitable: inevitable_from(&points, NEARLY_CERTAIN),
        curve,
        nearly: NEARLY_CERTAIN,
    };
    println!("{}", conclusion(&explanation, args.forks));
    if let Some(html) = &args.html {
        let mut reader =
            simtape::tape::TapeReader::open(&args.tape).map_err(|error| CliError::Tape {
                path: Some(args.tape.clone()),
                error,
            })?;
        let view = TapeView::read(&mut reader, None)
            .map_err(|error| CliError::Input(format!("{}: {error}", args.tape.display())))?;
        let page = render_explained(&view, &args.tape.display().to_string(), &explanation);
        std::fs::write(html, page).map_err(CliError::io(html))?;
        println!("page: {}", html.display());
    }
    Ok(())
}

/// The last line: where the failure became nearly certain, and the decision taken there.
fn conclusion(explanation: &Explanation, forks: u32) -> String {
    let curve = &explanation.curve;
    match explanation.inevitable {
        Some(0) => format!(
            "the failure was nearly certain from the start: {}/{} futures fail the same way \
             before any decision",
            curve[0].point.same, curve[0].point.forks
        ),
        Some(index) => {
            let (before, after) = (&curve[index - 1], &curve[index]);
            format!(
                "after record {} ({}), {}/{} futures fail the same way; before it, {}/{}",
                before.point.record,
                before.decided.join(", "),
                after.point.same,
                after.point.forks,
                before.point.same,
                before.point.forks
            )
        }
        None => format!(
            "the failure never became nearly certain: even the last point's futures fail the \
             same way only {}/{forks} times (a late decision, or one no fork redraws, decides it)",
            curve.last().map_or(0, |p| p.point.same)
        ),
    }
}
