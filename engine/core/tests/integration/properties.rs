//! The property macros of a Rust pipeline: each evaluation is a `property` record on the
//! tape and folds into the run's summary; an `always` false fails the run at once, named; a
//! `sometimes` no seed of a `check_seeds` sweep hits fails the sweep, named.

use simtape::tape::{RecordKind, TapeReader};
use simtape::testing::{sweep, unmet_properties, SeedOverride};
use simtape::Sim;

/// A pipeline that draws a delay below 10 and evaluates its properties on it.
fn run(seed: u64, slow_at: u64) -> Result<simtape::RunSummary, String> {
    let mut builder = Sim::builder();
    builder.seed(seed).tape_in_memory();
    let sim = builder.build().unwrap();
    sim.run(move |host| async move {
        let delay = host.rng("jitter").below(10);
        simtape::sometimes!(delay >= slow_at, "a slow answer");
        simtape::always!(delay < 10, "the delay stays under 10");
        if delay == 11 {
            simtape::unreachable!("a delay past its bound");
        }
        simtape::reachable!("the answer is read");
    })
    .map(|report| report.summary)
    .map_err(|error| error.error.to_string())
}

#[test]
fn evaluations_are_on_the_tape_and_in_the_summary() {
    let summary = run(3, 0).unwrap();
    let names: Vec<(&str, bool, u64)> = summary
        .properties
        .iter()
        .map(|p| (p.name.as_str(), p.hit, p.times))
        .collect();
    assert_eq!(
        names,
        [
            ("a slow answer", true, 1),
            ("the delay stays under 10", true, 1),
            ("the answer is read", true, 1)
        ]
    );
    let tape = summary.tape.unwrap().memory.unwrap();
    let mut reader = TapeReader::new(&tape[..]).unwrap();
    let mut recorded = 0;
    while let Some(record) = reader.next_record().unwrap() {
        if record.kind == RecordKind::Request && reader.actor_name(record.actor) == "engine" {
            let payload = reader.resolve(&record).unwrap();
            let (what, (name, kind, _)): (String, (String, String, bool)) =
                rmp_serde::from_slice(&payload).unwrap();
            assert_eq!(what, "property");
            assert!(!name.is_empty() && !kind.is_empty());
            recorded += 1;
        }
    }
    assert_eq!(recorded, 3);
}

#[test]
fn an_always_false_fails_the_run_naming_it() {
    let mut builder = Sim::builder();
    builder.seed(1);
    let error = builder
        .build()
        .unwrap()
        .run(|_host| async move {
            simtape::always!(1 + 1 == 3, "arithmetic holds");
        })
        .unwrap_err();
    let message = error.error.to_string();
    assert!(
        message.contains("property \"arithmetic holds\" (always) failed"),
        "{message}"
    );
}

#[test]
fn a_sometimes_no_seed_hits_fails_the_sweep_naming_it() {
    let all = SeedOverride::default();
    // Delays are below 10: "at least 10" is never hit; "at least 5" is, by some seed.
    sweep(0..20, &all, |seed| run(seed, 10).map(drop)).unwrap();
    let unmet = unmet_properties().expect("a never-hit sometimes");
    assert!(
        unmet.starts_with("sometimes property \"a slow answer\" never hit in 20 run(s)"),
        "{unmet}"
    );
    sweep(0..20, &all, |seed| run(seed, 5).map(drop)).unwrap();
    assert_eq!(unmet_properties(), None);
}
