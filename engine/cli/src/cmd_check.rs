//! `simtape check`: validate a scenario and report every problem.

use simtape_agent::EvalScenario;

use crate::args::CheckArgs;
use crate::exit::{CliResult, Outcome};

pub(crate) fn run(args: &CheckArgs) -> CliResult {
    match EvalScenario::check_all(&args.scenario) {
        Ok(eval) => {
            let scenario = eval.scenario();
            println!(
                "ok: scenario {} ({}), seeds {:?}",
                scenario.name(),
                args.scenario.display(),
                scenario.seeds()
            );
            if let Some(root) = scenario.fs_root_outside() {
                println!(
                    "note: the [fs] root {} is outside the scenario's directory (allow_outside = true): \
                     the agent can read everything under it",
                    root.display()
                );
            }
            Ok(Outcome::Success)
        }
        Err(errors) => {
            for error in &errors {
                eprintln!("{error}");
            }
            eprintln!("{} problem(s) in {}", errors.len(), args.scenario.display());
            Ok(Outcome::Invalid)
        }
    }
}
