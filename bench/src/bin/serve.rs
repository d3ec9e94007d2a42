//! `serve`: `simtape serve`'s bars (bench/README.md, "simtape serve"): the round trip of a
//! 50 KB Claude-Code-shaped request, JSON and SSE, at settle 0 and the default window, beside
//! aimock; and Claude Code's runs per minute under simtape and against a bare mock, at 1 and
//! 2 jobs.
//!
//! ```text
//! cargo run --release -p simtape-bench --bin serve -- --json serve.json
//! cargo run --release -p simtape-bench --bin serve -- --requests 50 --runs 2 --rounds 1
//! ```
//!
//! aimock comes from `npm ci --prefix engine/core/tests/peers`, Claude Code from
//! `npm ci --prefix engine/cli/tests/peers/agents` (or SIMTAPE_AGENT_PEERS_DIR); a missing
//! peer skips its part with a notice. Exits 0 after a complete run (a missed bar is
//! reported, not fatal), 1 when a measurement failed, 2 on a usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use serde_json::json;
use simtape_bench::{claude_code, report, serve};

/// As the `simtape` binary, which serves agents.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    about = "simtape serve: round trips beside aimock, Claude Code runs/min beside a bare mock"
)]
struct Args {
    /// Measured round trips per server and answer kind (JSON, SSE).
    #[arg(long, default_value_t = 500)]
    requests: usize,
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
    if args.requests == 0 || args.rounds == 0 {
        eprintln!("error: --requests and --rounds must be positive");
        return ExitCode::from(2);
    }
    let with_aimock = match serve::aimock_bin() {
        Ok(_) => true,
        Err(why) => {
            eprintln!("skipping aimock: {why}");
            false
        }
    };
    let trips = match serve::measure(args.requests, with_aimock) {
        Ok(trips) => trips,
        Err(failure) => {
            eprintln!("error: serve round trip: {failure}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", serve::table(&trips));
    for settle_ms in [0, simtape_serve::SETTLE_DEFAULT.as_millis() as u64] {
        let server = serve::Server::Simtape { settle_ms };
        if let Some(ratio) = trips.sse_overhead(server) {
            println!("{}: SSE p50 / JSON p50 = {ratio:.2}", server.name());
        }
    }
    if let Some(ratio) = trips.sse_overhead(serve::Server::Aimock) {
        println!("aimock: SSE p50 / JSON p50 = {ratio:.2}");
    }
    let mut bars = serve::bars(&trips);
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
            "round_trips": trips.rows.iter().map(|row| json!({
                "server": row.server.name(),
                "stream": row.stream,
                "request_bytes": row.request_bytes,
                "round_trips": row.round_trips_us.len(),
                "p50_ms": row.p50_ms(),
                "p99_ms": row.p99_ms(),
                "ratio_to_aimock_p50": trips.ratio_to_aimock(row.server, row.stream),
            })).collect::<Vec<_>>(),
            "claude_code": rates.as_ref().map(|rates| rates.rows.iter().map(|row| json!({
                "side": row.side,
                "jobs": row.jobs,
                "runs": row.runs,
                "runs_per_min": row.runs_per_min(),
                "seconds": row.seconds,
                "overhead_pct": rates.overhead_pct(row.jobs),
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
