//! The reference scenario at small size, under `cargo test`: every run passes, and a sweep
//! gives the same fingerprints on 1 and 2 threads, so the benchmark cannot rot.

use simtape_bench::scenario;

#[test]
fn the_reference_scenario_passes_and_sweeps_alike_on_any_pool() {
    let eval = scenario::load().expect("the reference scenario loads");
    let batch = scenario::run_batch(&eval, 8).expect("every run passes");
    assert_eq!(batch.fingerprints.len(), 8);
    // Seeds draw their own latencies: the runs differ.
    assert_ne!(batch.fingerprints[0], batch.fingerprints[1]);
    // 21 model calls and 40 tool calls each leave records; a run far below that did less.
    assert!(
        batch.records / 8 > 200,
        "{} records per run",
        batch.records / 8
    );
    for jobs in [1, 2] {
        assert_eq!(
            scenario::sweep(&eval, 8, jobs).expect("every run passes"),
            batch.fingerprints,
            "{jobs} jobs"
        );
    }
}

#[test]
fn the_measurement_reports_both_bars() {
    let measurement = scenario::measure(4, 1).expect("the reference scenario runs");
    let bars = scenario::bars(&measurement);
    assert_eq!(bars.len(), 2);
    assert!(bars.iter().all(|bar| bar.measured.is_some_and(|m| m > 0.0)));
    // Each bar also shows its figure on the process CPU time.
    assert!(bars
        .iter()
        .all(|bar| bar.measured_cpu.is_some_and(|m| m > 0.0)));
    assert!(measurement.records_per_run > 200);
    assert!(measurement.tape_bytes_per_run > 0);
}
