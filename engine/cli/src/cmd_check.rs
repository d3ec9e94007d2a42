//! `simtape check`: validate a scenario and report every problem (as text, or `--json`).

use simtape_agent::EvalScenario;
use simtape_eval::run_json::{to_json_pretty, CheckJson, ProblemJson};

use crate::args::CheckArgs;
use crate::exit::{CliResult, Outcome};

pub(crate) fn run(args: &CheckArgs) -> CliResult {
    let checked = EvalScenario::check_all(&args.scenario);
    if args.json {
        let json = match &checked {
            Ok(eval) => CheckJson::valid(eval.scenario().name(), eval.scenario().seeds()),
            Err(errors) => CheckJson::invalid(
                errors
                    .iter()
                    .map(|e| ProblemJson {
                        file: e.file.display().to_string(),
                        line: e.line,
                        column: e.column,
                        field: e.field.clone(),
                        message: e.message.clone(),
                    })
                    .collect(),
            ),
        };
        println!("{}", to_json_pretty(&json));
        return Ok(outcome(checked.is_ok()));
    }
    let valid = checked.is_ok();
    match checked {
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
            // An agent program outside the sandbox is outside every policy of the scenario.
            if let Some(command) = &eval.eval().command {
                match command.sandbox {
                    simtape_agent::AgentSandbox::Off => println!(
                        "note: [agent] sandbox = \"off\": the program runs on the host, unconfined: \
                         [network] does not judge its connections, and its writes outside its \
                         copy of the project reach the host (docs/sandbox.md)"
                    ),
                    simtape_agent::AgentSandbox::On => println!(
                        "note: the agent program runs in simtape's sandbox: [network] judges its \
                         own connections too, and a refused one blocks the run (docs/sandbox.md)"
                    ),
                }
            }
            for warning in never_passing(&eval) {
                println!("warning: {warning}");
            }
        }
        Err(errors) => {
            for error in &errors {
                eprintln!("{error}");
            }
            eprintln!("{} problem(s) in {}", errors.len(), args.scenario.display());
        }
    }
    Ok(outcome(valid))
}

/// The `tool_called` verifiers that can never pass: each wants a tool no answer of the
/// fixture calls (an agent calls only the tools its model asks for). A fixture in record
/// mode, or one that does not load, is not judged here.
fn never_passing(eval: &EvalScenario) -> Vec<String> {
    use simtape::cap::llm::{Fixture, Outcome as Answer};
    let scenario = eval.scenario();
    let Some(path) = scenario.llm_fixture() else {
        return Vec::new();
    };
    let Ok(fixture) = Fixture::load(&path) else {
        return Vec::new();
    };
    let called: std::collections::BTreeSet<&str> = fixture
        .entries
        .iter()
        .filter_map(|entry| match &entry.outcome {
            Answer::Respond(alternatives) => Some(alternatives),
            Answer::Fail(_) => None,
        })
        .flatten()
        .flat_map(|alternative| alternative.response.tool_calls.iter())
        .map(|call| call.name.as_str())
        .collect();
    let verifiers = eval.eval().verify.iter();
    verifiers
        .filter_map(|verifier| match &verifier.check {
            simtape_agent::Check::ToolCalled {
                tool, called: true, ..
            } if !called.contains(tool.as_str()) => Some(format!(
                "verifier {:?} (line {}) can never pass: no answer of the fixture {} calls {tool}",
                verifier.name,
                verifier.line,
                path.display()
            )),
            _ => None,
        })
        .collect()
}

fn outcome(valid: bool) -> Outcome {
    if valid {
        Outcome::Success
    } else {
        Outcome::Invalid
    }
}
