//! `simtape check`: validate a scenario and report every problem.

use simtape::scenario::Scenario;

use crate::args::CheckArgs;
use crate::exit::{CliResult, OK, USAGE};

pub(crate) fn run(args: &CheckArgs) -> CliResult {
    match Scenario::check_all(&args.scenario) {
        Ok(scenario) => {
            println!(
                "ok: scenario {} ({}), seeds {:?}",
                scenario.name(),
                args.scenario.display(),
                scenario.seeds()
            );
            Ok(OK)
        }
        Err(errors) => {
            for error in &errors {
                eprintln!("{error}");
            }
            eprintln!("{} problem(s) in {}", errors.len(), args.scenario.display());
            Ok(USAGE)
        }
    }
}
