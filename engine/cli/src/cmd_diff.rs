//! `simtape diff`: the oracle on two tapes.

use std::path::Path;

use simtape::oracle::{diff_paths, Mode};

use crate::args::{DiffArgs, DiffMode};
use crate::exit::{CliError, CliResult};

pub(crate) fn run(args: &DiffArgs) -> CliResult {
    let mode = match args.mode {
        DiffMode::Exact => Mode::Exact,
        DiffMode::Semantic => Mode::Semantic,
        DiffMode::Outcome => Mode::Outcome,
    };
    print_diff(&args.a, &args.b, mode, args.json)
}

/// Diffs two tapes, prints the report, and returns the exit code (0 equal, 1 divergent).
pub(crate) fn print_diff(a: &Path, b: &Path, mode: Mode, json: bool) -> CliResult {
    let report = diff_paths(a, b, mode).map_err(CliError::usage)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("reports serialize")
        );
    } else {
        print!("{}", report.render_text());
    }
    Ok(report.exit_code())
}
