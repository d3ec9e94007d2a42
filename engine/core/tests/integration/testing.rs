//! `cargo test` support: `check_seeds` with `()` and `Result` checks and panics, the
//! `#[simtape::test]` attribute, the seed overrides and the tapes a failing seed keeps.

use std::path::PathBuf;
use std::time::Duration;

use simtape::tape::verify_path;
use simtape::testing::{check_seeds, run_test_with, sweep, SeedOverride, TestSpec};
use simtape::Host;

fn tempdir(name: &str) -> PathBuf {
    crate::tempdir("testing-tests", name)
}

/// A pipeline whose delay is drawn from the seed: 0 to 5.1 s of virtual time.
async fn wait_a_while(host: Host) -> u64 {
    let waited_ms = host.rng("latency").below(5_100);
    host.sleep(Duration::from_millis(waited_ms)).await;
    waited_ms
}

/// Runs `wait_a_while` for `seed` and returns how long it waited.
fn waited_ms(seed: u64) -> u64 {
    let mut builder = simtape::Sim::builder();
    builder.seed(seed);
    builder.build().unwrap().run(wait_a_while).unwrap().output
}

/// The first seed that waits `ms_min` or more.
fn first_seed_waiting(ms_min: u64) -> u64 {
    (0..).find(|&seed| waited_ms(seed) >= ms_min).unwrap()
}

#[test]
fn a_check_returning_unit_runs_every_seed() {
    // Goal: a `()` closure compiles and runs once per seed; `Result` closures still work.
    let mut seen = Vec::new();
    let ran = sweep(0..5, &SeedOverride::default(), |seed| seen.push(seed));
    assert_eq!((ran.unwrap(), seen), (5, vec![0, 1, 2, 3, 4]));
    let failed = sweep(0..5, &SeedOverride::default(), |seed| {
        if seed < 3 {
            Ok(())
        } else {
            Err(format!("seed {seed} is too big"))
        }
    });
    let failed = failed.unwrap_err();
    assert_eq!(
        (failed.seed, failed.message.as_str()),
        (3, "seed 3 is too big")
    );
    assert!(failed
        .to_string()
        .starts_with("seed 3 failed: seed 3 is too big\n"));
}

#[test]
fn a_plain_assert_in_the_check_names_the_seed_the_message_the_place_and_the_command() {
    // Goal: a panic in the check fails like an Err: seed, message, location, replay command.
    let slow = first_seed_waiting(5_000);
    let mut line = 0;
    let failure = sweep(0..200, &SeedOverride::default(), |seed| {
        let waited = waited_ms(seed);
        line = line!() + 1;
        assert!(waited < 5_000, "waited {waited} ms");
    });
    let message = failure.unwrap_err().to_string();
    let expected = format!(
        "seed {slow} failed: waited {} ms\n  panicked at: {}:{line}:9\n  replay it alone: \
         SIMTAPE_SEED={slow} cargo test testing::{} -- --exact",
        waited_ms(slow),
        file!(),
        "a_plain_assert_in_the_check_names_the_seed_the_message_the_place_and_the_command",
    );
    assert_eq!(message, expected);
}

#[test]
fn a_task_panic_unwrapped_in_the_check_names_both_places() {
    // Goal: the assert inside the simulation and the `unwrap` that re-raised it are both named.
    let failure = sweep(0..10, &SeedOverride::default(), |seed| {
        let mut builder = simtape::Sim::builder();
        builder.seed(seed);
        builder
            .build()
            .unwrap()
            .run(|host| async move { assert_ne!(host.seed(), 4, "seed four") })
            .unwrap();
    });
    let failure = failure.unwrap_err();
    assert_eq!(failure.panicked_at.len(), 2, "{failure:?}");
    let message = failure.to_string();
    assert!(
        message.starts_with("seed 4 failed: called `Result::unwrap()`"),
        "{message}"
    );
    assert!(message.contains("TaskPanicked"), "{message}");
    assert!(message.contains("seed four"), "{message}");
    let places = format!("panicked at: {}:", file!());
    let places_at = message.find(&places).expect(&message);
    let places_line = message[places_at..].lines().next().unwrap();
    assert_eq!(places_line.matches(file!()).count(), 2, "{message}");
    assert!(places_line.contains(", then "), "{message}");
}

#[test]
#[should_panic(expected = "seed 2 failed: too big\n  replay it alone: SIMTAPE_SEED=2")]
fn check_seeds_panics_with_the_report() {
    // Goal: the wrapper turns the first failure into a panic carrying the whole report.
    check_seeds(0..5, |seed| if seed < 2 { Ok(()) } else { Err("too big") });
}

/// The spec `#[simtape::test]` would build for a test named `testing::NAME`, with its tapes
/// in `dir`.
fn spec<'a>(path: &'a str, tape: &'a str) -> TestSpec<'a> {
    TestSpec {
        path,
        manifest_dir: env!("CARGO_MANIFEST_DIR"),
        tape: Some(tape),
        configure: None,
    }
}

async fn within_five_seconds(host: Host) {
    let waited_ms = wait_a_while(host.clone()).await;
    assert!(host.now_ns() < 5_000_000_000, "waited {waited_ms} ms");
}

#[test]
fn a_failing_simulated_test_keeps_only_its_tape_and_a_replay_writes_the_same_bytes() {
    // Goal: the failure names seed, command and tape; only that seed's tape is written, and
    // replaying the seed alone writes identical bytes.
    let dir = tempdir("kept-tape");
    let template = dir.join("{name}-{seed}.tape").display().to_string();
    let spec = spec("integration::testing::slow", &template);
    let slow = first_seed_waiting(5_000);
    let failure =
        run_test_with(&spec, 0..200, &SeedOverride::default(), within_five_seconds).unwrap_err();
    let tape = dir.join(format!("testing__slow-{slow}.tape"));
    assert_eq!(failure.tape.as_ref().unwrap().as_ref().unwrap(), &tape);
    let message = failure.to_string();
    let expected_start = format!(
        "seed {slow} failed: task \"main\" (#1) panicked at t={}: waited {} ms\n  panicked at: ",
        simtape::time::format_ns(waited_ms(slow) * 1_000_000),
        waited_ms(slow),
    );
    assert!(message.starts_with(&expected_start), "{message}");
    let expected_end = format!(
        "\n  replay it alone: SIMTAPE_SEED={slow} cargo test testing::slow -- --exact\n  tape: {}",
        tape.display()
    );
    assert!(message.ends_with(&expected_end), "{message}");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "only the failing seed's tape is kept");
    let report = verify_path(&tape).unwrap();
    assert_eq!(report.header.seed, slow);
    assert!(
        report.footer.verdict.contains("panicked"),
        "{}",
        report.footer.verdict
    );

    let first = std::fs::read(&tape).unwrap();
    std::fs::remove_file(&tape).unwrap();
    let only = SeedOverride::parse(Some(&slow.to_string()), None).unwrap();
    let again = run_test_with(&spec, 0..200, &only, within_five_seconds).unwrap_err();
    assert_eq!(again.to_string(), message);
    assert_eq!(std::fs::read(&tape).unwrap(), first);
}

#[test]
fn an_err_or_a_deadlock_fails_the_seed_with_its_tape_and_no_panic_place() {
    // Goal: a returned Err and a run error (deadlock) fail like a panic, minus the location.
    let dir = tempdir("err-and-deadlock");
    let template = dir.join("{seed}.tape").display().to_string();
    let message = run_test_with(
        &spec("krate::err", &template),
        0..10,
        &SeedOverride::default(),
        |host: Host| async move {
            match host.seed() {
                6 => Err(format!("seed {} is unlucky", host.seed())),
                _ => Ok(()),
            }
        },
    )
    .unwrap_err()
    .to_string();
    let tape = dir.join("6.tape");
    let expected = format!(
        "seed 6 failed: seed 6 is unlucky\n  replay it alone: SIMTAPE_SEED=6 cargo test err \
         -- --exact\n  tape: {}",
        tape.display()
    );
    assert_eq!(message, expected);
    assert_eq!(verify_path(&tape).unwrap().footer.verdict, "ok");

    let deadlock = run_test_with(
        &spec("krate::stuck", &template),
        [3],
        &SeedOverride::default(),
        |_host: Host| async move {
            let (_sender, mut receiver) = simtape::sync::channel::<u8>("never");
            receiver.recv().await;
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        deadlock.starts_with("seed 3 failed: deadlock at t=0"),
        "{deadlock}"
    );
    assert!(!deadlock.contains("panicked at"), "{deadlock}");
    assert!(verify_path(&dir.join("3.tape"))
        .unwrap()
        .footer
        .verdict
        .contains("deadlock"));
}

#[test]
fn the_overrides_pick_the_seeds_a_simulated_test_runs() {
    // Goal: SIMTAPE_SEEDS replaces the attribute's seeds and SIMTAPE_SEED narrows to one.
    let dir = tempdir("overrides");
    let template = dir.join("{seed}.tape").display().to_string();
    let spec = spec("krate::count", &template);
    let pass = |_host: Host| async {};
    let range = SeedOverride::parse(None, Some("100..130")).unwrap();
    assert_eq!(run_test_with(&spec, 0..5, &range, pass).unwrap(), 30);
    let one = SeedOverride::parse(Some("9"), Some("100..130")).unwrap();
    assert_eq!(run_test_with(&spec, 0..5, &one, pass).unwrap(), 1);
    assert_eq!(
        run_test_with(&spec, 0..5, &SeedOverride::default(), pass).unwrap(),
        5
    );
    let seen = run_test_with(&spec, 0..5, &one, |host: Host| async move {
        assert_eq!(host.seed(), 7);
    });
    assert_eq!(seen.unwrap_err().seed, 9);
}

#[simtape::test(seeds = 40..60)]
async fn the_attribute_runs_the_body_on_each_seed_of_its_range(host: Host) {
    // Goal: the generated test hands the body a Host of each seed in the range.
    assert!((40..60).contains(&host.seed()), "seed {}", host.seed());
    within_five_seconds_or_more(host).await;
}

async fn within_five_seconds_or_more(host: Host) {
    let waited_ms = wait_a_while(host.clone()).await;
    assert_eq!(host.now_ns(), waited_ms * 1_000_000);
}

fn start_in_march(builder: &mut simtape::Builder) {
    builder.start_at("2026-03-01T12:00:00Z").unwrap();
}

#[simtape::test(seeds = [5, 8], builder = start_in_march)]
async fn the_attribute_configures_each_run_with_the_builder_function(
    host: Host,
) -> Result<(), String> {
    // Goal: `builder = f` reaches every run; a body may return a Result.
    let march = simtape::time::parse_instant("2026-03-01T12:00:00Z").unwrap();
    match host.start_unix_ns() {
        start if start == march => Ok(()),
        other => Err(format!(
            "started at {}",
            simtape::time::format_instant(other)
        )),
    }
}

#[simtape::test(seeds = 0..200)]
#[should_panic(
    expected = "cargo test testing::the_attribute_fails_a_plain_assert_with_the_report -- --exact\n  tape: "
)]
async fn the_attribute_fails_a_plain_assert_with_the_report(host: Host) {
    // Goal: a plain assert! in the body fails the generated test with the replay command and
    // the kept tape (under the target directory's simtape/).
    within_five_seconds(host).await;
}

#[simtape::test]
async fn the_attribute_without_seeds_runs_the_default_range(host: Host) {
    // Goal: a bare attribute sweeps `SEEDS_DEFAULT`.
    assert!(simtape::testing::SEEDS_DEFAULT.contains(&host.seed()));
}
