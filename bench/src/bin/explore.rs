//! `explore`: runs to the first failure of the rare-failure scenario (bench/data/explore),
//! uniform seeds against swarm runs against guided exploration, median over exploration
//! seeds (`simtape_bench::explore`).
//!
//! ```text
//! cargo run --release -p simtape-bench --bin explore                # 5 seeds, up to 200,000 runs each, rate over 200,000 seeds
//! cargo run --release -p simtape-bench --bin explore -- 3 20000 1   # a quicker look
//! ```
//!
//! Exits 0 after a complete run (a missed bar is reported, not fatal), 2 on a usage error.

use std::process::ExitCode;

use simtape_bench::explore::{self, GUIDED_GAIN_MIN};
use simtape_eval::explore::Strategy;

/// A run allocates and frees many small objects, as in the `simtape` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut number = |default: u64| match args.next() {
        None => Some(default),
        Some(text) => text.parse::<u64>().ok().filter(|n| *n > 0),
    };
    let (Some(seeds), Some(max_runs), Some(rate_runs)) =
        (number(5), number(200_000), number(200_000))
    else {
        eprintln!("usage: explore [SEEDS] [MAX_RUNS] [RATE_RUNS] (positive integers)");
        return ExitCode::from(2);
    };
    let eval = match explore::load() {
        Ok(eval) => eval,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    println!(
        "rare failure ({}): runs to the first failure, median of {seeds} exploration seeds (at most {max_runs} runs each)",
        explore::rare_path().display()
    );
    println!(
        "| strategy | runs to first failure, by seed | median runs | median wall | uniform ÷ this |"
    );
    println!("|---|---|---:|---:|---:|");
    let mut uniform = None;
    let mut guided = None;
    let (mut made, mut wall, mut points) = (0, std::time::Duration::ZERO, Vec::new());
    for strategy in [Strategy::Uniform, Strategy::Swarm, Strategy::Guided] {
        let hunts: Vec<_> = (0..seeds)
            .map(|seed| explore::hunt(&eval, strategy, seed, max_runs))
            .collect();
        for hunt in &hunts {
            made += hunt.made;
            wall += hunt.wall;
            points.push(hunt.points);
        }
        let (runs, wall) = explore::median(&hunts, max_runs);
        let by_seed: Vec<String> = hunts
            .iter()
            .map(|h| h.runs.map_or(format!(">{max_runs}"), |r| r.to_string()))
            .collect();
        let base = *uniform.get_or_insert(runs);
        if strategy == Strategy::Guided {
            guided = Some(runs);
        }
        println!(
            "| {} | {} | {runs} | {:.2} s | {:.1}× |",
            strategy.name(),
            by_seed.join(", "),
            wall.as_secs_f64(),
            base as f64 / runs.max(1) as f64
        );
    }
    let started = std::time::Instant::now();
    let failed = explore::failures_in(&eval, rate_runs);
    println!(
        "uniform seeds 0..{rate_runs}: {failed} fail ({}), in {:.1} s",
        match failed {
            0 => "none".to_string(),
            n => format!("about 1 in {}", rate_runs / n),
        },
        started.elapsed().as_secs_f64()
    );
    let per_run = wall.as_secs_f64() / made.max(1) as f64;
    points.sort_unstable();
    let median_points = points[points.len() / 2];
    println!(
        "cost: one run (a fork is one run) {:.0} µs; explain --forks 20 on a first failing run \
         ({median_points} points, median) is {} runs, about {:.2} s",
        per_run * 1e6,
        20 * median_points,
        per_run * (20 * median_points) as f64
    );
    let gain = uniform.unwrap_or(0) / guided.unwrap_or(1).max(1);
    println!(
        "bar: guided exploration finds it in at least {GUIDED_GAIN_MIN}× fewer runs than uniform seeds: {} ({gain}×)",
        if gain >= GUIDED_GAIN_MIN { "PASS" } else { "MISS" }
    );
    ExitCode::SUCCESS
}
