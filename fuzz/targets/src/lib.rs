//! The fuzz targets of simtape: one pure function of untrusted bytes per parser, each calling
//! the real code the CLI and `serve` call. Two harnesses drive the same functions:
//!
//! * `fuzz/afl/` (outside the workspace, built with `cargo afl`) runs each target under
//!   AFL++'s coverage-guided persistent mode (`fuzz/run.sh`, `docs/fuzzing.md`);
//! * `cargo test` (`tests/corpus.rs`) replays every file of `fuzz/corpus/<target>/` and
//!   `fuzz/regressions/<target>/` through its target, so a crash once found stays fixed
//!   without AFL installed.
//!
//! A target returns normally for every input: a parser's error is an answer, not a finding.
//! A panic, an abort or a hang is the finding.
//!
//! Inputs that hold several parts (two tapes, several HTTP requests, a line reader's
//! settings and its stream) are split by the target, as each one's doc says, so that AFL's
//! byte mutations reach every part.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod serve;
mod stdio;

/// A fuzz target: returns for every input, panics only on a bug.
pub type Target = fn(&[u8]);

/// Every target, by the name its corpus directory and `fuzz/run.sh` use.
pub const TARGETS: &[(&str, Target)] = &[
    ("tape_reader", tape_reader),
    ("oracle_diff", oracle_diff),
    ("scenario", scenario),
    ("llm_fixture", llm_fixture),
    ("mcp_cassette", mcp_cassette),
    ("world_spec", world_spec),
    ("process_tape", process_tape),
    ("mcp_stdio", stdio::mcp_stdio),
    ("serve_endpoints", serve::serve_endpoints),
];

/// Returns the target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS
        .iter()
        .find(|(target, _)| *target == name)
        .map(|(_, run)| *run)
}

/// Runs target `name` once over each of its seeds (`fuzz/corpus/<name>/`), so that what a
/// target loads once per process (the fixtures in its `OnceLock`s, the parsers' and JSON
/// Schema's own lazily built tables) is loaded before AFL's fork server starts: every
/// execution AFL then counts does the same work for the same input. Returns the number of
/// seeds run.
pub fn warm_up(name: &str) -> usize {
    let Some(run) = target(name) else {
        return 0;
    };
    let Ok(entries) = std::fs::read_dir(repo().join("fuzz/corpus").join(name)) else {
        return 0;
    };
    let mut seeds = 0;
    for entry in entries.flatten() {
        if let Ok(data) = std::fs::read(entry.path()) {
            run(&data);
            seeds += 1;
        }
    }
    seeds
}

/// Returns the repository's root (the targets read the repository's own fixtures).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The records read from one tape before a target stops: a tape of more records than this
/// could only come from a seed far larger than the corpus keeps.
const RECORDS_MAX: usize = 100_000;

/// A tape as `simtape tape show` and the views read it: header, every record with its
/// payload decoded (blobs resolved), the timeline of the views, the footer and the inputs
/// section; then once more as `simtape replay` reads an open run's recorded inputs.
pub fn tape_reader(data: &[u8]) {
    if let Ok(reader) = simtape::tape::TapeReader::new(data) {
        let mut reader = reader.keep_blobs(true);
        let mut timeline = simtape_eval::view::timeline::Timeline::new(reader.header());
        let mut marks = Vec::new();
        for _ in 0..RECORDS_MAX {
            let Ok(Some(record)) = reader.next_record() else {
                break;
            };
            let _ = reader.actor_name(record.actor);
            let payload = match reader.resolve(&record) {
                Ok(bytes) => simtape::tape::payload_to_json(&bytes).unwrap_or_default(),
                Err(_) => serde_json::Value::Null,
            };
            if simtape_eval::view::timeline::Timeline::shows(record.kind) {
                timeline.push(&record, payload, &mut marks);
            }
        }
        timeline.finish(&mut marks);
        let _ = (
            reader.footer(),
            reader.inputs().map(|inputs| inputs.inputs.stored()),
        );
    }
    if let Ok(reader) = simtape::tape::TapeReader::new(data) {
        let _ = simtape::run::recorded_inputs(reader.keep_blobs(true));
    }
}

/// Two tapes diffed in every mode. The first four bytes (little-endian, modulo the rest's
/// length plus one) say where tape A ends and tape B begins.
pub fn oracle_diff(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let split = u32::from_le_bytes(*head) as usize % (rest.len() + 1);
    let (a, b) = rest.split_at(split);
    for mode in simtape::oracle::Mode::ALL {
        if let Ok(report) = simtape::oracle::diff_bytes(a, b, mode) {
            let _ = (report.render_text(), report.exit_code());
        }
    }
}

/// Scenario text checked as `simtape check` does (the core's tables and the eval harness's,
/// and the files they name, opened relative to the repository's `scenarios/`).
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| repo().join("scenarios/fuzz-input.toml"));
    let _ = simtape_agent::EvalScenario::check_source(text, path);
}

/// An LLM fixture, in our format or either of Harn's (the first line decides).
pub fn llm_fixture(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = simtape::cap::llm::Fixture::parse("fuzz.jsonl", text);
    }
}

/// An MCP cassette: parsed and checked as a scenario's `[[mcp]]` loads it, then replayed to
/// its own client messages as `simtape mcp replay` would.
pub fn mcp_cassette(data: &[u8]) {
    let Ok(cassette) = simtape_mcp::Cassette::parse(data, Path::new("fuzz.json")) else {
        return;
    };
    let _ = (cassette.check_servable(), cassette.exchanges());
    let mut server = simtape_mcp::ReplayServer::new(&cassette, simtape_mcp::Redactor::new(vec![]));
    let _ = server.opening();
    for message in cassette.client_messages() {
        let _ = server.handle_line(message.to_string().as_bytes());
    }
    let _ = server.take_misses();
}

/// An MCP world spec: parsed, checked and compiled, then served: the tool list, each tool
/// called with empty arguments, and the score of the state that leaves.
pub fn world_spec(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(world) = simtape_mcp::world::World::parse(text, Path::new("fuzz.json")) else {
        return;
    };
    let names: Vec<String> = world.spec.tools.iter().map(|t| t.name.clone()).collect();
    let mut server = simtape_mcp::world::server::WorldServer::new(world, 0);
    let _ = server.tools_list();
    for name in names {
        let params = serde_json::json!({"name": name, "arguments": {}});
        let _ = server.call_tool(&params);
    }
    let _ = (server.score(), server.report());
}

/// A process tape (`[process] tape`, JSONL).
pub fn process_tape(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = simtape::cap::process::ProcessTape::parse("fuzz.jsonl", text);
    }
}
