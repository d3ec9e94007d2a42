//! `simtape report merge`: joins the JSON reports of a sweep's shards into exactly the report
//! one machine would have written for the whole sweep.

use crate::args::{ReportArgs, ReportCommand};
use crate::exit::{CliError, CliResult};
use crate::sweep::report::{merge, SweepReport};

pub(crate) fn run(args: &ReportArgs) -> CliResult {
    match &args.command {
        ReportCommand::Merge {
            reports,
            report,
            report_out,
        } => {
            let mut parsed = Vec::with_capacity(reports.len());
            for path in reports {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
                let one: SweepReport = serde_json::from_str(&text).map_err(|e| {
                    CliError::usage(format!("{}: not a JSON sweep report: {e}", path.display()))
                })?;
                parsed.push(one);
            }
            let merged = merge(parsed).map_err(CliError::usage)?;
            let format = report.or(Some(crate::sweep::formats::ReportFormat::Json));
            crate::cmd_sweep::deliver(&merged, format, report_out.as_deref())
        }
    }
}
