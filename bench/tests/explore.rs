//! The explore bench at small size, under `cargo test`: guided exploration finds the rare
//! failure (three faults in one run) within a few hundred runs, the same way twice, where
//! uniform seeds miss it over ten times as many runs.

use simtape_bench::explore;
use simtape_eval::explore::Strategy;

#[test]
fn guided_exploration_finds_the_rare_failure_far_sooner_and_the_same_way_twice() {
    let eval = explore::load().expect("the rare-failure scenario loads");
    let guided = explore::hunt(&eval, Strategy::Guided, 0, 2_000);
    let runs = guided.runs.expect("guided exploration finds it");
    assert!(runs <= 400, "found at run {runs}");
    assert!(guided.points > 3, "its first failing run took decisions");
    let again = explore::hunt(&eval, Strategy::Guided, 0, 2_000);
    assert_eq!((again.runs, again.made), (guided.runs, guided.made));
    let uniform = explore::hunt(&eval, Strategy::Uniform, 0, runs * explore::GUIDED_GAIN_MIN);
    assert_eq!(
        uniform.runs, None,
        "uniform seeds miss it over 10× the runs"
    );
    // The failure is real for plain seeds too, only rare: no failure in the first runs.
    assert_eq!(explore::failures_in(&eval, 50), 0);
}
