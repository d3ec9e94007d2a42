//! Output more than one command prints: a tape diff, and a sweep report with its summary.

use std::path::Path;

use simtape::oracle::{diff_paths, Mode};
use simtape_eval::sweep::{render, summary_text, write_report, ReportFormat, SweepReport};

use crate::exit::{CliResult, Outcome};

/// Diffs two tapes and prints the report (JSON or text); equal tapes are a success,
/// divergent ones a finding.
pub(crate) fn print_diff(a: &Path, b: &Path, mode: Mode, json: bool) -> CliResult {
    let report = diff_paths(a, b, mode)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("reports serialize")
        );
    } else {
        print!("{}", report.render_text());
    }
    Ok(if report.equal {
        Outcome::Success
    } else {
        Outcome::Finding
    })
}

/// Writes a sweep report and its summary; every seed ran and passed is a success, anything
/// else a finding. The summary goes to standard output, unless the report goes there
/// (`format` without `report_out`): then the summary goes to standard error.
pub(crate) fn deliver(
    report: &SweepReport,
    format: Option<ReportFormat>,
    report_out: Option<&Path>,
) -> CliResult {
    let summary = summary_text(report, format.is_some() || report_out.is_some());
    match (format, report_out) {
        (None, None) => print!("{summary}"),
        (Some(format), None) => {
            eprint!("{summary}");
            print!("{}", render(report, format));
        }
        (format, Some(path)) => {
            write_report(report, format.unwrap_or(ReportFormat::Json), path)?;
            print!("{summary}");
            println!("report: {}", path.display());
        }
    }
    if report.all_passed() && !report.partial && report.unmet_properties().is_empty() {
        Ok(Outcome::Success)
    } else {
        Ok(Outcome::Finding)
    }
}
