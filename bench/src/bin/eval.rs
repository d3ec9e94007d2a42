//! `eval`: the reference eval scenario's bars (bench/data/reference): runs per second on one
//! thread with the tape on, and a sweep on 2 threads against 1 (`simtape_bench::scenario`).
//!
//! ```text
//! cargo run --release -p simtape-bench --bin eval               # 2,000 runs × 5 rounds
//! cargo run --release -p simtape-bench --bin eval -- 200 1      # a quick smoke run
//! ```
//!
//! It allocates through mimalloc, as the `simtape` binary that runs users' sweeps does (the
//! executor workloads of the main bench keep the system allocator for every framework, so
//! their comparison is unchanged). Exits 0 after a complete run (a missed bar is reported,
//! not fatal), 1 when a run did not pass or changed its fingerprint, 2 on a usage error.

use std::process::ExitCode;

use simtape_bench::{report, scenario};

/// A run allocates and frees many small objects (messages, records, JSON values).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut number = |default: u64| match args.next() {
        None => Some(default),
        Some(text) => text.parse::<u64>().ok().filter(|n| *n > 0),
    };
    let (Some(runs), Some(rounds)) = (number(2_000), number(5)) else {
        eprintln!("usage: eval [RUNS] [ROUNDS] (positive integers)");
        return ExitCode::from(2);
    };
    let rounds = usize::try_from(rounds).unwrap_or(usize::MAX);
    match scenario::measure(runs, rounds) {
        Ok(measurement) => {
            println!(
                "reference scenario: {} runs/round, median {:.0} µs/run, {} records and {} tape bytes per run, sweep 2 jobs {:.2}× 1 job",
                measurement.runs,
                measurement.run_us(),
                measurement.records_per_run,
                measurement.tape_bytes_per_run,
                measurement.sweep_speedup()
            );
            print!("{}", report::render_bars(&scenario::bars(&measurement)));
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("error: reference scenario: {failure}");
            ExitCode::FAILURE
        }
    }
}
