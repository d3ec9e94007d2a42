//! The WASI sandbox through the public API: guests on the simulation's clock, RNG and
//! overlay; limits; interleaving with other tasks; determinism of tapes and fuel.
//!
//! The guests are WAT sources in `tests/data/wasi/` (and `scenarios/data/wasi/`), compiled
//! here and compared with the committed `.wasm` files; `tests/data/wasi/build` rewrites them.
#![cfg(feature = "wasi")]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use simtape::cap::fs::FsActor;
use simtape::cap::process::{Command, ExitStatus, Output, ProcessActor, ProcessError};
use simtape::limits::Limits;
use simtape::tape::{payload_to_json, RecordKind, TapeReader};
use simtape::{Host, RunReport, Sim};

const DAY_NS: u64 = 86_400_000_000_000;
const SECOND_NS: u64 = 1_000_000_000;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn guests() -> PathBuf {
    manifest_dir().join("tests/data/wasi")
}

/// Returns an empty directory for one test under the cargo target's temp dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("wasi")
        .join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `pipeline` with a process actor running the test guests, an in-memory tape, and a
/// filesystem over `fs_root` when given.
fn run_with<F, Fut, T>(
    seed: u64,
    actor: ProcessActor,
    fs_root: Option<&Path>,
    pipeline: F,
) -> RunReport<T>
where
    F: FnOnce(Host) -> Fut,
    Fut: Future<Output = T> + 'static,
    T: 'static,
{
    let mut builder = Sim::builder();
    builder.seed(seed).tape_in_memory().process(actor);
    if let Some(root) = fs_root {
        builder.fs(FsActor::new(root).unwrap());
    }
    builder.build().unwrap().run(pipeline).unwrap()
}

/// Runs `command` alone with `actor` (and a filesystem over `fs_root`).
fn invoke(
    seed: u64,
    actor: ProcessActor,
    fs_root: Option<&Path>,
    command: Command,
) -> RunReport<Result<Output, ProcessError>> {
    run_with(seed, actor, fs_root, move |host| async move {
        host.process().run(command).await
    })
}

/// Runs `tool ARGS` with the test guests.
fn tool(seed: u64, args: &[&str]) -> RunReport<Result<Output, ProcessError>> {
    let command = Command::new("tool").args(args.iter().copied());
    invoke(seed, ProcessActor::wasi(guests()), None, command)
}

fn stdout(report: &RunReport<Result<Output, ProcessError>>) -> String {
    let output = report.output.as_ref().unwrap();
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Returns the tape's request and reply records as (time, actor, kind, body as JSON).
fn records(report: &RunReport<impl Sized>) -> Vec<(u64, String, RecordKind, serde_json::Value)> {
    let bytes = report
        .summary
        .tape
        .as_ref()
        .unwrap()
        .memory
        .clone()
        .unwrap();
    let mut reader = TapeReader::new(bytes.as_slice()).unwrap().keep_blobs(true);
    let mut out = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if matches!(record.kind, RecordKind::Request | RecordKind::Reply) {
            let body = payload_to_json(&reader.resolve(&record).unwrap()).unwrap();
            out.push((
                record.t_ns,
                reader.actor_name(record.actor).to_owned(),
                record.kind,
                body,
            ));
        }
    }
    out
}

#[test]
fn guests_match_their_sources() {
    // Goal: every committed .wasm is exactly its .wat compiled, so the two cannot drift;
    // with SIMTAPE_BLESS_GUESTS=1 the .wasm files are rewritten instead.
    #[allow(clippy::disallowed_methods)] // the bless switch of a test, not simulation input
    let bless = std::env::var_os("SIMTAPE_BLESS_GUESTS").is_some();
    let dirs = [guests(), manifest_dir().join("../../scenarios/data/wasi")];
    let mut checked = 0;
    for dir in dirs {
        let mut sources: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "wat"))
            .collect();
        sources.sort();
        for source in sources {
            let compiled = wat::parse_file(&source).unwrap();
            let module = source.with_extension("wasm");
            if bless {
                std::fs::write(&module, &compiled).unwrap();
            }
            let committed = std::fs::read(&module).unwrap_or_default();
            assert!(
                committed == compiled,
                "{} differs from its source: run engine/core/tests/data/wasi/build",
                module.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "found only {checked} guests");
}

#[test]
fn a_day_of_sleep_takes_a_day_of_virtual_time() {
    // Goal: a guest sleeping 24 h sees exactly 24 h pass, and so does the whole run.
    let report = tool(1, &["sleep", "86400"]);
    assert_eq!(stdout(&report), format!("slept {DAY_NS}\n"));
    let output = report.output.as_ref().unwrap();
    assert_eq!(output.status, ExitStatus::Code(0));
    assert_eq!(output.duration_ns, DAY_NS);
    assert_eq!(report.summary.end_ns, DAY_NS);
}

#[test]
fn only_the_earliest_subscription_fires() {
    // Goal: with 1 s and 5 s subscriptions in one poll, only the 1 s one is reported and
    // the clock moves exactly 1 s.
    let report = tool(1, &["pair"]);
    assert_eq!(
        stdout(&report),
        format!("events 1 first 1 elapsed {SECOND_NS}\n")
    );
    assert_eq!(report.summary.end_ns, SECOND_NS);
}

#[test]
fn an_absolute_realtime_deadline_waits_until_then() {
    // Goal: an ABSTIME REALTIME subscription 30 min ahead of the wall clock waits 30 min.
    let report = tool(1, &["abs"]);
    assert_eq!(stdout(&report), format!("slept {}\n", 1_800 * SECOND_NS));
}

#[test]
fn clocks_read_virtual_time() {
    // Goal: REALTIME is the start instant plus virtual time and MONOTONIC is virtual time.
    let command = Command::new("tool").arg("clocks");
    let report = run_with(
        1,
        ProcessActor::wasi(guests()),
        None,
        move |host| async move {
            host.sleep(Duration::from_secs(5)).await;
            let start = host.start_unix_ns();
            (start, host.process().run(command).await.unwrap())
        },
    );
    let (start, output) = report.output;
    let expected = format!(
        "realtime {}\nmonotonic {}\n",
        start as u64 + 5 * SECOND_NS,
        5 * SECOND_NS
    );
    assert_eq!(String::from_utf8(output.stdout).unwrap(), expected);
}

#[test]
fn random_bytes_follow_the_seed() {
    // Goal: random_get draws from the seeded stream: the same seed gives the same bytes,
    // another seed other bytes.
    let first = stdout(&tool(5, &["random"]));
    assert_eq!(first.len(), 33, "{first:?}");
    assert_eq!(first, stdout(&tool(5, &["random"])));
    assert_ne!(first, stdout(&tool(6, &["random"])));
}

#[test]
fn exit_codes_come_back_whole() {
    // Goal: proc_exit(n) is exit code n, including codes of 126 and above.
    for code in [0, 3, 130] {
        let report = tool(1, &["exit", &code.to_string()]);
        assert_eq!(report.output.unwrap().status, ExitStatus::Code(code));
    }
}

#[test]
fn an_endless_loop_runs_out_of_fuel() {
    // Goal: a guest that never ends stops with a named error once its fuel is spent.
    let limits = Limits {
        wasm_fuel_max: 5_000_000,
        ..Limits::default()
    };
    let actor = ProcessActor::wasi(guests()).limits(&limits);
    let report = invoke(1, actor, None, Command::new("tool").arg("spin"));
    match report.output {
        Err(ProcessError::WasmFuelExhausted { fuel, .. }) => assert_eq!(fuel, 5_000_000),
        other => panic!("expected fuel exhaustion, found {other:?}"),
    }
}

#[test]
fn fuel_is_identical_across_runs_and_on_the_tape() {
    // Goal: the same seed burns the same fuel, and the reply record carries it.
    let fuel = |seed| {
        tool(seed, &["random"])
            .output
            .unwrap()
            .fuel_consumed
            .unwrap()
    };
    let first = fuel(3);
    assert!(first > 0);
    assert_eq!(first, fuel(3));
    let report = tool(3, &["random"]);
    let replies: Vec<_> = records(&report)
        .into_iter()
        .filter(|(_, actor, kind, _)| actor == "process" && *kind == RecordKind::Reply)
        .collect();
    assert_eq!(replies.len(), 1);
    assert!(
        replies[0].3.to_string().contains(&first.to_string()),
        "{:?}",
        replies[0].3
    );
}

/// Returns a directory holding `a.txt` (3 bytes) and an empty `sub/`.
fn tree(name: &str) -> PathBuf {
    let root = fresh_dir(name);
    std::fs::write(root.join("a.txt"), "abc").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    root
}

/// Runs `tool ARGS` with a filesystem over `root`.
fn tool_in(seed: u64, root: &Path, args: &[&str]) -> RunReport<Result<Output, ProcessError>> {
    let command = Command::new("tool").args(args.iter().copied());
    invoke(seed, ProcessActor::wasi(guests()), Some(root), command)
}

#[test]
fn a_written_file_lands_in_the_fs_diff_not_on_disk() {
    // Goal: the guest's /out.txt appears in the run's fs diff, through an `apply` record on
    // the tape, and the real directory is untouched.
    let root = tree("written");
    let report = tool_in(1, &root, &["write"]);
    assert_eq!(stdout(&report), "wrote\n");
    let diff = report.fs_diff().unwrap().unwrap();
    assert_eq!(diff.added.len(), 1, "{diff:?}");
    assert_eq!(diff.added[0].path, "out.txt");
    assert!(!root.join("out.txt").exists());
    let applied = records(&report).into_iter().any(|(_, actor, kind, body)| {
        actor == "fs" && kind == RecordKind::Request && body[0] == "apply"
    });
    assert!(applied);
}

#[test]
fn a_listing_does_not_depend_on_host_file_times() {
    // Goal: fd_readdir order, inode numbers and file times are virtual: touching the host
    // files between two runs changes nothing the guest prints.
    let root = tree("listing");
    let first = stdout(&tool_in(1, &root, &["list", "."]));
    #[allow(clippy::disallowed_types)] // moving host file times is the point of the test
    let later = std::time::UNIX_EPOCH + Duration::from_secs(2_000_000_000);
    for name in ["a.txt", "sub"] {
        let file = std::fs::File::open(root.join(name)).unwrap();
        file.set_modified(later).unwrap();
    }
    let second = stdout(&tool_in(1, &root, &["list", "."]));
    assert_eq!(first, second);
    let start = simtape::time::START_DEFAULT_UNIX_NS;
    let expected = format!(
        ". ino 1 size 0 mtime {start}\n.. ino 1 err 76\na.txt ino 2 size 3 mtime {start}\nsub ino 3 size 0 mtime {start}\n"
    );
    assert_eq!(first, expected);
}

#[test]
fn a_path_escape_is_refused() {
    // Goal: `../x` from the root is ENOTCAPABLE (76) and nothing is created anywhere.
    let root = tree("escape");
    let report = tool_in(1, &root, &["escape"]);
    assert_eq!(stdout(&report), "escape errno 76\n");
    assert!(report.fs_diff().unwrap().unwrap().added.is_empty());
    assert!(!root.parent().unwrap().join("x").exists());
}

#[test]
fn sockets_are_not_there() {
    // Goal: sock_send on a directory is ENOTSOCK (57), and a module importing the
    // non-standard `sock_open` does not instantiate.
    assert_eq!(stdout(&tool(1, &["net"])), "sock_send errno 57\n");
    let report = invoke(
        1,
        ProcessActor::wasi(guests()),
        None,
        Command::new("sock_open"),
    );
    match report.output {
        Err(ProcessError::WasmImport { name, .. }) => assert_eq!(name, "sock_open"),
        other => panic!("expected a refused import, found {other:?}"),
    }
}

#[test]
fn a_missing_module_is_a_named_error() {
    // Goal: a program without `<dir>/<program>.wasm` fails with the path it looked for.
    let report = invoke(1, ProcessActor::wasi(guests()), None, Command::new("nope"));
    match report.output {
        Err(ProcessError::WasmModuleMissing { path, .. }) => assert!(path.ends_with("nope.wasm")),
        other => panic!("expected a missing module, found {other:?}"),
    }
}

#[test]
fn stdin_reaches_the_guest() {
    // Goal: the command's stdin bytes are the guest's fd 0.
    let command = Command::new("tool").arg("cat").stdin("piped\n");
    let report = invoke(1, ProcessActor::wasi(guests()), None, command);
    assert_eq!(report.output.unwrap().stdout, b"piped\n");
}

#[test]
fn output_past_the_cap_is_counted() {
    // Goal: stdout keeps at most `process_output_bytes_max` bytes and reports the rest.
    let limits = Limits {
        process_output_bytes_max: 4,
        ..Limits::default()
    };
    let actor = ProcessActor::wasi(guests()).limits(&limits);
    let report = invoke(1, actor, None, Command::new("tool").arg("write"));
    let output = report.output.unwrap();
    assert_eq!(output.stdout, b"wrot");
    assert_eq!(output.truncated.stdout_dropped_bytes, 2);
}

#[test]
fn a_sleeping_guest_interleaves_with_other_tasks() {
    // Goal: while a guest sleeps an hour, another task's calls at 10, 20 and 30 minutes
    // happen at those times, and the guest's reply comes at one hour; the tape is the same
    // for the same seed.
    let interleaved = || {
        run_with(9, ProcessActor::wasi(guests()), None, |host| async move {
            let process = host.process();
            let guest = host.spawn("guest", async move {
                process
                    .run(Command::new("tool").args(["sleep", "3600"]))
                    .await
            });
            for _ in 0..3 {
                host.sleep(Duration::from_secs(600)).await;
                host.clock().call(simtape::actor::ClockRequest::Now).await;
            }
            guest.await.unwrap().unwrap()
        })
    };
    let report = interleaved();
    assert_eq!(report.output.duration_ns, 3_600 * SECOND_NS);
    let minute = 60 * SECOND_NS;
    let calls: Vec<(u64, String, RecordKind)> = records(&report)
        .into_iter()
        .map(|(t, actor, kind, _)| (t, actor, kind))
        .collect();
    let expected = [
        (0, "process", RecordKind::Request),
        (10 * minute, "clock", RecordKind::Request),
        (10 * minute, "clock", RecordKind::Reply),
        (20 * minute, "clock", RecordKind::Request),
        (20 * minute, "clock", RecordKind::Reply),
        (30 * minute, "clock", RecordKind::Request),
        (30 * minute, "clock", RecordKind::Reply),
        (60 * minute, "process", RecordKind::Reply),
    ];
    let expected: Vec<(u64, String, RecordKind)> = expected
        .into_iter()
        .map(|(t, actor, kind)| (t, actor.to_owned(), kind))
        .collect();
    assert_eq!(calls, expected);
    let tape = |report: RunReport<Output>| report.summary.tape.unwrap().memory.unwrap();
    assert_eq!(tape(report), tape(interleaved()));
}

#[test]
fn fuel_can_cost_virtual_time() {
    // Goal: with a fuel-to-time ratio, compute moves the clock by fuel × ratio, the same
    // on every run.
    let actor = ProcessActor::wasi(guests())
        .wasi_ns_per_fuel(simtape::cap::wasi::NsPerFuel { ns: 1_000, fuel: 1 });
    let report = invoke(1, actor, None, Command::new("tool").arg("random"));
    let output = report.output.unwrap();
    assert_eq!(output.duration_ns, output.fuel_consumed.unwrap() * 1_000);
}

#[test]
fn memory_past_the_limit_is_a_named_error() {
    // Goal: growing memory past `wasm_memory_bytes_max` ends the guest with a named error;
    // growing within it works.
    let limits = Limits {
        wasm_memory_bytes_max: 4 << 16,
        ..Limits::default()
    };
    let grow = |pages: &str| {
        let actor = ProcessActor::wasi(guests()).limits(&limits);
        invoke(1, actor, None, Command::new("tool").args(["grow", pages])).output
    };
    assert_eq!(grow("3").unwrap().stdout, b"grew\n");
    match grow("4") {
        Err(ProcessError::WasmMemoryExceeded {
            desired_bytes,
            max_bytes,
            ..
        }) => assert_eq!((desired_bytes, max_bytes), (5 << 16, 4 << 16)),
        other => panic!("expected the memory limit, found {other:?}"),
    }
}

#[test]
fn fault_rules_reach_wasi_programs() {
    // Goal: a `[[faults.process]]` rule fires on a WASI program as on a native one, and no
    // guest runs (no time passes).
    use simtape::scenario::{ProcessFault, Trigger};
    let fault = ProcessFault {
        program: "tool".into(),
        trigger: Trigger::OnCall(1),
        exit_code: 7,
    };
    let actor = ProcessActor::wasi(guests()).with_faults(vec![fault]);
    let report = invoke(1, actor, None, Command::new("tool").args(["sleep", "60"]));
    assert_eq!(report.output.unwrap().status, ExitStatus::Code(7));
    assert_eq!(report.summary.end_ns, 0);
}

#[test]
fn process_wasi_dir_covers_what_the_tape_does_not() {
    // Goal: `Builder::process_wasi_dir` keeps replayed programs replayed and runs every
    // other program as a guest.
    let tape = simtape::cap::process::ProcessTape::parse(
        "inline",
        "{\"simtape_process\": 1}\n{\"program\": \"git\", \"args\": [], \"stdout\": \"clean\\n\", \"status\": {\"code\": 0}, \"duration_ns\": 5}\n",
    )
    .unwrap();
    let mut builder = Sim::builder();
    builder
        .process(ProcessActor::replay(tape))
        .process_wasi_dir(guests());
    let report = builder
        .build()
        .unwrap()
        .run(|host| async move {
            let git = host.process().run(Command::new("git")).await.unwrap();
            let tool = host.process().run(Command::new("tool").arg("pair")).await;
            (git.stdout, tool.unwrap().stdout)
        })
        .unwrap();
    assert_eq!(report.output.0, b"clean\n");
    assert!(report.output.1.starts_with(b"events 1"));
}

#[test]
fn a_sleeping_guest_can_be_cancelled() {
    // Goal: dropping a guest's call mid-sleep (a timeout around it) ends the call cleanly;
    // the run goes on and later calls work.
    let report = run_with(1, ProcessActor::wasi(guests()), None, |host| async move {
        let process = host.process();
        let sleeping = process.run(Command::new("tool").args(["sleep", "3600"]));
        let cut = simtape::time::timeout(Duration::from_secs(60), sleeping).await;
        let after = host.process().run(Command::new("tool").arg("pair")).await;
        (cut.is_err(), after.unwrap().stdout)
    });
    assert!(report.output.0, "the timeout fired first");
    assert!(report.output.1.starts_with(b"events 1"));
    assert_eq!(report.summary.end_ns, 61 * SECOND_NS);
}
