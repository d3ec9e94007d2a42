//! An agent program as the worker of a `[harness]` run: one process per session, started in
//! a directory that holds the run's files as the overlay has them (the harness's state and
//! the earlier sessions' work), stopped where a seeded crash or its turn budget ends the
//! session, its changes back in the overlay, validated inside the simulation. One seed, one
//! tape, byte-identical per seed and replayable without the program. The agent here is a
//! Python script on the standard library alone; Claude Code runs
//! `scenarios/feature-list-claude-code.toml`.

use std::path::{Path, PathBuf};

use crate::clients::claude;
use crate::common::{load_json, repo, scratch, simtape, text};

/// A tool-calling agent on the OpenAI Chat Completions wire: it says which features
/// `feature_list.json` (the harness's state, in its directory) has passing, then loops: ask
/// the model, run its `append_file` calls, until it answers without one. A model error makes
/// it exit 1.
const AGENT: &str = r#"
import json, os, sys, urllib.request, urllib.error
listed = json.load(open("feature_list.json"))["features"]
passing = [f["id"] for f in listed if f["passes"]]
print("passing when this session started: " + (", ".join(passing) or "none"), flush=True)
tools = [{"type": "function", "function": {"name": "append_file", "description": "append",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"},
          "content": {"type": "string"}}, "required": ["path", "content"]}}}]
messages = [{"role": "user", "content": os.environ["SIMTAPE_TASK"]}]
while True:
    body = {"model": "m", "messages": messages, "tools": tools}
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
        headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            message = json.load(response)["choices"][0]["message"]
    except urllib.error.HTTPError as error:
        print("model error", error.code)
        sys.exit(1)
    messages.append(message)
    calls = message.get("tool_calls") or []
    if not calls:
        print(message["content"])
        break
    for call in calls:
        args = json.loads(call["function"]["arguments"])
        with open(args["path"], "a") as out:
            out.write(args["content"])
        messages.append({"role": "tool", "tool_call_id": call["id"],
                         "content": "appended to " + args["path"]})
"#;

/// Two features; each session appends its feature's line to calc.txt, then says so.
const FIXTURE: &str = r#"{"simtape_llm": 1, "latency": {"base_ms": 500, "jitter_ms": 200}}
{"id": "add-done", "mode": "sticky", "match": {"text": {"contains": "feature add:"}, "last_tool_result": {"glob": "appended *"}}, "response": {"text": "add is done."}}
{"id": "add", "mode": "sticky", "match": {"last_message": {"contains": "feature add:"}}, "response": {"text": "Adding add.", "tool_calls": [{"name": "append_file", "arguments": {"path": "calc.txt", "content": "add\n"}}]}}
{"id": "sub-done", "mode": "sticky", "match": {"text": {"contains": "feature sub:"}, "last_tool_result": {"glob": "appended *"}}, "response": {"text": "sub is done."}}
{"id": "sub", "mode": "sticky", "match": {"last_message": {"contains": "feature sub:"}}, "response": {"text": "Adding sub.", "tool_calls": [{"name": "append_file", "arguments": {"path": "calc.txt", "content": "sub\n"}}]}}
"#;

/// Writes the harness scenario whose sessions `agent.py` works; `harness` is appended to
/// its `[harness]` table.
fn scenario(dir: &Path, harness: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("repo")).unwrap();
    std::fs::write(
        dir.join("repo/README"),
        "calc.txt lists the features built\n",
    )
    .unwrap();
    std::fs::write(dir.join("agent.py"), AGENT).unwrap();
    std::fs::write(dir.join("llm.jsonl"), FIXTURE).unwrap();
    let agent = dir.join("agent.py").display().to_string();
    let toml = format!(
        r#"[scenario]
name = "harness-program"
seeds = [0]

[fs]
root = "repo"

[llm]
fixture = "llm.jsonl"

[agent]
kind = "command"
adapter = "generic"
command = "python3"
args = [{agent:?}]
task = "Build calc.txt."
timeout = "60s"

[harness]
mode = "strict_incremental"
max_runs = 8
retry_budget = 4
{harness}

[[harness.feature]]
id = "add"
description = "add is listed"
priority = 1
verify = [{{ kind = "fs", path = "calc.txt", contains = "add" }}]

[[harness.feature]]
id = "sub"
description = "sub is listed"
priority = 2
verify = [{{ kind = "fs", path = "calc.txt", contains = "sub" }}]
"#
    );
    let path = dir.join("harness.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Runs `scenario` at `seed` with its tape and evidence in `dir`; returns the output.
fn run(scenario: &Path, seed: u64, dir: &Path, label: &str) -> (i32, String) {
    let output = simtape()
        .args(["run", "--seed", &seed.to_string(), "--tape"])
        .arg(dir.join(format!("{label}.tape")))
        .arg("--evidence")
        .arg(dir.join(format!("{label}-evidence")))
        .arg(scenario)
        .output()
        .unwrap();
    (output.status.code().unwrap_or(-1), text(&output))
}

#[test]
fn an_agent_program_works_a_harness_run_one_process_per_session() {
    let dir = scratch("harness-agents", "sessions");
    let scenario = scenario(&dir, "max_turns_per_run = 3");
    let (code, shown) = run(&scenario, 0, &dir, "a");
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("result: PASS"), "{shown}");
    // One process per session (the generic adapter sees its printed lines, not its tool
    // calls), each ending with its answer.
    for line in [
        "session 1 (add): 1 turn(s), 0 tool call(s), succeeded\n",
        "session 2 (sub): 1 turn(s), 0 tool call(s), succeeded\n",
        "answer: sub is done.",
    ] {
        assert!(shown.contains(line), "{line}: {shown}");
    }
    // Each process found the harness's state in its directory: the second saw the first's
    // feature passing, which only the harness (inside the simulation) had written.
    let log = std::fs::read_to_string(dir.join("a-evidence/session.ndjson")).unwrap();
    assert!(
        log.contains("passing when this session started: none"),
        "{log}"
    );
    assert!(
        log.contains("passing when this session started: add"),
        "{log}"
    );
    // The sessions' work reached the overlay: the fs diff holds it and the state files.
    let verdict = load_json(&dir.join("a-evidence/verdict.json"));
    let sessions = verdict["transcript"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3, "{verdict}");
    let diff = std::fs::read_to_string(dir.join("a-evidence/fs.diff")).unwrap();
    assert!(diff.contains("+add\n+sub\n"), "{diff}");
    assert!(diff.contains("feature_list.json"), "{diff}");
    // The real directory is never touched.
    assert!(!dir.join("repo/calc.txt").exists());
    // The sidecar lists each session's process, in order.
    let meta = load_json(&dir.join("a-evidence/session.meta.json"));
    let processes = meta["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 2, "{meta}");
    for process in processes {
        assert_eq!(process["exit"], serde_json::json!({"exited": 0}), "{meta}");
        assert!(
            process["args"][0].as_str().unwrap().ends_with("agent.py"),
            "{meta}"
        );
    }
    // Same seed, same bytes; and the tape replays without the program.
    let (code, shown) = run(&scenario, 0, &dir, "b");
    assert_eq!(code, 0, "{shown}");
    let (a, b) = (
        std::fs::read(dir.join("a.tape")).unwrap(),
        std::fs::read(dir.join("b.tape")).unwrap(),
    );
    assert!(a == b, "two runs of one seed wrote different tapes");
    replays_without_the_program(&dir.join("a.tape"), &scenario);
}

#[test]
fn a_session_whose_program_exits_non_zero_fails_without_its_work() {
    // A process that exits 3 fails its session as a model error does: the section ends
    // "failed: agent exit", the checkpoint's note says how (once), and the harness goes on
    // to the next session until its retries are spent.
    let dir = scratch("harness-agents", "exits");
    let scenario = scenario(&dir, "max_turns_per_run = 3");
    std::fs::write(
        dir.join("agent.py"),
        "import sys\nprint('giving up', flush=True)\nsys.exit(3)\n",
    )
    .unwrap();
    let (code, shown) = run(&scenario, 0, &dir, "a");
    assert_eq!(code, 1, "{shown}");
    assert!(
        shown.contains("session 1 (add): 1 turn(s), 0 tool call(s), failed: agent exit\n"),
        "{shown}"
    );
    assert!(!shown.contains("failed: the agent exited"), "{shown}");
    let diff = std::fs::read_to_string(dir.join("a-evidence/fs.diff")).unwrap();
    assert!(diff.contains("the agent exited with status 3"), "{diff}");
    let meta = load_json(&dir.join("a-evidence/session.meta.json"));
    let processes = meta["processes"].as_array().unwrap();
    assert!(
        processes.len() > 1,
        "the harness went on after a failed session: {meta}"
    );
    for process in processes {
        assert_eq!(process["exit"], serde_json::json!({"exited": 3}), "{meta}");
    }
}

#[test]
fn a_session_past_its_turn_budget_is_stopped_there() {
    // One turn per session: the agent's second request is not answered, and the process is
    // stopped while it waits. Its append (turn 1) is done, so the feature validates.
    let dir = scratch("harness-agents", "budget");
    let scenario = scenario(&dir, "max_turns_per_run = 1");
    let (code, shown) = run(&scenario, 0, &dir, "a");
    assert_eq!(code, 0, "{shown}");
    for line in [
        "session 1 (add): 1 turn(s), 0 tool call(s), succeeded, agent ended by max_turns",
        "session 2 (sub): 1 turn(s), 0 tool call(s), succeeded, agent ended by max_turns",
    ] {
        assert!(shown.contains(line), "{line}: {shown}");
    }
    // The process never printed its answer: it was stopped before the model gave one.
    let log = std::fs::read_to_string(dir.join("a-evidence/session.ndjson")).unwrap();
    assert!(!log.contains("is done."), "{log}");
    let meta = load_json(&dir.join("a-evidence/session.meta.json"));
    assert_ne!(meta["exit"], serde_json::json!({"exited": 0}), "{meta}");
}

#[test]
fn seeded_crashes_kill_agent_processes_and_a_broken_harness_is_caught() {
    // A session the seeded crash kills leaves no checkpoint; the next process starts from
    // the last one. Over a sweep the correct harness always finishes, and the one that marks
    // before validating breaks its invariant exactly where a crash lands between work and
    // validation; every failing seed replays bit for bit without the program.
    let dir = scratch("harness-agents", "crashes");
    let good = scenario(&dir, "max_turns_per_run = 3\ncrash = \"1/3\"");
    let output = simtape()
        .args(["sweep", "--seeds", "0..12", "--jobs", "2", "--report-out"])
        .arg(dir.join("report.json"))
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report = load_json(&dir.join("report.json"));
    let harness = &report["scenarios"][0]["summary"]["harness"];
    assert_eq!(harness["done"], 12, "{report}");
    assert!(
        harness["crashed_sessions"].as_u64().unwrap() > 0,
        "{harness}"
    );

    let broken_dir = dir.join("broken");
    let broken = scenario(
        &broken_dir,
        "max_turns_per_run = 3\ncrash = \"1/3\"\nmark = \"before_validation\"",
    );
    let out = broken_dir.join("out");
    let output = simtape()
        .args(["sweep", "--seeds", "0..12", "--jobs", "2", "--out"])
        .arg(&out)
        .arg(&broken)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("harness: no feature passes without validation"),
        "{shown}"
    );
    let kept = std::fs::read_dir(out.join("harness-program"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == "tape"))
        .expect("a failing seed's tape is kept");
    replays_without_the_program(&kept, &broken);
}

#[test]
fn claude_code_builds_the_feature_list_session_by_session() {
    let Some(claude) = claude() else {
        return;
    };
    let dir = scratch("harness-agents", "claude-code");
    let scenario = repo().join("scenarios/feature-list-claude-code.toml");
    // Seed 0 crashes session 2 between its work and its validation, and kills session 4's
    // process at its first turn.
    let mut tapes = Vec::new();
    for run in 0..2 {
        let tape = dir.join(format!("run-{run}.tape"));
        let output = simtape()
            .args(["run", "--seed", "0", "--tape"])
            .arg(&tape)
            .arg("--agent-bin")
            .arg(&claude)
            .arg(&scenario)
            .output()
            .unwrap();
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(0), "{shown}");
        for line in [
            "result: PASS",
            "session 2 (sub): 3 turn(s), 2 tool call(s), crashed before validation",
            "session 3 (sub): 2 turn(s), 1 tool call(s), succeeded",
            "session 4 (mul): 1 turn(s), 1 tool call(s), crashed at turn 1",
            "session 5 (mul): 3 turn(s), 2 tool call(s), succeeded",
            "verify held   gate feature-test tests/add.rhai tests/sub.rhai tests/mul.rhai",
        ] {
            assert!(shown.contains(line), "{line}: {shown}");
        }
        tapes.push(std::fs::read(&tape).unwrap());
    }
    assert!(tapes[0] == tapes[1], "the tapes differ");
    // The replay needs no Claude Code: every session's inputs are on the tape.
    replays_without_the_program(&dir.join("run-0.tape"), &scenario);
}

/// Checks that `tape` replays byte-identical with `scenario` and no program on `PATH`.
fn replays_without_the_program(tape: &Path, scenario: &Path) {
    let replay = simtape()
        .arg("replay")
        .arg(tape)
        .arg("--scenario")
        .arg(scenario)
        .env("PATH", "")
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay));
    assert!(
        text(&replay).contains("byte-identical"),
        "{}",
        text(&replay)
    );
}
