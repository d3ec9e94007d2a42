//! `simtape new NAME`: writes a small working scenario (and the worktree it edits) to start from.

use std::path::{Path, PathBuf};

use crate::args::NewArgs;
use crate::common::load_scenario;
use crate::exit::{CliError, CliResult, Outcome};
use simtape_serve::golden::{golden_path, tape_bytes};

pub(crate) mod program;

/// The scenario template; `{name}` is replaced by the scenario's name.
const TEMPLATE: &str = r#"# {name}: a starting point. Edit it, then `simtape check` and `simtape run` it.
#
# What it shows: the built-in agent sends its task to the model, replayed from
# data/{name}/llm.jsonl: the model reads notes.md, appends a line to it, and answers. The file
# lives in a copy-on-write overlay of data/{name}/worktree (the real directory is never
# touched). Two verifiers judge the run: the file's change and the final answer. The network
# is closed except for one allowed host.
#
# Seeds: 1, 2, 3 (the model's and the overlay's latencies come from the seed).
# Expected outcome: every seed PASSes (2 verifiers held) with an fs diff of one modified file
# (notes.md); the end time differs between seeds.

[scenario]
name = "{name}"
description = "An agent reviews a notes file in an overlay."
seeds = [1, 2, 3]

[limits]
virtual_time_max_ns = "10m"

[fs]
root = "data/{name}/worktree"

[network]
allow = ["api.example.com"]

[llm]
fixture = "data/{name}/llm.jsonl"

[agent]
system = "You review notes. Use the file tools; answer when done."
task = "Review notes.md and add a line saying it was reviewed."
tools = ["fs"]
max_turns = 5

[[verify]]
kind = "fs"
path = "notes.md"
state = "modified"
contains = "- reviewed by the agent"

[[verify]]
kind = "answer"
contains = "reviewed"
"#;

/// The model the template's agent talks to: one entry per turn, matched on the last message.
const FIXTURE: &str = r#"# The model of the starter scenario (see docs/llm-fixtures.md): read, append, answer.
{"simtape_llm": 1, "latency": {"base_ms": 300, "per_output_token_us": 2000, "jitter_ms": 100}}
{"id": "read", "match": {"last_message": {"contains": "Review notes.md"}}, "response": {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]}}
{"id": "append", "match": {"last_tool_result": {"contains": "written by hand"}}, "response": {"tool_calls": [{"name": "append_file", "arguments": {"path": "notes.md", "content": "- reviewed by the agent\n"}}]}}
{"id": "answer", "match": {"last_tool_result": {"contains": "notes.md"}}, "response": {"text": "notes.md reviewed; one line added."}}
"#;

/// The file the scenario's worktree starts with.
const NOTES: &str = "# Notes\n\n- written by hand\n";

pub(crate) fn run(args: &NewArgs) -> CliResult {
    let name = &args.name;
    if let Some(what) = simtape::scenario::name_problem(name) {
        return Err(CliError::Usage(format!(
            "scenario name {name:?}: expected {what}"
        )));
    }
    let dir = args.dir.clone().unwrap_or_else(default_dir);
    if let Some(command) = &args.command {
        return program::write_scenario(name, &dir, command);
    }
    let scenario = dir.join(format!("{name}.toml"));
    let data = dir.join("data").join(name);
    let notes = data.join("worktree").join("notes.md");
    let fixture = data.join("llm.jsonl");
    for path in [&scenario, &notes, &fixture] {
        if path.exists() {
            return Err(CliError::Usage(format!(
                "{} exists; not overwriting it",
                path.display()
            )));
        }
    }
    write(&scenario, &TEMPLATE.replace("{name}", name))?;
    write(&notes, NOTES)?;
    write(&fixture, FIXTURE)?;
    println!(
        "wrote {}, {} and {}",
        scenario.display(),
        fixture.display(),
        notes.display()
    );
    if let Some(tapes) = golden_dir(&dir) {
        // In the layout `simtape ci` checks, a scenario without golden tapes fails it: a new
        // one starts blessed, its tapes ready to commit beside it.
        let eval = load_scenario(&scenario, None)?;
        for &seed in eval.scenario().seeds() {
            let golden = golden_path(&tapes, name, seed);
            write_bytes(&golden, &tape_bytes(&eval, seed)?.0)?;
            println!("wrote golden tape {}", golden.display());
        }
    }
    println!(
        "next: simtape check {0}; simtape run {0} --tape out/{1}.tape",
        scenario.display(),
        name
    );
    Ok(Outcome::Success)
}

/// Returns the `tapes/` beside `dir` when `dir` is a `scenarios/` directory that has one.
fn golden_dir(dir: &Path) -> Option<PathBuf> {
    let parent = dir.parent()?;
    let tapes = parent.join("tapes");
    (dir.file_name()? == "scenarios" && tapes.is_dir()).then_some(tapes)
}

pub(super) fn write(path: &Path, text: &str) -> Result<(), CliError> {
    write_bytes(path, text.as_bytes())
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    // Either failure names the file the command was writing.
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(CliError::io(path))?;
    }
    std::fs::write(path, bytes).map_err(CliError::io(path))
}

/// Returns the default directory for new scenarios: `scenarios/` when it exists, else `.`.
fn default_dir() -> PathBuf {
    let scenarios = PathBuf::from("scenarios");
    if scenarios.is_dir() {
        scenarios
    } else {
        PathBuf::from(".")
    }
}
