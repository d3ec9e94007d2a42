//! The benchmark at small size, under `cargo test`: every workload on every framework must
//! fire exactly the events its draws define and end at exactly the virtual time they give,
//! so the benchmark cannot rot or quietly measure different work.

use std::path::{Path, PathBuf};

use simtape_bench::frameworks::{Framework, Outcome};
use simtape_bench::report;
use simtape_bench::runner::{self, Plan};
use simtape_bench::workloads::{
    Request, Shape, Size, SplitMix64, Workload, MICROSECOND_NS, MILLISECOND_NS, MIX_TIMEOUT_UNITS,
};

/// Returns a fresh directory for this test's tapes.
fn tape_dir(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("simtape-bench-test-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the temp dir is writable");
    dir
}

/// Runs `workload` at small size on `framework` and returns what it produced.
fn run_small(workload: Workload, framework: Framework, dir: &Path) -> Outcome {
    let path = dir.join(format!("{workload}.tape"));
    let outcome = framework.run(workload.shape(Size::Small), &path);
    let _ = std::fs::remove_file(&path);
    outcome
}

/// Returns the W1 end computed by hand: the longest task's sum of draws, rounded per sleep.
fn timers_end_ns(tasks: u64, sleeps: u64, unit_ns: u64, resolution_ns: u64) -> u64 {
    (0..tasks)
        .map(|task| {
            let mut stream = SplitMix64::for_task(task);
            let mut now = 0;
            for _ in 0..sleeps {
                let deadline = now + stream.draw() * unit_ns;
                now = deadline.div_ceil(resolution_ns) * resolution_ns;
            }
            now
        })
        .max()
        .expect("at least one task")
}

fn assert_workload_on_every_framework(
    workload: Workload,
    events: u64,
    exact_end_ns: u64,
    tokio_end_ns: u64,
) {
    let dir = tape_dir(workload.name());
    for framework in Framework::ALL {
        let outcome = run_small(workload, framework, &dir);
        let end_ns = if framework == Framework::Tokio {
            tokio_end_ns
        } else {
            exact_end_ns
        };
        assert_eq!(outcome.events, events, "{workload} on {framework}: events");
        assert_eq!(
            outcome.end_ns, end_ns,
            "{workload} on {framework}: virtual end"
        );
        assert_eq!(
            outcome.tape.is_some(),
            framework.tape(),
            "{workload} on {framework}: tape"
        );
        assert_eq!(outcome.fingerprint.is_some(), framework.name() == "simtape");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn splitmix64_matches_the_reference_sequence() {
    // Goal: our SplitMix64 is the published one (seed 1234567), so every framework's draws are the standard ones.
    let mut stream = SplitMix64::new(1_234_567);
    let first: Vec<u64> = (0..3).map(|_| stream.next_u64()).collect();
    assert_eq!(
        first,
        [
            6_457_827_717_110_365_317,
            3_203_168_211_198_807_973,
            9_817_491_932_198_370_423
        ]
    );
}

#[test]
fn full_size_expectations_are_pinned() {
    // Goal: the full-size figures the benchmark checks against are the ones the README quotes.
    let w1 = Workload::W1.shape(Size::Full).expected(1);
    assert_eq!((w1.events, w1.end_ns), (1_000_000, 61_734_000));
    let w1_tokio = Workload::W1.shape(Size::Full).expected(MILLISECOND_NS);
    assert_eq!(w1_tokio.end_ns, 100_000_000);
    let w2 = Workload::W2.shape(Size::Full).expected(1);
    assert_eq!((w2.events, w2.end_ns), (1_000_000, 1_000_000_000));
    let w3 = Workload::W3.shape(Size::Full).expected(1);
    assert_eq!((w3.events, w3.end_ns), (100_000, 1_000_000));
    let Shape::Mix(w4_shape) = Workload::W4.shape(Size::Full) else {
        panic!("W4 is the mix");
    };
    assert_eq!(w4_shape.tasks(), 10_000);
    let w4 = Workload::W4.shape(Size::Full).expected(1);
    assert_eq!((w4.events, w4.end_ns), W4_FULL);
    assert_eq!(
        Workload::W4.shape(Size::Full).expected(MILLISECOND_NS),
        w4,
        "tokio's ms wheel fires W4's ms deadlines exactly"
    );
}

/// W4 at full size: 16,000 sleeps plus the 4,075 timeouts that fire, and the virtual end (ns).
const W4_FULL: (u64, u64) = (20_075, 9_437_000_000);

#[test]
fn w1_runs_exactly_on_every_framework() {
    // Goal: 100 tasks × 20 µs-sleeps fire 2,000 events and end at the longest chain's sum.
    let exact = timers_end_ns(100, 20, MICROSECOND_NS, 1);
    let tokio = timers_end_ns(100, 20, MICROSECOND_NS, MILLISECOND_NS);
    assert_eq!(
        tokio,
        20 * MILLISECOND_NS,
        "tokio rounds every µs sleep up to 1 ms"
    );
    assert_workload_on_every_framework(Workload::W1, 2_000, exact, tokio);
}

#[test]
fn w1ms_runs_exactly_on_every_framework() {
    // Goal: W1's draws read as ms end at the same figure in ms on every framework, tokio too.
    let exact = timers_end_ns(100, 20, MILLISECOND_NS, 1);
    assert_eq!(exact, timers_end_ns(100, 20, MICROSECOND_NS, 1) * 1_000);
    assert_workload_on_every_framework(Workload::W1ms, 2_000, exact, exact);
}

#[test]
fn w2_runs_exactly_on_every_framework() {
    // Goal: 2,000 one-µs hops end at 2,000 µs (tokio: 2,000 ms, one rounded ms per hop).
    assert_workload_on_every_framework(
        Workload::W2,
        2_000,
        2_000 * MICROSECOND_NS,
        2_000 * MILLISECOND_NS,
    );
}

#[test]
fn w3_runs_exactly_on_every_framework() {
    // Goal: 1,000 one-shot tasks fire 1,000 events and end at the largest single draw.
    let exact = (0..1_000)
        .map(|task| SplitMix64::for_task(task).draw())
        .max()
        .unwrap()
        * MICROSECOND_NS;
    assert_workload_on_every_framework(Workload::W3, 1_000, exact, MILLISECOND_NS);
}

/// Returns W4's events and end by hand, one client after another: the client thinks, the
/// handler serves, and the timeout fires when the service outlasts it.
fn mix_by_hand(clients: u64, requests: u64, unit_ns: u64) -> (u64, u64, u64) {
    let (mut fired, mut end_ns) = (0, 0);
    for client in 0..clients {
        let mut stream = SplitMix64::for_task(client);
        let mut now = 0;
        for _ in 0..requests {
            let think = stream.draw();
            let service = 2 * stream.draw() - 1;
            assert_ne!(
                service, MIX_TIMEOUT_UNITS,
                "a reply never ties with its timeout"
            );
            fired += u64::from(service > MIX_TIMEOUT_UNITS);
            now += (think + service) * unit_ns;
        }
        end_ns = end_ns.max(now);
    }
    (2 * clients * requests + fired, fired, end_ns)
}

#[test]
fn w4_runs_exactly_on_every_framework() {
    // Goal: 50 clients × 4 requests (250 tasks) fire every think and service sleep and the
    // timeouts the draws say fire, and end where the slowest client's chain ends.
    let (events, fired, end_ns) = mix_by_hand(50, 4, MILLISECOND_NS);
    assert!(
        fired > 0 && fired < 200,
        "some timeouts fire and some are cancelled: {fired} of 200 fired"
    );
    let mut stream = SplitMix64::for_task(0);
    assert_eq!(
        Request::draw(&mut stream).think_units,
        SplitMix64::for_task(0).draw()
    );
    assert_workload_on_every_framework(Workload::W4, events, end_ns, end_ns);
}

#[test]
fn simtape_fingerprint_ignores_the_tape_and_sees_the_work() {
    // Goal: the tape mode leaves simtape's fingerprint alone, while different work changes it.
    let dir = tape_dir("fingerprint");
    let untaped = run_small(Workload::W1, Framework::Simtape, &dir);
    let taped = run_small(Workload::W1, Framework::SimtapeTape, &dir);
    let other = run_small(Workload::W1ms, Framework::Simtape, &dir);
    assert_eq!(untaped.fingerprint, taped.fingerprint);
    assert_ne!(untaped.fingerprint, other.fingerprint);
    let tape = taped.tape.expect("a taped run reports its tape");
    assert!(
        tape.records > 2_000,
        "every wake is a record, plus spawns and exits"
    );
    assert!(tape.bytes_per_record() > 1.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn runner_reports_every_case_with_ratios_and_bars() {
    // Goal: a two-round small run yields one checked row per case, tokio at 1.0×, and the
    // bars: six on the untaped run, two per workload on the taped run (≥ 1.5× tokio, ≥ 1×
    // nexosim: issue 32's goal), one on the tape's bytes.
    let plan = Plan {
        size: Size::Small,
        rounds: 2,
        workloads: Workload::ALL.to_vec(),
        frameworks: Framework::ALL.to_vec(),
    };
    let dir = tape_dir("runner");
    let mut runs = 0;
    let measurements = runner::run(&plan, &dir, |_, _, _| runs += 1).expect("every run checks out");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(runs, 2 * 20);
    let rows = report::rows(&measurements);
    assert_eq!(rows.len(), 20);
    for row in &rows {
        assert_eq!(row.rounds, 2);
        assert!(row.events_per_s > 0.0);
        assert_eq!(row.bytes_per_record.is_some(), row.tape);
        assert_eq!(row.fingerprint.is_some(), row.framework == "simtape");
        if row.framework == "tokio" {
            assert_eq!(row.ratio_to_tokio, Some(1.0));
        }
        if row.framework == "nexosim" {
            assert_eq!(row.ratio_to_nexosim, Some(1.0));
        }
    }
    let json: serde_json::Value = serde_json::to_value(&rows).expect("rows serialise");
    let first = &json[0];
    for key in [
        "workload",
        "framework",
        "tape",
        "events_per_s",
        "ratio_to_tokio",
        "ratio_to_nexosim",
        "virtual_end_us",
        "bytes_per_record",
        "rounds",
    ] {
        assert!(first.get(key).is_some(), "the JSON rows carry {key}");
    }
    assert_eq!(
        first["virtual_end_us"],
        serde_json::json!(timers_end_ns(100, 20, 1, 1) as f64)
    );
    let bars = report::bars(&rows);
    assert_eq!(bars.len(), 6 + 2 * 5 + 1);
    for workload in Workload::ALL {
        for peer in ["1.5× tokio", "1.0× nexosim"] {
            let label = format!("simtape tape on  {workload} ≥ {peer}");
            let bar = bars.iter().find(|bar| bar.label == label);
            let bar = bar.unwrap_or_else(|| panic!("no bar {label:?}"));
            assert!(bar.measured.is_some(), "{label} is judged");
        }
    }
    assert!(report::table(&rows).lines().count() == 22);
}

#[test]
fn names_parse_for_the_command_line() {
    // Goal: `--only`, `--size` and `--frameworks` accept the names the report prints.
    assert_eq!("w1ms".parse::<Workload>(), Ok(Workload::W1ms));
    assert_eq!("w4".parse::<Workload>(), Ok(Workload::W4));
    assert!("W5".parse::<Workload>().is_err());
    assert_eq!("small".parse::<Size>(), Ok(Size::Small));
    assert_eq!(
        "simtape+tape".parse::<Framework>(),
        Ok(Framework::SimtapeTape)
    );
    for framework in Framework::ALL {
        assert_eq!(framework.to_string().parse::<Framework>(), Ok(framework));
    }
    let _: Shape = Workload::W2.shape(Size::Full);
}

#[test]
fn the_wasi_sleeper_is_cached_and_burns_the_same_fuel() {
    // Goal: the wasi workload runs (each run sleeps exactly 24 h of virtual time and prints
    // it, or `run` fails), and every run of the one seed burns the same fuel.
    let measurement = simtape_bench::wasi::run(3).unwrap();
    assert_eq!(measurement.samples.len(), 3);
    assert!(measurement.fuel[0] > 0);
    assert!(measurement.fuel_identical(), "{:?}", measurement.fuel);
    let bars = simtape_bench::wasi::bars(&measurement);
    assert!(bars[1].pass);
}

#[test]
fn the_trace_scale_bar_runs_small_and_writes_the_same_tape() {
    // Goal: `trace_scale` cannot rot: at 2,000 records it writes the pinned tape, exports it,
    // builds its page and reports every bar.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_trace_scale"))
        .arg("2000")
        .output()
        .expect("trace_scale runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("tape: 2072 records, 88835 bytes, final hash 045eecb452f0212a"),
        "{text}"
    );
    assert!(text.contains("trace: 2266 events"), "{text}");
    assert_eq!(text.matches("bar ").count(), 3, "{text}");
}
