//! Times the fuzz targets over their corpus, without AFL: `cargo run --release -p
//! simtape-fuzz-targets --example timing [TARGET...] [-- ROUNDS]` prints, per target, the
//! microseconds one execution takes on average (the first execution, which loads a
//! target's fixtures, apart). For profiling a target (`perf record` on this binary) and
//! comparing its speed before and after a change (docs/fuzzing.md).

use std::time::Instant;

use simtape_fuzz_targets::{repo, target, TARGETS};

fn main() {
    let mut names = Vec::new();
    let mut rounds = 200usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--" => {
                rounds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("-- ROUNDS (a number)")
            }
            _ => names.push(arg),
        }
    }
    if names.is_empty() {
        names = TARGETS.iter().map(|t| t.0.to_string()).collect();
    }
    println!(
        "{:<16} {:>6} {:>12} {:>12}",
        "target", "files", "first µs", "µs/exec"
    );
    for name in names {
        let run = target(&name).unwrap_or_else(|| panic!("no target {name}"));
        let dir = repo().join("fuzz/corpus").join(&name);
        let mut inputs: Vec<Vec<u8>> = std::fs::read_dir(&dir)
            .expect("a corpus directory")
            .map(|entry| std::fs::read(entry.expect("an entry").path()).expect("a file"))
            .collect();
        inputs.sort();
        let start = Instant::now();
        run(&inputs[0]);
        let first = start.elapsed();
        let start = Instant::now();
        for _ in 0..rounds {
            for input in &inputs {
                run(input);
            }
        }
        let each = start.elapsed().as_secs_f64() * 1e6 / (rounds * inputs.len()) as f64;
        println!(
            "{:<16} {:>6} {:>12.0} {:>12.1}",
            name,
            inputs.len(),
            first.as_secs_f64() * 1e6,
            each
        );
    }
}
