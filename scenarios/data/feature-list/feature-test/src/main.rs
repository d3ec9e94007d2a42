//! `feature-test TEST…`: runs each Rhai test script (a path in the guest's root, the run's
//! filesystem) in order and prints `ok NAME` or `FAILED NAME: why`; exits 0 when every test
//! passed, 1 when one failed, 2 on bad usage. A test imports the library with
//! `import "calc" as calc;` (the file `calc.rhai` in the root) and throws when a check fails.

use std::process::ExitCode;

fn main() -> ExitCode {
    let tests: Vec<String> = std::env::args().skip(1).collect();
    if tests.is_empty() {
        eprintln!("usage: feature-test TEST.rhai…");
        return ExitCode::from(2);
    }
    let engine = rhai::Engine::new();
    let mut failed = 0;
    for test in &tests {
        let outcome = std::fs::read_to_string(test)
            .map_err(|error| format!("cannot read it: {error}"))
            .and_then(|script| engine.run(&script).map_err(|error| error.to_string()));
        match outcome {
            Ok(()) => println!("ok {test}"),
            Err(why) => {
                failed += 1;
                println!("FAILED {test}: {why}");
                eprintln!("FAILED {test}: {why}");
            }
        }
    }
    println!("{} passed, {failed} failed", tests.len() - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
