//! `sandbox`: the agent sandbox's cost, side by side in one run (bench/README.md, "The
//! agent sandbox"): a trivial program (`/bin/true`) in the sandbox and as a plain child, and
//! Claude Code's scenario under `simtape run` in its sandbox, with `--no-sandbox`, and against
//! a bare mock, at 1 and 2 jobs.
//!
//! ```text
//! cargo run --release -p simtape-bench --bin sandbox -- --json sandbox.json
//! cargo run --release -p simtape-bench --bin sandbox -- --trivial 20 --runs 1
//! ```
//!
//! Claude Code comes from `npm ci --prefix engine/cli/tests/peers/agents` (or
//! SIMTAPE_AGENT_PEERS_DIR); without it that part is skipped with a notice. Exits 0 after a
//! complete run (a missed bar is reported, not fatal), 1 when a measurement failed, 2 on a
//! usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use serde_json::json;
use simtape_bench::{claude_code, report, sandbox};

/// As the `simtape` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    about = "The agent sandbox's cost: a trivial program and Claude Code, with and without it"
)]
struct Args {
    /// Runs of the trivial program each way.
    #[arg(long, default_value_t = 200)]
    trivial: usize,
    /// Claude Code runs per pool (each side, each pool size); 0 skips that part.
    #[arg(long, default_value_t = 10)]
    runs: u64,
    /// Rounds of the Claude Code pools (the median is reported).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Also write the figures as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.trivial == 0 || args.rounds == 0 {
        eprintln!("error: --trivial and --rounds must be positive");
        return ExitCode::from(2);
    }
    let trivial = match sandbox::measure(args.trivial) {
        Ok(trivial) => trivial,
        Err(failure) => {
            eprintln!("error: the trivial program: {failure}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", sandbox::table(&trivial));
    let mut bars = vec![sandbox::bar(&trivial)];
    let rates = match claude_code::measure_if_installed(args.runs, args.rounds) {
        Ok(rates) => rates,
        Err(failure) => {
            eprintln!("error: Claude Code runs: {failure}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(rates) = &rates {
        println!();
        print!("{}", claude_code::table(rates));
        bars.extend(claude_code::bars(rates));
    }
    println!();
    print!("{}", report::render_bars(&bars));
    if let Some(path) = &args.json {
        let figures = json!({
            "trivial": trivial,
            "claude_code": rates.as_ref().map(|rates| rates.rows.iter().map(|row| json!({
                "side": row.side,
                "jobs": row.jobs,
                "runs": row.runs,
                "runs_per_min": row.runs_per_min(),
                "seconds": row.seconds,
                "sandbox_pct": rates.sandbox_pct(row.jobs),
            })).collect::<Vec<_>>()),
            "bars": bars.iter().map(|bar| json!({
                "label": bar.label, "measured": bar.measured, "pass": bar.pass,
            })).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&figures).expect("figures serialize");
        if let Err(error) = std::fs::write(path, text + "\n") {
            eprintln!("error: cannot write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
