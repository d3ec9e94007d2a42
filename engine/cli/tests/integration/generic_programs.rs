//! Generic programs as first-class agents, and one sweep across agents, with the shipped
//! example `examples/agents/generic-python` (a Python program on the standard library alone,
//! started as `command = "python3", args = ["agent.py"]`): its turns and tool calls counted
//! from its model traffic or its own unified events, its crash shown with the end of its
//! stderr, `simtape new --command`, `check`'s warning for a verifier that can never pass,
//! and `sweep --agents` over its variants.

use std::path::{Path, PathBuf};

use crate::common::{repo, scratch, simtape, text};

fn example() -> PathBuf {
    repo().join("examples/agents/generic-python/scenario.toml")
}

/// Runs `simtape ARGS` in `dir` (so nothing resolves against the test's own directory);
/// returns its exit code and output.
fn run_in(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let output = simtape().args(args).current_dir(dir).output().unwrap();
    (output.status.code(), text(&output))
}

#[test]
fn a_generic_program_is_counted_from_its_model_traffic_and_replays() {
    // Goal: a program that prints only plain lines gets its real turns and tool calls (from
    // the answers' tool calls and the next request's tool results), so `tool_called` holds;
    // the relative script beside the scenario is found from any directory; the tape replays
    // to the same bytes without the program.
    let dir = scratch("generic", "traffic");
    let tape = dir.join("run.tape");
    let scenario = example().display().to_string();
    let tape_arg = tape.display().to_string();
    let (code, shown) = run_in(
        &dir,
        &["run", &scenario, "--seed", "0", "--tape", &tape_arg],
    );
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains("agent: 2 turn(s), 1 tool call(s), 0 retr(ies), ended by final_answer"),
        "{shown}"
    );
    assert!(shown.contains("verify held   tool_called add"), "{shown}");
    let (code, replayed) = run_in(&dir, &["replay", &tape_arg]);
    assert_eq!(code, Some(0), "{replayed}");
    assert!(replayed.contains("byte-identical"), "{replayed}");
    // The same agent printing the unified events is read from them: the same counts.
    let (code, shown) = run_in(
        &dir,
        &["run", &scenario, "--seed", "0", "--agent", "reporting"],
    );
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains("agent: 2 turn(s), 1 tool call(s), 0 retr(ies), ended by final_answer"),
        "{shown}"
    );
}

#[test]
fn a_crashing_program_shows_the_end_of_its_stderr() {
    // Goal: a non-zero exit is a FAIL whose reason ends with the program's last stderr lines,
    // normalized (the scenario's directory as <scenario>); the run ended by the exit, with no
    // answer; the reproduce command names the agent.
    let dir = scratch("generic", "crash");
    let scenario = example().display().to_string();
    let (code, shown) = run_in(
        &dir,
        &["run", &scenario, "--seed", "0", "--agent", "crashing"],
    );
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains("verifier \"agent exits 0\" failed: the agent exited with status 1\nthe agent's stderr ended with"),
        "{shown}"
    );
    assert!(
        shown.contains("  | ValueError: could not read the result of add: '5'\n"),
        "{shown}"
    );
    assert!(shown.contains("File \"<scenario>/agent.py\""), "{shown}");
    let from = shown.find("verifier \"agent exits 0\" failed").unwrap();
    let to = shown[from..].find("  verify ").unwrap();
    crate::common::check_doc_block(
        "docs/agents.md",
        "crashing variant",
        &shown[from..from + to],
    );
    assert!(shown.contains("ended by agent_exit"), "{shown}");
    assert!(!shown.contains("answer: "), "{shown}");
    assert!(shown.contains("--agent crashing"), "{shown}");
    // An agent the scenario does not know is a usage error naming the known ones.
    let (code, shown) = run_in(&dir, &["run", &scenario, "--agent", "nope"]);
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        shown.contains("unknown agent \"nope\": expected one of retrying, giving-up, crashing, reporting, claude-code"),
        "{shown}"
    );
}

#[test]
fn new_writes_a_program_scenario_that_runs() {
    // Goal: `simtape new NAME --command "python3 agent.py"` writes a generic scenario naming
    // the script from the scenario's directory, a fixture to fill in and the project; it
    // checks, and runs the program against the fixture's one answer.
    let dir = scratch("generic", "new");
    std::fs::copy(
        repo().join("examples/agents/generic-python/agent.py"),
        dir.join("agent.py"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    let (code, shown) = run_in(&dir, &["new", "demo", "--command", "python3 agent.py"]);
    assert_eq!(code, Some(0), "{shown}");
    let toml = std::fs::read_to_string(dir.join("scenarios/demo.toml")).unwrap();
    assert!(
        toml.contains("command = \"python3\"\nargs = [\"../agent.py\"]"),
        "{toml}"
    );
    assert!(dir.join("scenarios/data/demo/llm.jsonl").is_file());
    assert!(dir.join("scenarios/data/demo/project/README.md").is_file());
    let (code, shown) = run_in(&dir, &["check", "scenarios/demo.toml"]);
    assert_eq!(code, Some(0), "{shown}");
    let (code, shown) = run_in(&dir, &["run", "scenarios/demo.toml"]);
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains("agent: 1 turn(s), 0 tool call(s), 0 retr(ies), ended by final_answer\nanswer: TODO: the model's first answer."),
        "{shown}"
    );
    let (code, shown) = run_in(&dir, &["new", "demo", "--command", "python3 'agent.py"]);
    assert_eq!(code, Some(2), "{shown}");
    assert!(shown.contains("a ' quote is not closed"), "{shown}");
}

#[test]
fn check_warns_of_a_tool_called_verifier_that_can_never_pass() {
    // Goal: a `tool_called` verifier for a tool no answer of the fixture calls is named by
    // `check`; one the fixture calls is not.
    let dir = scratch("generic", "check");
    let source = repo().join("examples/agents/generic-python");
    for file in ["scenario.toml", "llm.jsonl", "agent.py"] {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    std::fs::create_dir_all(dir.join("repo")).unwrap();
    let mut toml = std::fs::read_to_string(dir.join("scenario.toml")).unwrap();
    toml.push_str("\n[[verify]]\nkind = \"tool_called\"\ntool = \"multiply\"\n");
    std::fs::write(dir.join("scenario.toml"), &toml).unwrap();
    let line = toml.lines().count() - 2;
    let (code, shown) = run_in(&dir, &["check", "scenario.toml"]);
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains(&format!("warning: verifier \"tool_called multiply\" (line {line}) can never pass: no answer of the fixture llm.jsonl calls multiply")),
        "{shown}"
    );
    assert!(!shown.contains("tool_called add\" (line"), "{shown}");
}

#[test]
fn a_sweep_across_agents_compares_them_seed_by_seed_at_any_jobs() {
    // Goal: `sweep --agents` runs the same 20 seeds (the same 429s) for each agent; the
    // per-agent table and the paired comparison are printed, in the JSON report and on the
    // HTML page, identical at --jobs 1 and --jobs 2; the agent that retries the 429 passes
    // more, beyond chance.
    let dir = scratch("generic", "sweep");
    let scenario = example().display().to_string();
    let mut reports = Vec::new();
    for jobs in ["1", "2"] {
        let report = dir.join(format!("jobs-{jobs}.json")).display().to_string();
        let (code, shown) = run_in(
            &dir,
            &[
                "sweep",
                &scenario,
                "--seeds",
                "0..20",
                "--agents",
                "giving-up,retrying",
                "--jobs",
                jobs,
                "--report-out",
                &report,
            ],
        );
        assert_eq!(code, Some(1), "{shown}");
        let report_line = format!("report: {report}\n");
        let summary: String = shown
            .lines()
            .filter(|line| !line.starts_with("sweep: "))
            .map(|line| format!("{line}\n"))
            .collect();
        reports.push((
            summary.replace(&report_line, ""),
            std::fs::read(&report).unwrap(),
        ));
    }
    assert_eq!(reports[0].0, reports[1].0, "the summary at --jobs 1 and 2");
    assert!(
        reports[0].1 == reports[1].1,
        "the JSON report at --jobs 1 and 2"
    );
    let summary = &reports[0].0;
    assert!(
        summary.contains("agents of scenario generic-python (each ran the same seeds, which drew the same faults):"),
        "{summary}"
    );
    assert!(
        summary.contains("  retrying     20      20  1 = 1.0000"),
        "{summary}"
    );
    assert!(
        summary.contains("paired: giving-up vs retrying on generic-python: 20 seed(s), only giving-up passed 0 seed(s) [], only retrying passed"),
        "{summary}"
    );
    assert!(summary.contains(": retrying passes more\n"), "{summary}");
    let from = summary.find("agents of scenario").unwrap();
    crate::common::check_doc_block(
        "docs/sweeps.md",
        "The agents' part of the summary",
        &summary[from..],
    );
    let json: serde_json::Value = serde_json::from_slice(&reports[0].1).unwrap();
    let failing = &json["scenarios"][0]["results"];
    let replay = failing
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r["replay"].as_str());
    assert!(
        replay.is_some_and(|r| r.ends_with("--agent giving-up")),
        "{failing}"
    );
    let pair = &json["agents"][0];
    assert_eq!(
        (pair["a"].as_str(), pair["b"].as_str()),
        (Some("giving-up"), Some("retrying"))
    );
    assert_eq!(pair["only_a"], serde_json::json!([]));
    assert_eq!(json["scenarios"][1]["name"], "generic-python@retrying");
    assert_eq!(json["scenarios"][1]["agent"], "retrying");
    let html = dir.join("sweep.html").display().to_string();
    let json_path = dir.join("jobs-1.json").display().to_string();
    let (code, shown) = run_in(
        &dir,
        &[
            "report",
            "merge",
            &json_path,
            "--report",
            "html",
            "--report-out",
            &html,
        ],
    );
    assert!(code.is_some(), "{shown}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Agents compared seed by seed"), "{page}");
    assert!(page.contains("<td>retrying passes more</td>"), "{page}");
    // An agent neither a variant nor an adapter: exit 2 before any run, naming the known.
    let (code, shown) = run_in(
        &dir,
        &[
            "sweep",
            &scenario,
            "--seeds",
            "0..2",
            "--agents",
            "retrying,nope",
        ],
    );
    assert_eq!(code, Some(2), "{shown}");
    assert!(
        shown.contains("unknown agent \"nope\": expected one of retrying, giving-up"),
        "{shown}"
    );
}

#[test]
fn a_serve_tape_of_a_program_scenario_replays_with_serves_judgement() {
    // Goal: `simtape serve` of an agent-program scenario with verifiers judges only the
    // agent's exit (verdict ok) and applies none of the scenario's verifiers; `replay
    // --scenario` of its tape judges the same way and gives the same bytes, instead of running
    // the verifiers serve skipped ("verdict differs"). A `run` tape of the same scenario still
    // replays through its verifiers.
    let dir = scratch("generic", "serve-replay");
    let scenario = example().display().to_string();
    let agent = repo().join("examples/agents/generic-python/agent.py");
    let (code, shown) = run_in(
        &dir,
        &[
            "serve",
            &scenario,
            "--seed",
            "0",
            "--no-sandbox",
            "--tape",
            "serve.tape",
            "--",
            "python3",
            agent.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("verdict: ok"), "{shown}");
    let (code, replayed) = run_in(&dir, &["replay", "serve.tape", "--scenario", &scenario]);
    assert_eq!(code, Some(0), "{replayed}");
    assert!(replayed.contains("replay: byte-identical"), "{replayed}");
    assert!(!replayed.contains("verdict differs"), "{replayed}");
    let (code, shown) = run_in(
        &dir,
        &["run", &scenario, "--seed", "0", "--tape", "run.tape"],
    );
    assert_eq!(code, Some(0), "{shown}");
    let (code, replayed) = run_in(&dir, &["replay", "run.tape", "--scenario", &scenario]);
    assert_eq!(code, Some(0), "{replayed}");
    assert!(replayed.contains("replay: byte-identical"), "{replayed}");
}
