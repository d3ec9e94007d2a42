//! Scenarios: the shipped files, the error reports, channel semantics, determinism, fuzzing.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use simtape::rng::RngStream;
use simtape::scenario::decoder::Decoder;
use simtape::scenario::{
    CallError, Extension, Listed, LlmFaultKind, Scenario, ScenarioError, ScenarioFailure,
    ScenarioReport, ScenarioRunError, StreamFault, StreamMode, Tables,
};
use simtape::tape::{RecordKind, TapeReader};
use simtape::{RunSummary, SimError};

/// The eval tables (`[agent]`, `[[mcp]]`, `[harness]`, `[[faults.mcp]]`, `[[verify]]`), which the
/// `simtape-agent` crate decodes through the extension hook, left undecoded: these tests are
/// about the core's part of a scenario, and the shipped scenarios are eval scenarios.
struct EvalSkipped;

impl Extension for EvalSkipped {
    fn tables(&self) -> &[Listed] {
        &[
            ("mcp", "process"),
            ("agent", "mcp"),
            ("harness", "agent"),
            ("verify", "faults"),
            ("property", "verify"),
        ]
    }

    fn fault_tables(&self) -> &[Listed] {
        &[("mcp", "llm")]
    }

    fn runs_without_tasks(&self, tables: &Tables<'_>) -> bool {
        tables.get("agent").is_some()
    }

    fn decode(&mut self, _decoder: &mut Decoder, _tables: &Tables<'_>) {}
}

/// [`Scenario::check_source`] with the eval tables skipped.
pub(crate) fn check_source(source: &str, path: &Path) -> Result<Scenario, Vec<ScenarioError>> {
    Scenario::check_source_with(source, path, &mut EvalSkipped)
}

/// [`Scenario::check_all`] with the eval tables skipped.
pub(crate) fn check_all(path: &Path) -> Result<Scenario, Vec<ScenarioError>> {
    Scenario::check_all_with(path, &mut EvalSkipped)
}

/// [`Scenario::parse`] with the eval tables skipped.
pub(crate) fn parse_at(source: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    check_source(source, path).map_err(|mut errors| errors.swap_remove(0))
}

/// [`Scenario::load`] with the eval tables skipped.
pub(crate) fn load_at(path: &Path) -> Result<Scenario, ScenarioError> {
    check_all(path).map_err(|mut errors| errors.swap_remove(0))
}

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn shipped() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    paths
}

fn load(name: &str) -> Scenario {
    load_at(&scenarios_dir().join(name)).unwrap()
}

/// Runs `scenario` at `seed` with an in-memory tape.
fn run(scenario: &Scenario, seed: u64) -> Result<ScenarioReport, ScenarioRunError> {
    let mut builder = scenario.builder(seed);
    builder.tape_in_memory();
    scenario.run(&mut builder)
}

fn parse(source: &str) -> Scenario {
    parse_at(source, Path::new("test.toml")).unwrap()
}

/// Returns every problem `check_source` reports, as displayed.
fn problems(source: &str) -> Vec<String> {
    let errors = check_source(source, Path::new("s.toml")).unwrap_err();
    errors.iter().map(ScenarioError::to_string).collect()
}

/// Returns the tape's footer verdict and its user events as `(t_ns, task, name, fields)`.
fn read_tape(tape: &[u8]) -> (String, Vec<(u64, u32, String, Value)>) {
    let mut reader = TapeReader::new(tape).unwrap();
    let mut events = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if record.kind == RecordKind::Request && reader.actor_name(record.actor) == "events" {
            let payload = reader.resolve(&record).unwrap();
            let (_, (name, fields)): (String, (String, Value)) =
                rmp_serde::from_slice(&payload).unwrap();
            events.push((record.t_ns, record.task, name, fields));
        }
    }
    (reader.footer().unwrap().verdict.clone(), events)
}

fn memory_tape(report: &ScenarioReport) -> &[u8] {
    summary_tape(&report.summary)
}

fn summary_tape(summary: &RunSummary) -> &[u8] {
    summary.tape.as_ref().unwrap().memory.as_deref().unwrap()
}

#[test]
fn shipped_scenarios_parse_and_open_with_a_header_comment() {
    // Goal: every file under scenarios/ checks clean and starts with its header comment.
    let paths = shipped();
    assert!(paths.len() >= 3, "{paths:?}");
    for path in paths {
        let scenario = check_all(&path).unwrap_or_else(|errors| panic!("{errors:#?}"));
        assert!(
            scenario.source().starts_with("# "),
            "{} has no header comment",
            path.display()
        );
        assert!(
            scenario.source().contains("Seeds:"),
            "{} names no seeds",
            path.display()
        );
        assert!(
            scenario.source().contains("Expected outcome:"),
            "{}",
            path.display()
        );
        assert_eq!(scenario.path(), path);
    }
}

#[test]
fn hello_ends_ok_with_its_outcomes() {
    // Goal: hello at seed 1 ends ok at its pinned time with both outcomes, on a stamped tape.
    let scenario = load("hello.toml");
    assert_eq!(scenario.name(), "hello");
    assert_eq!(scenario.seeds(), [1, 2, 3]);
    let report = run(&scenario, 1).unwrap();
    assert_eq!(report.summary.end_ns, 311_213_970);
    assert_eq!(
        report.outcomes,
        vec![
            ("jobs".to_string(), json!(2)),
            ("answer".to_string(), json!("2 results collected"))
        ]
    );
    let tape = memory_tape(&report);
    let reader = TapeReader::new(tape).unwrap();
    assert_eq!(reader.header().scenario, scenario.stamp());
    assert_eq!(reader.header().seed, 1);
    let (verdict, events) = read_tape(tape);
    assert_eq!(verdict, "ok");
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e.2 == "result")
        .map(|e| &e.3["value"])
        .collect();
    assert_eq!(results, [&json!("tool-a done"), &json!("tool-b done")]);
    // Every seed ends ok at the end time pinned in the file's header comment.
    let mut end_times = Vec::new();
    for &seed in scenario.seeds() {
        let report = run(&scenario, seed).unwrap();
        assert_eq!(report.outcomes.len(), 2);
        end_times.push(report.summary.end_ns);
    }
    assert_eq!(end_times, [311_213_970, 175_660_278, 132_454_353]);
}

#[test]
fn a_tapes_embedded_source_reruns_to_the_same_tape() {
    // Goal: the source in the tape header is enough to re-run the scenario bit for bit.
    let scenario = load("hello.toml");
    let first = run(&scenario, 2).unwrap();
    let header = TapeReader::new(memory_tape(&first))
        .unwrap()
        .header()
        .clone();
    let again = parse_at(&header.scenario.source, Path::new("embedded.toml")).unwrap();
    assert_eq!(again.digest(), header.scenario.digest);
    let second = run(&again, header.seed).unwrap();
    assert_eq!(memory_tape(&first), memory_tape(&second));
}

#[test]
fn deadlock_scenario_names_both_tasks() {
    // Goal: two tasks each waiting on the other end the run with a deadlock naming both.
    let scenario = load("deadlock.toml");
    let error = run(&scenario, 0).unwrap_err();
    let ScenarioFailure::Sim(SimError::Deadlock { t_ns, waiting }) = &*error.error else {
        panic!("expected a deadlock, got {}", error.error);
    };
    assert_eq!(*t_ns, 10_000_000);
    let waiting: Vec<(&str, &str)> = waiting
        .iter()
        .map(|w| (w.name.as_str(), w.awaiting.as_str()))
        .collect();
    assert_eq!(
        waiting,
        [
            ("main", "join of task \"alice\" (#2)"),
            ("alice", "recv on channel \"to-alice\""),
            ("bob", "recv on channel \"to-bob\""),
        ]
    );
    let (verdict, _) = read_tape(summary_tape(&error.summary));
    assert_eq!(verdict, format!("error: {}", error.error));
    assert!(
        verdict.starts_with("error: deadlock at t=10ms: 3 task(s) waiting"),
        "{verdict}"
    );
}

const CLOSING: &str = r#"
[scenario]
name = "closing"

[[task]]
name = "producer"
steps = [{ sleep = "5ms" }, { send = "jobs", value = "a" }, { sleep = "PRODUCER_LINGER" }]

[[task]]
name = "consumer"
repeat = 3
steps = [{ recv = "jobs", log = "got" }]

[[task]]
name = "idle"
steps = [{ sleep = "1ms" }]
"#;

#[test]
fn recv_on_a_channel_whose_senders_ended_returns_nothing() {
    // Goal: once every sending task has ended, a recv returns at once (logged as null): no
    // deadlock, even though other tasks that never send are still around.
    let scenario = parse(&CLOSING.replace("PRODUCER_LINGER", "0ms"));
    let report = run(&scenario, 0).unwrap();
    let (verdict, events) = read_tape(memory_tape(&report));
    assert_eq!(verdict, "ok");
    let got: Vec<(u64, Value)> = events.iter().map(|e| (e.0, e.3["value"].clone())).collect();
    assert_eq!(
        got,
        [
            (5_000_000, json!("a")),
            (5_000_000, Value::Null),
            (5_000_000, Value::Null)
        ]
    );
    assert_eq!(report.summary.end_ns, 5_000_000);
}

#[test]
fn a_living_sender_keeps_its_channel_open() {
    // Goal: a sender whose task still runs keeps a recv waiting; it returns nothing only when
    // that task ends.
    let scenario = parse(&CLOSING.replace("PRODUCER_LINGER", "1s"));
    let report = run(&scenario, 0).unwrap();
    let (_, events) = read_tape(memory_tape(&report));
    let got: Vec<(u64, Value)> = events.iter().map(|e| (e.0, e.3["value"].clone())).collect();
    assert_eq!(
        got,
        [
            (5_000_000, json!("a")),
            (1_005_000_000, Value::Null),
            (1_005_000_000, Value::Null)
        ]
    );
}

#[test]
fn several_tasks_share_one_channel_in_turn() {
    // Goal: two receivers of one channel get every message between them, first come first
    // served, and the run is the same every time.
    let source = r#"
[scenario]
name = "shared"

[[task]]
name = "producer-1"
steps = [{ sleep = "1ms" }, { send = "jobs", value = 1 }, { sleep = "2ms" }, { send = "jobs", value = 3 }]

[[task]]
name = "producer-2"
steps = [{ sleep = "2ms" }, { send = "jobs", value = 2 }, { sleep = "2ms" }, { send = "jobs", value = 4 }]

[[task]]
name = "worker-a"
repeat = 2
steps = [{ recv = "jobs", log = "took" }, { sleep = "10ms" }]

[[task]]
name = "worker-b"
repeat = 3
steps = [{ recv = "jobs", log = "took" }]
"#;
    let scenario = parse(source);
    let report = run(&scenario, 0).unwrap();
    let (verdict, events) = read_tape(memory_tape(&report));
    assert_eq!(verdict, "ok");
    let took: Vec<(u64, u32, Value)> = events
        .iter()
        .map(|e| (e.0, e.1, e.3["value"].clone()))
        .collect();
    // worker-a (#4) queued first and takes job 1; worker-b (#5) takes 2, 3 and 4 while worker-a
    // works; worker-a's second recv finds both producers ended and returns nothing.
    assert_eq!(
        took,
        [
            (1_000_000, 4, json!(1)),
            (2_000_000, 5, json!(2)),
            (3_000_000, 5, json!(3)),
            (4_000_000, 5, json!(4)),
            (11_000_000, 4, Value::Null),
        ]
    );
    assert_eq!(
        run(&scenario, 0).unwrap().summary.fingerprint,
        report.summary.fingerprint
    );
}

#[test]
fn random_delays_are_deterministic_per_seed_and_differ_across_seeds() {
    // Goal: the same seed gives the same tape bytes; different seeds give different runs.
    let scenario = load("random-delays.toml");
    let first = run(&scenario, 1).unwrap();
    let second = run(&scenario, 1).unwrap();
    assert_eq!(first.summary.fingerprint, second.summary.fingerprint);
    assert_eq!(memory_tape(&first), memory_tape(&second));
    let mut fingerprints: Vec<u64> = scenario
        .seeds()
        .iter()
        .map(|&s| run(&scenario, s).unwrap().summary.fingerprint)
        .collect();
    assert_eq!(fingerprints.len(), 5);
    fingerprints.sort_unstable();
    fingerprints.dedup();
    assert_eq!(fingerprints.len(), 5, "seeds gave equal fingerprints");
    let end_times: Vec<u64> = scenario
        .seeds()
        .iter()
        .map(|&s| run(&scenario, s).unwrap().summary.end_ns)
        .collect();
    assert!(
        end_times.iter().any(|&t| t != end_times[0]),
        "{end_times:?}"
    );
    let (_, events) = read_tape(memory_tape(&first));
    assert_eq!(events.iter().filter(|e| e.2 == "tick").count(), 15);
    assert_eq!(scenario.limits().virtual_time_max_ns, 60_000_000_000);
}

#[test]
fn scenario_limits_bound_the_run() {
    // Goal: `[limits]` reaches the run: a third timer event over `events_max = 2` stops it.
    let scenario = parse(
        "[scenario]\nname = \"bounded\"\n[limits]\nevents_max = 2\n[[task]]\nname = \"t\"\nrepeat = 3\nsteps = [{ sleep = \"1s\" }]\n",
    );
    let error = run(&scenario, 0).unwrap_err();
    assert_eq!(error.error.kind(), "limit_exceeded", "{}", error.error);
}

#[test]
fn the_start_instant_and_seeds_reach_the_builder() {
    // Goal: `start` (string or TOML datetime) and the seed land in the tape header.
    for start in ["\"2026-03-01T12:00:00Z\"", "2026-03-01T12:00:00Z"] {
        let source = format!(
            "[scenario]\nname = \"s\"\nstart = {start}\nseeds = [4, 9]\n[[task]]\nname = \"t\"\nsteps = [{{ sleep = \"1s\" }}]\n"
        );
        let scenario = parse(&source);
        assert_eq!(scenario.seeds(), [4, 9]);
        let report = run(&scenario, 9).unwrap();
        let header = TapeReader::new(memory_tape(&report))
            .unwrap()
            .header()
            .clone();
        assert_eq!(
            header.start_unix_ns,
            simtape::time::parse_instant("2026-03-01T12:00:00Z").unwrap()
        );
        assert_eq!(header.seed, 9);
    }
}

#[test]
fn errors_name_line_column_and_field() {
    // Goal: each class of error is placed at the right line, column and field, with expected
    // versus found.
    let task = "[[task]]\nname = \"a\"\n";
    let head = "[scenario]\nname = \"x\"\n";
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            format!("{head}{task}steps = [{{ sleep = \"soon\" }}]\n"),
            vec!["s.toml:5:20: field `task[0].steps[0].sleep`: expected a duration like \"250ms\", found \"soon\""],
        ),
        (
            format!("{head}{task}steps = [{{ sleep = 100 }}]\n"),
            vec!["s.toml:5:20: field `task[0].steps[0].sleep`: expected a duration like \"250ms\", found 100"],
        ),
        (
            format!("{head}{task}steps = [{{ slep = \"1s\" }}]\n"),
            vec!["s.toml:5:10: field `task[0].steps[0]`: expected a step with one of the keys `sleep`, `sleep_random`, `event`, `send`, `recv`, `outcome`, `write`, `append`, `read`, `remove`, `rename`, `mkdir`, `connect`, `ask`, `run`, found `slep`"],
        ),
        (
            format!("{head}{task}steps = [{{ sleep = \"1s\", event = \"e\" }}]\n"),
            vec!["s.toml:5:34: field `task[0].steps[0].event`: expected one kind per step, found both `sleep` and `event`"],
        ),
        (
            format!("{head}{task}steps = [{{ sleep_random = {{ min = \"50ms\", max = \"10ms\" }} }}]\n"),
            vec!["s.toml:5:27: field `task[0].steps[0].sleep_random`: expected min <= max, found min \"50ms\" > max \"10ms\""],
        ),
        (
            format!("{head}{task}steps = [{{ sleep = \"1s\" }}]\n{task}steps = [{{ sleep = \"2s\" }}]\n"),
            vec!["s.toml:7:8: field `task[1].name`: expected a task name not used before, found \"a\", which `task[0].name` already names"],
        ),
        (
            "[scenario]\nname = \"Hello\"\n[[task]]\nname = \"main\"\nsteps = [{ send = \"Jobs\", value = 1 }]\n".to_string(),
            vec![
                "s.toml:2:8: field `scenario.name`: expected a name of a-z, 0-9 and -, found \"Hello\"",
                "s.toml:4:8: field `task[0].name`: the task name \"main\" is reserved: the engine's own tasks use it",
                "s.toml:5:19: field `task[0].steps[0].send`: expected a name of a-z, 0-9 and -, found \"Jobs\"",
            ],
        ),
        (
            format!("{head}{task}steps = [{{ recv = \"results\" }}]\n"),
            vec!["s.toml:5:19: field `task[0].steps[0].recv`: no task sends on channel \"results\", so this recv could never get a message"],
        ),
        (
            format!("{head}[limits]\nevents_maxx = 5\nvirtual_time_max_ns = \"soon\"\n{task}steps = [{{ sleep = \"1s\" }}]\n"),
            vec![
                "s.toml:4:1: field `limits.events_maxx`: unknown limit, expected one of `channel_capacity`, `events_max`, `mailbox_len_max`, `payload_bytes_max`, `process_output_bytes_max`, `run_queue_len_max`, `tape_bytes_max`, `tasks_max`, `virtual_time_max_ns`, `wasm_fuel_max`, `wasm_memory_bytes_max`",
                "s.toml:5:23: field `limits.virtual_time_max_ns`: expected a non-negative integer of nanoseconds or a duration like \"10s\", found \"soon\"",
            ],
        ),
        (
            format!("{head}{task}steps = []\n"),
            vec!["s.toml:5:9: field `task[0].steps`: expected at least one step, found an empty array"],
        ),
        (
            format!("{head}start = \"yesterday\"\n{task}steps = [{{ sleep = \"1s\" }}]\n"),
            vec!["s.toml:3:9: field `scenario.start`: expected an RFC 3339 instant like \"2026-01-01T00:00:00Z\", found \"yesterday\""],
        ),
        (
            "[scenario\nname = \"x\"\n".to_string(),
            vec!["s.toml:1:10: invalid TOML: invalid table header; expected `.`, `]`"],
        ),
        (
            format!("{head}[agnet]\nmodel = \"m\"\n{task}steps = [{{ sleep = \"1s\" }}]\n"),
            vec!["s.toml:3:2: field `agnet`: unknown key, expected one of the tables `scenario`, `limits`, `fs`, `network`, `llm`, `process`, `mcp`, `agent`, `harness`, `faults`, `verify`, `property`, `task`"],
        ),
        (
            "# nothing here\n".to_string(),
            vec![
                "s.toml:1:1: field `scenario`: expected a [scenario] table, found nothing",
                "s.toml:1:1: field `task`: expected at least one [[task]] table, found nothing",
            ],
        ),
        (
            format!("{head}[[task]]\nsteps = [{{ sleep = \"1s\" }}]\nrepeat = 0\n"),
            vec![
                "s.toml:3:1: field `task[0].name`: expected a task name of a-z, 0-9 and -, found nothing",
                "s.toml:5:10: field `task[0].repeat`: expected an integer from 1 to 1000000, found 0",
            ],
        ),
        (
            format!("{head}{task}steps = [{{ send = \"c\", valeu = 1 }}, {{ recv = \"c\" }}, {{ outcome = \"o\", value = nan }}]\n"),
            vec![
                "s.toml:5:10: field `task[0].steps[0].value`: expected a value (any TOML value), found nothing",
                "s.toml:5:24: field `task[0].steps[0].valeu`: unknown key, expected `value` (no other key goes with `send`)",
                "s.toml:5:78: field `task[0].steps[2].value`: expected a finite number, found nan",
            ],
        ),
    ];
    for (source, expected) in cases {
        assert_eq!(problems(&source), expected, "source:\n{source}");
    }
}

#[test]
fn parse_reports_the_first_problem_in_source_order() {
    // Goal: `parse` returns the earliest of several problems, with its parts as fields.
    let source = "[scenario]\nname = \"x\"\nseeds = []\n[[task]]\nname = \"A\"\nsteps = [{ sleep = \"1s\" }]\n";
    let error = parse_at(source, Path::new("dir/s.toml")).unwrap_err();
    assert_eq!(
        (
            error.file.as_path(),
            error.line,
            error.column,
            error.field.as_str()
        ),
        (Path::new("dir/s.toml"), 3, 9, "scenario.seeds")
    );
    assert_eq!(
        error.message,
        "expected at least one seed, found an empty array"
    );
}

#[test]
fn check_all_reports_every_problem_at_once() {
    // Goal: one check of a file with many problems reports all of them, in source order, and
    // `load` reports the first.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scenario-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("many-problems.toml");
    let source = r#"[scenario]
name = "many problems"
seeds = [1, 1]

[[task]]
name = "a"
start_after = "later"
steps = [
  { sleep = "1s" },
  { recv = "nobody-sends" },
  { event = "e", fields = { ok = true }, colour = "red" },
]

[[task]]
name = "a"
steps = [{ sleep_random = { min = "2s", max = "1s" } }]
"#;
    std::fs::write(&path, source).unwrap();
    let errors = check_all(&path).unwrap_err();
    let shown: Vec<String> = errors
        .iter()
        .map(|e| e.to_string().replace(&path.display().to_string(), "F"))
        .collect();
    assert_eq!(
        shown,
        [
            "F:2:8: field `scenario.name`: expected a name of a-z, 0-9 and -, found \"many problems\"",
            "F:3:13: field `scenario.seeds[1]`: expected each seed once, found 1",
            "F:7:15: field `task[0].start_after`: expected a duration like \"250ms\", found \"later\"",
            "F:10:12: field `task[0].steps[1].recv`: no task sends on channel \"nobody-sends\", so this recv could never get a message",
            "F:11:42: field `task[0].steps[2].colour`: unknown key, expected `fields` (no other key goes with `event`)",
            "F:15:8: field `task[1].name`: expected a task name not used before, found \"a\", which `task[0].name` already names",
            "F:16:27: field `task[1].steps[0].sleep_random`: expected min <= max, found min \"2s\" > max \"1s\"",
        ]
    );
    assert_eq!(load_at(&path).unwrap_err(), errors[0]);
}

#[test]
fn unreadable_and_non_utf8_files_are_errors() {
    // Goal: a missing file names no place; a non-UTF-8 file names the bad byte's place.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scenario-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("does-not-exist.toml");
    let error = load_at(&missing).unwrap_err();
    assert_eq!((error.line, error.column), (0, 0));
    assert!(error.to_string().starts_with(&format!(
        "{}: cannot read the scenario file: ",
        missing.display()
    )));
    let binary = dir.join("binary.toml");
    std::fs::write(&binary, b"[scenario]\nname = \"\xff\"\n").unwrap();
    let error = load_at(&binary).unwrap_err();
    assert_eq!((error.line, error.column), (2, 9));
    assert_eq!(error.message, "expected UTF-8 text, found an invalid byte");
}

#[test]
fn the_reference_example_parses() {
    // Goal: the complete example in docs/scenario-format.md is a valid scenario that runs;
    // its `[[verify]]` is the eval harness's table (the CLI's tests run the whole example).
    let example = doc_example("complete example");
    let core = example.split("\n[[verify]]").next().unwrap();
    let scenario = parse(core);
    run(&scenario, scenario.seeds()[0]).unwrap();
}

/// Returns the TOML block of docs/scenario-format.md that follows `<!-- {name} -->`.
pub(crate) fn doc_example(name: &str) -> String {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenario-format.md");
    let text = std::fs::read_to_string(doc).unwrap();
    let marker = format!("<!-- {name} -->\n```toml\n");
    let start = text
        .find(&marker)
        .unwrap_or_else(|| panic!("the doc marks no {name}"))
        + marker.len();
    let end = start + text[start..].find("```").unwrap();
    text[start..end].to_string()
}

/// Applies one random mutation: a byte flip, a truncation, a deletion or an insertion of
/// TOML punctuation.
fn mutate(bytes: &mut Vec<u8>, rng: &mut RngStream) {
    const INSERTS: [&[u8]; 12] = [
        b"[", b"]", b"\"", b"=", b"\n", b"{", b"}", b",", b"'", b"[[", b"\\u", b"\xc3",
    ];
    let at = rng.below(bytes.len() as u64 + 1) as usize;
    match rng.below(4) {
        0 if at < bytes.len() => bytes[at] = rng.below(256) as u8,
        1 => bytes.truncate(at),
        2 if at < bytes.len() => drop(bytes.remove(at)),
        _ => {
            let insert = INSERTS[rng.below(INSERTS.len() as u64) as usize];
            bytes.splice(at..at, insert.iter().copied());
        }
    }
}

#[test]
fn parsing_never_panics_on_mutated_scenarios() {
    // Goal: 5,000 seeded mutations of the shipped scenarios never make `parse` panic (the
    // eval tables are the agent crate's, skipped here), every error has a place, and the mutants that still parse run
    // without a task panicking. Each mutant keeps its file's path, so the files it references
    // still resolve.
    let sources: Vec<(PathBuf, Vec<u8>)> = shipped()
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(p).unwrap()))
        .collect();
    let mut rng = RngStream::fork(2026, "scenario-fuzz");
    let mut parsed = 0;
    for round in 0..5_000 {
        let (path, bytes) = &sources[round % sources.len()];
        let mut bytes = bytes.clone();
        for _ in 0..=rng.below(4) {
            mutate(&mut bytes, &mut rng);
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let outcome = std::panic::catch_unwind(|| parse_at(&text, path));
        let scenario = match outcome {
            Err(_) => panic!("parse panicked on mutation {round}:\n{text}"),
            Ok(Err(error)) => {
                assert!(error.line >= 1 && error.column >= 1, "{error}");
                continue;
            }
            Ok(Ok(scenario)) => scenario,
        };
        parsed += 1;
        let mut builder = scenario.builder(round as u64);
        let mut limits = scenario.limits().clone();
        limits.events_max = limits.events_max.min(10_000);
        limits.virtual_time_max_ns = limits.virtual_time_max_ns.min(3_600_000_000_000);
        builder.limits(limits);
        if let Err(error) = scenario.run(&mut builder) {
            assert_ne!(
                error.error.kind(),
                "task_panicked",
                "mutation {round}: {}",
                error.error
            );
        }
    }
    assert!(
        parsed > 50,
        "only {parsed} mutants parsed; the runner was hardly exercised"
    );
}

// ---------------------------------------------------------------------------------------------
// Capability tables and steps: [fs], [network], [llm] and the steps that call them.

/// Returns the directory of the scenario test data (fixtures).
fn test_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scenario")
}

/// Returns every problem `check_source` reports for `source` placed at `path`, as displayed.
fn problems_at(source: &str, path: &Path) -> Vec<String> {
    let errors = check_source(source, path).unwrap_err();
    errors.iter().map(ScenarioError::to_string).collect()
}

/// A scenario with `tables` and one task of `steps`.
fn with_task(tables: &str, steps: &str) -> String {
    format!("[scenario]\nname = \"t\"\n{tables}\n[[task]]\nname = \"a\"\nsteps = [{steps}]\n")
}

#[test]
fn capability_tables_decode_with_exact_errors() {
    // Goal: each bad key of [fs], [network] and [llm] is reported at its own place, with the
    // exact message, and an unknown table is refused.
    let source = "[scenario]\nname = \"t\"\n[fs]\nenospc = \"2/1\"\neio = 0.5\nlatency = { base = \"fast\", spin = \"1s\" }\ncolour = 1\n[network]\nallow = [\"api.github.com\", \"user@example.com\", 7, \"10.0.0.0/33\"]\n[llm]\nfixtures = \"x\"\n[verification]\n[[task]]\nname = \"a\"\nsteps = [{ sleep = \"1s\" }]\n";
    assert_eq!(
        problems(source),
        [
            "s.toml:3:1: field `fs.root`: expected a directory path relative to the scenario file, found nothing",
            "s.toml:4:10: field `fs.enospc`: expected a ratio like \"1/10\" or \"5%\" (at most 1), found \"2/1\"",
            "s.toml:5:7: field `fs.eio`: expected a ratio like \"1/10\" or \"5%\" (at most 1), found 0.5",
            "s.toml:6:20: field `fs.latency.base`: expected a duration like \"250ms\", found \"fast\"",
            "s.toml:6:28: field `fs.latency.spin`: unknown key, expected one of `base`, `per_kib`, `jitter`",
            "s.toml:7:1: field `fs.colour`: unknown key, expected one of `root`, `allow_outside`, `enospc`, `eio`, `partial_write`, `latency`",
            "s.toml:9:28: field `network.allow[1]`: network rule \"user@example.com\" contains user info (`user@`); name the host only",
            "s.toml:9:48: field `network.allow[2]`: expected a network rule like \"api.github.com\" or \"10.0.0.0/8\", found 7",
            "s.toml:9:51: field `network.allow[3]`: network rule \"10.0.0.0/33\" is not a CIDR block (address/prefix, prefix at most 32 for IPv4 and 128 for IPv6)",
            "s.toml:10:1: field `llm.fixture`: expected a fixture file path relative to the scenario file, found nothing",
            "s.toml:11:1: field `llm.fixtures`: unknown key, expected `fixture`, `record` or `handover`",
            "s.toml:12:2: field `verification`: unknown key, expected one of the tables `scenario`, `limits`, `fs`, `network`, `llm`, `process`, `mcp`, `agent`, `harness`, `faults`, `verify`, `property`, `task`",
        ]
    );
}

#[test]
fn stream_fault_rules_decode_with_exact_errors() {
    // Goal: `stream = "cut" | "stall"` with an optional `after_events` decodes into a stream
    // fault; a bad mode, a negative count, an HTTP key beside `stream` and `after_events`
    // without `stream` are each reported at their own place.
    let good = "[llm]\nfixture = \"ask.jsonl\"\n[[faults.llm]]\non_call = 2\nstream = \"cut\"\nafter_events = 3\n[[faults.llm]]\nrate = \"1/4\"\nstream = \"stall\"\n";
    let source = with_task(good, "{ sleep = \"1s\" }");
    let scenario = parse_at(&source, &test_data().join("stream.toml")).unwrap();
    let kinds: Vec<&LlmFaultKind> = scenario.faults().llm.iter().map(|f| &f.kind).collect();
    assert_eq!(
        kinds,
        [
            &LlmFaultKind::Stream(StreamFault {
                mode: StreamMode::Cut,
                after_events: Some(3)
            }),
            &LlmFaultKind::Stream(StreamFault {
                mode: StreamMode::Stall,
                after_events: None
            }),
        ]
    );
    let bad = "[llm]\nfixture = \"f\"\n[[faults.llm]]\non_call = 1\nstream = \"drop\"\n[[faults.llm]]\non_call = 1\nstream = \"cut\"\nafter_events = -1\nstatus = 500\n[[faults.llm]]\non_call = 1\nafter_events = 2\n";
    assert_eq!(
        problems(&with_task(bad, "{ sleep = \"1s\" }")),
        [
            "s.toml:7:10: field `faults.llm[0].stream`: expected a stream fault `cut` or `stall`, found \"drop\"",
            "s.toml:11:16: field `faults.llm[1].after_events`: expected a number of events from 0, found -1",
            "s.toml:12:1: field `faults.llm[1].status`: unknown key, expected one of `on_call`, `rate`, `stream`, `after_events` (for a `stream` rule)",
            "s.toml:15:16: field `faults.llm[2].after_events`: `after_events` needs `stream = \"cut\"` or `stream = \"stall\"`",
        ]
    );
}

#[test]
fn capability_steps_decode_with_exact_errors() {
    // Goal: the new steps report missing companions, bad targets and bad paths exactly.
    let tables = "[fs]\nroot = \".\"\n[network]\n[llm]\nfixture = \"ask.jsonl\"";
    let steps = "{ write = \"a\" }, { rename = \"a\" }, { connect = \"example.com\" }, { connect = \"example.com:0\" }, { connect = \"exa mple.com:80\" }, { ask = 1 }, { read = \"\" }, { mkdir = \"d\", content = \"x\" }";
    let path = test_data().join("s.toml");
    let shown = path.display();
    let expected: Vec<String> = [
        "10:10: field `task[0].steps[0].content`: expected a string, found nothing",
        "10:27: field `task[0].steps[1].to`: expected a path inside the [fs] root like \"src/lib.rs\", found nothing",
        "10:57: field `task[0].steps[2].connect`: expected a target like \"api.github.com:443\" or \"[::1]:8080\", found \"example.com\"",
        "10:86: field `task[0].steps[3].connect`: expected a target like \"api.github.com:443\" or \"[::1]:8080\", found \"example.com:0\"",
        "10:117: field `task[0].steps[4].connect`: expected a target like \"api.github.com:443\" or \"[::1]:8080\", found \"exa mple.com:80\": the host contains whitespace",
        "10:146: field `task[0].steps[5].ask`: expected a prompt string, found 1",
        "10:160: field `task[0].steps[6].read`: expected a path inside the [fs] root like \"src/lib.rs\", found \"\"",
        "10:181: field `task[0].steps[7].content`: unknown key (no other key goes with `mkdir`)",
    ]
    .iter()
    .map(|line| format!("{shown}:{line}"))
    .collect();
    assert_eq!(problems_at(&with_task(tables, steps), &path), expected);
}

#[test]
fn steps_need_the_table_of_their_capability() {
    // Goal: a step whose capability the scenario does not configure is a check error at the
    // step, one per step.
    let steps = "{ write = \"a\", content = \"x\" }, { connect = \"a.com:80\" }, { ask = \"hi\" }";
    assert_eq!(
        problems(&with_task("", steps)),
        [
            "s.toml:6:20: field `task[0].steps[0].write`: step `write` needs an [fs] table",
            "s.toml:6:54: field `task[0].steps[1].connect`: step `connect` needs a [network] table",
            "s.toml:6:76: field `task[0].steps[2].ask`: step `ask` needs an [llm] table",
        ]
    );
}

#[test]
fn referenced_files_are_checked_with_file_and_line() {
    // Goal: a missing root, a root that is a file and a fixture that does not parse are each
    // reported at the field naming them, the fixture error with its own file and line.
    let tables = "[fs]\nroot = \"no-such-dir\"\n[llm]\nfixture = \"bad.jsonl\"";
    let path = test_data().join("s.toml");
    let dir = test_data();
    assert_eq!(
        problems_at(&with_task(tables, "{ sleep = \"1s\" }"), &path),
        [
            format!(
                "{}:4:8: field `fs.root`: expected an existing directory, found nothing at {}",
                path.display(),
                dir.join("no-such-dir").display()
            ),
            format!(
                "{}:6:11: field `llm.fixture`: {}:2: expected a fixture entry (docs/llm-fixtures.md), found unknown field `respons`, expected one of `match`, `mode`, `scope`, `id`, `response`, `alternatives`, `error`, `latency`",
                path.display(),
                dir.join("bad.jsonl").display()
            ),
        ]
    );
    let tables = "[fs]\nroot = \"ask.jsonl\"";
    assert_eq!(
        problems_at(&with_task(tables, "{ sleep = \"1s\" }"), &path),
        [format!(
            "{}:4:8: field `fs.root`: expected a directory, found a file at {}",
            path.display(),
            dir.join("ask.jsonl").display()
        )]
    );
}

#[test]
fn fs_steps_change_only_the_overlay_and_report_the_diff() {
    // Goal: refactor-files edits, renames and deletes in the overlay; the report carries the
    // diff, the real directory stays byte-identical, and two runs give the same tape.
    let worktree = scenarios_dir().join("data/refactor/worktree");
    let before = snapshot(&worktree);
    let scenario = load("refactor-files.toml");
    assert!(scenario.has_fs());
    let report = run(&scenario, 0).unwrap();
    assert_eq!(
        report.outcomes,
        vec![("refactored".to_string(), json!("src/math/ops.rs"))]
    );
    let diff = report.fs_diff.as_ref().unwrap();
    let paths = |files: Vec<&str>| files.into_iter().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        diff.added
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        paths(vec!["CHANGELOG.md", "src/math/mod.rs", "src/math/ops.rs"])
    );
    assert_eq!(
        diff.modified
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        paths(vec!["README.md", "src/lib.rs"])
    );
    assert_eq!(
        diff.deleted
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        paths(vec!["NOTES.txt", "src/helpers.rs"])
    );
    assert!(diff.unified().contains("+mod math;\n"));
    assert_eq!(
        snapshot(&worktree),
        before,
        "the real directory was modified"
    );
    let (verdict, _) = read_tape(memory_tape(&report));
    assert_eq!(verdict, "ok");
    let again = run(&scenario, 0).unwrap();
    assert_eq!(memory_tape(&report), memory_tape(&again));
}

/// Returns every file under `dir` with its bytes, in path order.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.push((path, bytes));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_denied_connect_ends_the_run_with_the_named_error() {
    // Goal: denied-egress ends at its third connect with a step error naming the task, the
    // step and the denial; the tape's verdict says the same and the later outcome never runs.
    let scenario = load("denied-egress.toml");
    let error = run(&scenario, 0).unwrap_err();
    assert_eq!(error.error.kind(), "step_failed");
    let expected = "task \"fetcher\" failed at step task[0].steps[3] (`connect`): connection to pastebin.com:443 denied: no rule allows it (rules: api.github.com:443, 10.0.0.0/8)";
    assert_eq!(error.to_string(), expected);
    let ScenarioFailure::Step(step) = &*error.error else {
        panic!("expected a step failure, got {}", error.error);
    };
    assert!(matches!(step.error, CallError::Net(_)));
    assert_eq!(error.summary.end_ns, 20_000_000);
    assert!(error.fs_diff.is_none());
    let tape = summary_tape(&error.summary);
    let (verdict, _) = read_tape(tape);
    assert_eq!(verdict, format!("error: {expected}"));
}

#[test]
fn an_fs_escape_ends_the_run_and_keeps_the_diff_so_far() {
    // Goal: a path leaving the root is a step error, and the failed run still reports what it
    // had changed.
    let source = with_task(
        "[fs]\nroot = \"data/refactor/worktree\"",
        "{ write = \"new.txt\", content = \"x\" }, { read = \"../../hello.toml\" }",
    );
    let scenario = parse_at(&source, &scenarios_dir().join("escape.toml")).unwrap();
    let error = run(&scenario, 0).unwrap_err();
    assert_eq!(
        error.to_string(),
        "task \"a\" failed at step task[0].steps[1] (`read`): path \"../../hello.toml\" escapes the overlay root"
    );
    assert_eq!(error.fs_diff.unwrap().added.len(), 1);
}

#[test]
fn ask_sends_a_one_message_request_to_the_fixture() {
    // Goal: a matched `ask` answers in the fixture's virtual latency; an unmatched one ends
    // the run with the LLM error naming the request.
    let path = test_data().join("ask.toml");
    let tables = "[llm]\nfixture = \"ask.jsonl\"";
    let matched = with_task(tables, "{ ask = \"What is the capital of France?\" }");
    let report = run(&parse_at(&matched, &path).unwrap(), 0).unwrap();
    assert_eq!(report.summary.end_ns, 100_000_000);
    assert!(report.fs_diff.is_none());
    let unmatched = with_task(tables, "{ ask = \"What is the capital of Peru?\" }");
    let error = run(&parse_at(&unmatched, &path).unwrap(), 0).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("task \"a\" failed at step task[0].steps[0] (`ask`): no LLM fixture entry matched request sha256:"),
        "{text}"
    );
    assert!(
        text.ends_with("the last message begins:\nWhat is the capital of Peru?"),
        "{text}"
    );
}

#[test]
fn a_tape_names_no_host_path() {
    // Goal: the tape of a scenario with files is the same wherever the files sit, so golden
    // tapes do not depend on the checkout's location.
    let scenario = load("refactor-files.toml");
    let tape = run(&scenario, 1).unwrap();
    let bytes = memory_tape(&tape);
    let root = scenarios_dir().canonicalize().unwrap();
    let needle = root.to_string_lossy();
    assert!(!bytes
        .windows(needle.len())
        .any(|window| window == needle.as_bytes()));
}

// ---------------------------------------------------------------------------------------------
// Subprocesses: the [process] table and the `run` step.

/// Returns the `[process]` table of a scenario placed in `scenarios/` that uses the shipped
/// process tape, with `programs` as its modes.
fn process_table(programs: &str) -> String {
    format!("[process]\ntape = \"data/recorded-pipeline/process.jsonl\"\nprograms = {programs}")
}

#[test]
fn process_table_and_run_step_decode_with_exact_errors() {
    // Goal: a bad mode, a replay without a tape, an unknown key and bad `run` keys are each
    // reported at their own place with the exact message (`record` is a mode like the others).
    let source = with_task(
        "[process]\ndefault = \"sometimes\"\nprograms = { git = \"replay\", make = \"record\", ls = 3 }\ncolour = 1",
        "{ run = \"\" }, { run = \"git\", args = \"status\" }, { run = \"git\", args = [1], cwd = 2, logs = \"x\" }",
    );
    assert_eq!(
        problems(&source),
        [
            "s.toml:3:1: field `process.tape`: expected a process tape path relative to the scenario file (a program is in replay mode), found nothing",
            "s.toml:4:11: field `process.default`: expected a process mode `hermetic`, `replay`, `record`, `real` or `wasi`, found \"sometimes\"",
            "s.toml:5:52: field `process.programs.ls`: expected a process mode `hermetic`, `replay`, `record`, `real` or `wasi`, found 3",
            "s.toml:6:1: field `process.colour`: unknown key, expected one of `tape`, `default`, `programs`, `wasi_dir`",
            "s.toml:9:18: field `task[0].steps[0].run`: expected a program name like \"git\", found \"\"",
            "s.toml:9:46: field `task[0].steps[1].args`: expected an array of arguments like [\"status\", \"--short\"], found \"status\"",
            "s.toml:9:81: field `task[0].steps[2].args[0]`: expected an argument string, found 1",
            "s.toml:9:91: field `task[0].steps[2].cwd`: expected a working directory string, found 2",
            "s.toml:9:94: field `task[0].steps[2].logs`: unknown key, expected `args`, `cwd`, `stdin`, `log` (no other key goes with `run`)",
        ]
    );
}

#[test]
fn a_run_step_needs_a_process_table() {
    // Goal: `run` without [process] is a check error at the step.
    assert_eq!(
        problems(&with_task("", "{ run = \"git\", args = [\"status\"] }")),
        ["s.toml:6:18: field `task[0].steps[0].run`: step `run` needs a [process] table"]
    );
}

#[test]
fn the_process_tape_is_opened_at_check_time() {
    // Goal: a missing tape is reported with its resolved path, and a malformed one with its
    // own file and line, both at `process.tape`.
    let path = scenarios_dir().join("x.toml");
    let tables = "[process]\ntape = \"data/no-such/process.jsonl\"\ndefault = \"replay\"";
    assert_eq!(
        problems_at(&with_task(tables, "{ sleep = \"1s\" }"), &path),
        [format!(
            "{}:4:8: field `process.tape`: expected an existing process tape file, found nothing at {}",
            path.display(),
            scenarios_dir().join("data/no-such/process.jsonl").display()
        )]
    );
    // The fs fixture is a JSONL file, but not a process tape: its first line is no header.
    let path = test_data().join("x.toml");
    let tables = "[process]\ntape = \"ask.jsonl\"";
    let found = problems_at(&with_task(tables, "{ sleep = \"1s\" }"), &path);
    let prefix = format!(
        "{}:4:8: field `process.tape`: {}:1: expected the header {{\"simtape_process\": 1}}, found ",
        path.display(),
        test_data().join("ask.jsonl").display()
    );
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with(&prefix), "{}", found[0]);
}

#[test]
fn recorded_pipeline_replays_with_no_process_and_the_recorded_durations() {
    // Goal: the shipped scenario answers `git status` and `echo hi` from its process tape, logs
    // the recorded output, and ends at exactly 12 ms + 5 ms (sleep) + 2 ms, at every seed.
    let scenario = load("recorded-pipeline.toml");
    // The git step runs in `repo`, which exists nowhere: a real git could not even start.
    assert!(!scenarios_dir().join("repo").exists());
    assert!(!Path::new("repo").exists());
    for &seed in scenario.seeds() {
        let report = run(&scenario, seed).unwrap();
        assert_eq!(report.summary.end_ns, 19_000_000);
        assert_eq!(
            report.outcomes,
            vec![("ran".to_string(), json!(["git", "echo"]))]
        );
        let (verdict, events) = read_tape(memory_tape(&report));
        assert_eq!(verdict, "ok");
        let events: Vec<(u64, String, Value)> = events
            .into_iter()
            .map(|(t_ns, _, name, fields)| (t_ns, name, fields))
            .collect();
        assert_eq!(
            events,
            vec![
                (
                    12_000_000,
                    "git-status".to_string(),
                    json!({ "status": { "code": 0 }, "stdout": " M src/lib.rs\n?? notes.txt\n", "stderr": "" })
                ),
                (
                    19_000_000,
                    "echoed".to_string(),
                    json!({ "status": { "code": 0 }, "stdout": "hi\n", "stderr": "" })
                ),
            ]
        );
    }
}

#[test]
fn a_process_divergence_or_an_uncovered_program_ends_the_run() {
    // Goal: a call the tape does not hold ends the run with the named divergence, and a
    // program left hermetic ends it with "not covered"; neither takes virtual time.
    let path = scenarios_dir().join("diverge.toml");
    let tables = process_table("{ git = \"replay\", echo = \"hermetic\" }");
    let diverged = with_task(&tables, "{ run = \"git\", args = [\"log\"] }");
    let error = run(&parse_at(&diverged, &path).unwrap(), 0).unwrap_err();
    assert_eq!(error.error.kind(), "step_failed");
    let expected = "task \"a\" failed at step task[0].steps[0] (`run`): process tape diverged at call #1 (git): args differs from the entry at line 5: expected [\"status\",\"--short\"], found [\"log\"]";
    assert_eq!(error.to_string(), expected);
    let ScenarioFailure::Step(step) = &*error.error else {
        panic!("expected a step failure, got {}", error.error);
    };
    assert!(matches!(
        step.error,
        CallError::Process(simtape::cap::process::ProcessError::Diverged { .. })
    ));
    assert_eq!(error.summary.end_ns, 0);
    let tape = summary_tape(&error.summary);
    assert_eq!(read_tape(tape).0, format!("error: {expected}"));

    let uncovered = with_task(&tables, "{ run = \"echo\", args = [\"hi\"] }");
    let error = run(&parse_at(&uncovered, &path).unwrap(), 0).unwrap_err();
    assert_eq!(
        error.to_string(),
        "task \"a\" failed at step task[0].steps[0] (`run`): program \"echo\" is not covered: hermetic mode runs nothing; give it a mode in [process] programs (`replay`, `record`, `real` or `wasi`), or run it as a WASI module with --process-wasi DIR"
    );
}

#[test]
fn llm_record_is_checked_field_by_field_and_against_the_network_policy() {
    // Goal: `[llm.record]` defaults its URL, key variable and output to the provider's and
    // the fixture's; a missing provider, a bad key variable and a [network] policy that
    // denies the provider's host are each a problem at the field that says so.
    let head = "[scenario]\nname = \"r\"\n[llm]\nfixture = \"data/refactor-agent/llm.jsonl\"\n";
    let task = "[[task]]\nname = \"t\"\nsteps = [{ sleep = \"1ms\" }]\n";
    let source = format!("{head}[llm.record]\nprovider = \"anthropic\"\n{task}");
    let scenario = parse_at(&source, &scenarios_dir().join("r.toml")).unwrap();
    let record = scenario.llm_record().unwrap();
    assert_eq!(record.base_url(), "https://api.anthropic.com");
    assert_eq!(record.key_variable(), "ANTHROPIC_API_KEY");
    assert_eq!(
        scenario.llm_record_out().unwrap(),
        scenarios_dir().join("data/refactor-agent/llm.jsonl")
    );
    assert!(parse(
        &format!("{head}{task}")
            .replace("data/refactor-agent", "../../scenarios/data/refactor-agent")
    )
    .llm_record()
    .is_none());
    let bad = format!("{head}[llm.record]\nkey_env = \"A-B\"\n{task}");
    assert_eq!(
        problems(&bad),
        [
            "s.toml:5:1: field `llm.record.provider`: expected a provider wire format, one of `anthropic`, `openai-chat`, `openai-responses`, found nothing",
            "s.toml:6:11: field `llm.record.key_env`: expected an environment variable name like \"OPENAI_API_KEY\", found \"A-B\"",
        ]
    );
    let denied = format!(
        "{head}[llm.record]\nprovider = \"openai-chat\"\n[network]\nallow = [\"api.github.com\"]\n{task}"
    );
    let found = problems(&denied);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("s.toml:5:1: field `llm.record`: recording calls api.openai.com:443, which the [network] policy denies"),
        "{found:?}"
    );
    let allowed = denied.replace("api.github.com", "api.openai.com");
    assert!(parse_at(&allowed, &scenarios_dir().join("r.toml")).is_ok());
}

#[test]
fn llm_handover_is_checked_field_by_field() {
    // Goal: `[llm.handover]` (what `simtape fork --fixture` writes) needs a call number of 1
    // or more and a fixture; each problem names its field.
    let head = "[scenario]\nname = \"r\"\n[llm]\nfixture = \"data/refactor-agent/llm.jsonl\"\n";
    let task = "[[task]]\nname = \"t\"\nsteps = [{ sleep = \"1ms\" }]\n";
    let bad = format!("{head}[llm.handover]\nfrom_call = 0\ncolour = 1\n{task}");
    assert_eq!(
        problems(&bad),
        [
            "s.toml:5:1: field `llm.handover.fixture`: expected a fixture file path relative to the scenario file, found nothing",
            "s.toml:6:13: field `llm.handover.from_call`: expected the run's model call the other fixture answers from, 1 or more, found 0",
            "s.toml:7:1: field `llm.handover.colour`: unknown key, expected `from_call` or `fixture`",
        ]
    );
}
