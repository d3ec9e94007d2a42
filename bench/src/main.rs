//! `simtape-bench`: runs every workload on every framework in interleaved rounds and prints
//! the median events per second, the ratio to tokio, and the issue's bars.
//!
//! ```text
//! cargo run --release -p simtape-bench -- --rounds 5 --json bench.json
//! cargo run --release -p simtape-bench -- --size small --only W1,W2
//! ```
//!
//! Exits 0 after a complete run (bars that miss are reported, not fatal), 1 when a run did
//! not do its workload's work or the JSON could not be written, 2 on a usage error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use simtape_bench::frameworks::Framework;
use simtape_bench::report;
use simtape_bench::runner::{self, Plan};
use simtape_bench::wasi;
use simtape_bench::workloads::{Size, Workload, SEED};

/// Benchmarks simtape against tokio and nexosim on the reference workloads.
#[derive(Debug, Parser)]
#[command(name = "simtape-bench")]
struct Args {
    /// Rounds; every round runs every case once, and the report takes the median.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// `full` (1M events) or `small` (a quick smoke run).
    #[arg(long, default_value = "full")]
    size: Size,
    /// Also writes the table as a JSON array to this file.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Runs only these workloads, comma-separated (W1, W1ms, W2, W3, W4).
    #[arg(long, value_delimiter = ',', value_name = "W1,W2")]
    only: Vec<Workload>,
    /// Runs only these frameworks, comma-separated (simtape, simtape+tape, tokio, nexosim);
    /// ratios need tokio in the list.
    #[arg(long, value_delimiter = ',', value_name = "simtape,tokio")]
    frameworks: Vec<Framework>,
    /// Timed runs of the `wasi` workload (the cached 24 h sleeper guest); 0 skips it.
    #[arg(long, default_value_t = 50)]
    wasi_runs: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.rounds == 0 {
        eprintln!("error: --rounds must be at least 1");
        return ExitCode::from(2);
    }
    let plan = Plan {
        size: args.size,
        rounds: args.rounds,
        workloads: if args.only.is_empty() {
            Workload::ALL.to_vec()
        } else {
            args.only.clone()
        },
        frameworks: if args.frameworks.is_empty() {
            Framework::ALL.to_vec()
        } else {
            args.frameworks.clone()
        },
    };
    println!("seed={SEED:#x} size={:?} rounds={}", plan.size, plan.rounds);
    let tape_dir = std::env::temp_dir().join(format!("simtape-bench-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&tape_dir) {
        eprintln!(
            "error: cannot create the tape directory {}: {e}",
            tape_dir.display()
        );
        return ExitCode::FAILURE;
    }
    let result = runner::run(&plan, &tape_dir, |round, case, host_time| {
        let (round, rounds, seconds) = (round + 1, plan.rounds, host_time.as_secs_f64());
        eprintln!(
            "round {round}/{rounds} {:<20} {seconds:>8.4} s",
            case.to_string()
        );
    });
    let _ = std::fs::remove_dir_all(&tape_dir);
    let measurements = match result {
        Ok(measurements) => measurements,
        Err(failure) => {
            eprintln!("error: {failure}");
            return ExitCode::FAILURE;
        }
    };
    let rows = report::rows(&measurements);
    println!();
    print!("{}", report::table(&rows));
    println!();
    print!("{}", report::render_bars(&report::bars(&rows)));
    if args.wasi_runs > 0 {
        match wasi::run(args.wasi_runs) {
            Ok(measurement) => {
                let fuel = measurement.fuel.first().copied().unwrap_or(0);
                eprintln!(
                    "wasi: {} runs, median {:.3} ms, fuel {fuel}",
                    args.wasi_runs,
                    measurement.median_ms()
                );
                print!("{}", report::render_bars(&wasi::bars(&measurement)));
            }
            Err(failure) => {
                eprintln!("error: wasi workload: {failure}");
                return ExitCode::FAILURE;
            }
        }
    }
    match args.json {
        Some(path) => write_json(&path, &rows),
        None => ExitCode::SUCCESS,
    }
}

fn write_json(path: &Path, rows: &[report::Row]) -> ExitCode {
    let text = serde_json::to_string_pretty(rows).expect("rows always serialise");
    match std::fs::write(path, text + "\n") {
        Ok(()) => {
            println!("\nwrote {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
