//! The benchmark's W3 (bench/README.md) at full size, without the benchmark: 100,000 tasks
//! spawned, each sleeps once for 1..=1000 µs and ends, all joined by the main task.
//!
//! It pins the run's fingerprint (the benchmark prints the same one), so a change to the
//! spawn, exit or timer path that alters the record stream fails here. It is also the quick
//! way to count W3's instructions without building the benchmark (wasmtime):
//! `cargo test --release -p simtape --test fan_out --no-run`, then run the binary it names
//! under `valgrind --tool=callgrind`.

use std::time::Duration;

use simtape::limits::Limits;
use simtape::Sim;

const SEED: u64 = 0x5EED;
const PHI: u64 = 0x9E37_79B9_7F4A_7C15;

/// Task `task`'s first draw, `1..=1000`, as the benchmark's `SplitMix64::for_task` draws it.
fn draw(task: u64) -> u64 {
    let mut z = (SEED ^ task.wrapping_mul(PHI)).wrapping_add(PHI);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    1 + (z ^ (z >> 31)) % 1000
}

fn fan_out(tasks: u64, tape: Option<&std::path::Path>) -> simtape::RunReport<()> {
    let mut builder = Sim::builder();
    builder.limits(Limits {
        events_max: u64::MAX,
        ..Limits::default()
    });
    match tape {
        Some(path) => builder.tape(path),
        None => builder.no_tape(),
    };
    builder
        .build()
        .unwrap()
        .run(move |_host| async move {
            let handles: Vec<_> = (0..tasks)
                .map(|task| {
                    simtape::spawn("fan_out", async move {
                        simtape::time::sleep(Duration::from_micros(draw(task))).await;
                    })
                })
                .collect();
            for handle in handles {
                handle.await.expect("no task is aborted");
            }
        })
        .unwrap()
}

fn assert_w3(report: &simtape::RunReport<()>) {
    assert_eq!(report.summary.events, 100_000);
    assert_eq!(report.summary.end_ns, 1_000_000);
    assert_eq!(
        format!("{:016x}", report.summary.fingerprint),
        "039fd20c2c906bb6"
    );
}

#[test]
fn w3_tape_off_keeps_its_fingerprint() {
    // Goal: W3's record stream (100,000 spawns, wakes and exits) is the benchmark's, bit for
    // bit, without a tape.
    assert_w3(&fan_out(100_000, None));
}

#[test]
fn w3_tape_on_keeps_its_fingerprint() {
    // Goal: the same with the tape streamed to a file.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fan-out");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w3.tape");
    let report = fan_out(100_000, Some(&path));
    assert_w3(&report);
    let records = report.summary.tape.as_ref().map(|tape| tape.record_count);
    assert_eq!(
        records,
        Some(300_006),
        "the same records in the same number"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
