//! `simtape report merge`: joins the JSON reports of a sweep's shards into exactly the report
//! one machine would have written for the whole sweep. `simtape report diff`: compares two
//! sweeps (the diff is `simtape_eval::sweep::diff`'s; this file prints it).

use std::fmt::Write as _;
use std::path::Path;

use simtape_eval::sweep::diff::{ScenarioDiff, SweepSide};
use simtape_eval::sweep::{merge, ReportFormat, SweepDiff, SweepReport, FORMAT};

use crate::args::{ReportArgs, ReportCommand};
use crate::common::render::deliver;
use simtape::limits::InputFile;

use crate::common::files::{check_output, create_parent, read_input_text};
use crate::exit::{CliError, CliResult, Outcome};

pub(crate) fn run(args: &ReportArgs) -> CliResult {
    match &args.command {
        ReportCommand::Merge {
            reports,
            report,
            report_out,
        } => {
            if let Some(path) = report_out {
                check_output(path, "--report-out")?;
            }
            let mut parsed = Vec::with_capacity(reports.len());
            for path in reports {
                let text = read_input_text(path, InputFile::SweepReport)?;
                let one: SweepReport = serde_json::from_str(&text).map_err(|e| {
                    CliError::Input(format!("{}: not a JSON sweep report: {e}", path.display()))
                })?;
                parsed.push(one);
            }
            let merged = merge(parsed).map_err(|error| CliError::Merge {
                path: error.report().map(|number| reports[number - 1].clone()),
                error,
            })?;
            let format = report.or(Some(ReportFormat::Json));
            deliver(&merged, format, report_out.as_deref())
        }
        ReportCommand::Diff {
            old,
            new,
            json,
            html,
        } => diff(old, new, *json, html.as_deref()),
    }
}

/// Prints the diff of two sweep reports; a new failure cluster or a significant loss of
/// robustness is a finding.
fn diff(old: &Path, new: &Path, json: bool, html: Option<&Path>) -> CliResult {
    if let Some(path) = html {
        check_output(path, "--html")?;
    }
    let diff = SweepDiff::of(&read_report(old)?, &read_report(new)?);
    if json {
        let text = serde_json::to_string_pretty(&diff).expect("a diff serializes");
        println!("{text}");
    } else {
        print!("{}", diff_text(&diff, old, new));
    }
    if let Some(path) = html {
        let page = simtape_eval::view::html::sweep_diff::render(
            &diff,
            &old.display().to_string(),
            &new.display().to_string(),
        );
        create_parent(path)?;
        std::fs::write(path, page).map_err(CliError::io(path))?;
        eprintln!("report diff: wrote {}", path.display());
    }
    Ok(match diff.worse() {
        true => Outcome::Finding,
        false => Outcome::Success,
    })
}

/// Reads a JSON sweep report; anything else is refused naming the file.
fn read_report(path: &Path) -> Result<SweepReport, CliError> {
    let text = read_input_text(path, InputFile::SweepReport)?;
    let not_a_report =
        |why: String| CliError::Input(format!("{}: not a sweep report: {why}", path.display()));
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| not_a_report(format!("not JSON: {e}")))?;
    match value.get("format").and_then(serde_json::Value::as_str) {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(not_a_report(format!(
                "format {other:?}, expected {FORMAT:?}"
            )))
        }
        None => return Err(not_a_report(format!("no \"format\": {FORMAT:?} field"))),
    }
    let report: SweepReport =
        serde_json::from_value(value).map_err(|e| not_a_report(e.to_string()))?;
    if !report.digest.is_empty() && report.digest != report.content_digest() {
        return Err(not_a_report(format!(
            "its results do not match its digest {} (edited after it was written?)",
            report.digest
        )));
    }
    Ok(report)
}

fn diff_text(diff: &SweepDiff, old: &Path, new: &Path) -> String {
    let mut out = format!(
        "report diff: old {}, new {}\n",
        old.display(),
        new.display()
    );
    for name in &diff.only_old {
        let _ = writeln!(
            out,
            "scenario {name}: only in the old report (not compared)"
        );
    }
    for name in &diff.only_new {
        let _ = writeln!(
            out,
            "scenario {name}: only in the new report (not compared)"
        );
    }
    for scenario in &diff.scenarios {
        scenario_text(&mut out, scenario);
    }
    out
}

fn scenario_text(out: &mut String, scenario: &ScenarioDiff) {
    let _ = writeln!(
        out,
        "scenario {}: {} common seed(s){}",
        scenario.name,
        scenario.common_seeds,
        if scenario.scenario_changed {
            ", the scenario file changed"
        } else {
            ""
        }
    );
    if scenario.only_old_seeds + scenario.only_new_seeds > 0 {
        let _ = writeln!(
            out,
            "  the seed sets differ: only the common seeds are compared ({} only in old, {} only in new, left out)",
            scenario.only_old_seeds, scenario.only_new_seeds
        );
    }
    let _ = writeln!(
        out,
        "  pass rate  old {}  new {}",
        rate(&scenario.old),
        rate(&scenario.new)
    );
    let _ = writeln!(
        out,
        "  {:>6}  {:<40}  new pass^k [95% interval]",
        "k", "old pass^k [95% interval]"
    );
    for (a, b) in scenario.old.k.iter().zip(&scenario.new.k) {
        let cell = |row: &simtape_eval::sweep::diff::PassHatK| {
            format!(
                "{} = {:.4} {}",
                row.pass_hat_k, row.pass_hat_k_value, row.interval
            )
        };
        let _ = writeln!(out, "  {:>6}  {:<40}  {}", a.k, cell(a), cell(b));
    }
    let count = |status| {
        scenario
            .clusters
            .iter()
            .filter(|c| c.status == status)
            .count()
    };
    use simtape_eval::sweep::diff::ClusterStatus;
    let _ = writeln!(
        out,
        "  failure clusters: {} new, {} resolved, {} ongoing",
        count(ClusterStatus::New),
        count(ClusterStatus::Resolved),
        count(ClusterStatus::Ongoing)
    );
    for change in &scenario.clusters {
        let _ = writeln!(
            out,
            "    {:<9} {}: {}  (old {}, new {})",
            change.status.label(),
            change.cluster.kind,
            change.cluster.reason,
            seeds(&change.old_seeds),
            seeds(&change.new_seeds)
        );
    }
    let paired = &scenario.paired;
    let _ = writeln!(
        out,
        "  paired (exact sign test, {} common seed(s)): b = {} passed before and not after, c = {} failed before and pass after, p = {}: {}",
        scenario.common_seeds,
        paired.b,
        paired.c,
        paired
            .p_value
            .as_deref()
            .unwrap_or("not computed (too many discordant seeds)"),
        paired.direction.label()
    );
}

fn rate(side: &SweepSide) -> String {
    match side.k.first() {
        Some(row) => format!(
            "{}/{} = {:.4} {}",
            side.passed, side.runs, row.pass_hat_k_value, row.interval
        ),
        None => "no runs".to_string(),
    }
}

/// At most this many seeds of a cluster and side are printed (the JSON has them all).
const SEEDS_SHOWN_MAX: usize = 8;

fn seeds(list: &[u64]) -> String {
    if list.is_empty() {
        return "none".to_string();
    }
    let shown: Vec<String> = list
        .iter()
        .take(SEEDS_SHOWN_MAX)
        .map(u64::to_string)
        .collect();
    let more = match list.len() > SEEDS_SHOWN_MAX {
        true => ", …",
        false => "",
    };
    format!("{} seed(s): {}{more}", list.len(), shown.join(", "))
}
