//! `simtape report merge`: joins the JSON reports of a sweep's shards into exactly the report
//! one machine would have written for the whole sweep.

use simtape_eval::sweep::{merge, ReportFormat, SweepReport};

use crate::args::{ReportArgs, ReportCommand};
use crate::common::render::deliver;
use simtape::limits::InputKind;

use crate::common::files::{check_output, read_input_text};
use crate::exit::{CliError, CliResult};

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
                let text = read_input_text(path, InputKind::SweepReport)?;
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
    }
}
