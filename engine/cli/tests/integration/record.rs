//! Turning real runs into replayable inputs: a `[process]` program in `record` mode runs for
//! real and is written to a process tape, which the same scenario in `replay` mode then runs
//! from with the same records (commands that run a scenario many times or compare it refuse
//! a recording one); `run --record` records a scenario's model (from aimock, through
//! `[llm.record]`) and its replayed programs into the files it replays from; `fixtures
//! from-tape` makes an LLM fixture of any run's model calls.

use std::path::Path;

use crate::common::{expect, run_ok, scratch, simtape, text};

/// A scenario that runs `echo` and `printf` in `mode`, replaying from `tape` when given.
fn scenario(dir: &Path, file: &str, mode: &str, tape: Option<&str>) -> std::path::PathBuf {
    let tape = tape.map_or_else(String::new, |t| format!("tape = {t:?}\n"));
    let source = format!(
        r#"[scenario]
name = "rec"

[process]
{tape}programs = {{ echo = "{mode}", printf = "{mode}" }}

[[task]]
name = "script"
steps = [
  {{ run = "echo", args = ["hi"], log = "echoed" }},
  {{ sleep = "5ms" }},
  {{ run = "printf", args = ["%s-%s", "a", "b"], log = "printed" }},
  {{ outcome = "ran", value = true }},
]

[[verify]]
kind = "outcome"
name = "ran"
value = true
"#
    );
    let path = dir.join(file);
    std::fs::write(&path, source).unwrap();
    path
}

/// Runs the recording scenario into `a.tape`, its process tape into `frozen/`.
fn record(dir: &Path, scenario: &Path) {
    expect(
        simtape().current_dir(dir).arg("run").arg(scenario).args([
            "--tape",
            "a.tape",
            "--record-dir",
            "frozen",
        ]),
        0,
        "recorded: frozen/rec.process.jsonl",
    );
}

#[test]
fn a_recorded_program_replays_from_the_process_tape_it_wrote() {
    // Goal: `record` writes DIR/<name>.process.jsonl with each real run; switched to
    // `replay` with that tape, the run has the same records (the oracle finds them equal).
    let dir = scratch("record", "roundtrip");
    let recording = scenario(&dir, "rec.toml", "record", None);
    record(&dir, &recording);
    let tape = std::fs::read_to_string(dir.join("frozen/rec.process.jsonl")).unwrap();
    assert_eq!(tape.lines().count(), 3, "the header and two runs: {tape}");
    assert!(tape.contains("\"stdout\":\"a-b\""), "{tape}");
    let replaying = scenario(&dir, "rep.toml", "replay", Some("frozen/rec.process.jsonl"));
    replays_as_recorded(&dir, &replaying);
}

/// Runs `scenario` (replaying) into `b.tape` and checks its records equal those of the
/// recording's `a.tape`.
fn replays_as_recorded(dir: &Path, scenario: &Path) {
    run_ok(
        simtape()
            .current_dir(dir)
            .arg("run")
            .arg(scenario)
            .args(["--tape", "b.tape"]),
    );
    expect(
        simtape()
            .current_dir(dir)
            .args(["diff", "a.tape", "b.tape"]),
        0,
        "tapes equal (exact)",
    );
}

#[test]
fn commands_that_repeat_or_compare_a_run_refuse_a_recording_scenario() {
    // Goal: sweep, ci and replay exit 2 naming what records; --record-dir without a
    // recording program is a usage error.
    let dir = scratch("record", "refused");
    let recording = scenario(&dir, "rec.toml", "record", None);
    record(&dir, &recording);
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("scenarios")).unwrap();
    std::fs::copy(&recording, project.join("scenarios/rec.toml")).unwrap();
    for args in [
        vec!["sweep", "rec.toml", "--seeds", "0..2"],
        vec!["ci", "project"],
        vec!["replay", "a.tape"],
    ] {
        expect(
            simtape().current_dir(&dir).args(&args),
            2,
            "puts a program in record mode",
        );
    }
    let replaying = scenario(&dir, "rep.toml", "replay", Some("frozen/rec.process.jsonl"));
    expect(
        simtape()
            .current_dir(&dir)
            .arg("run")
            .arg(&replaying)
            .args(["--record-dir", "x"]),
        2,
        "puts no program in record mode",
    );
}

/// Returns the lines of a run's output that say what its agent did and answered.
fn agent_lines(output: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| {
            l.starts_with("result: PASS") || l.starts_with("agent:") || l.starts_with("answer:")
        })
        .map(|l| l.split(" at t=").next().unwrap_or(l).to_string())
        .collect()
}

#[test]
fn a_fixture_from_a_tape_answers_the_same_conversation() {
    // Goal: `fixtures from-tape` writes one entry per model call of the run; the scenario
    // with that fixture in place of its own makes the same calls and gets the same answers.
    let dir = scratch("record", "from-tape");
    let project = dir.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let repo_scenarios = crate::common::repo().join("scenarios");
    for file in ["refactor-agent.toml", "data/refactor-agent/llm.jsonl"] {
        let target = project.join(file);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(repo_scenarios.join(file), target).unwrap();
    }
    let worktree = repo_scenarios.join("data/refactor/worktree");
    let copied = project.join("data/refactor/worktree");
    for file in ["src/helpers.rs", "src/lib.rs", "NOTES.txt", "README.md"] {
        std::fs::create_dir_all(copied.join(file).parent().unwrap()).unwrap();
        std::fs::copy(worktree.join(file), copied.join(file)).unwrap();
    }
    let scenario = project.join("refactor-agent.toml");
    let run = |tape: &str| {
        run_ok(
            simtape()
                .current_dir(&dir)
                .arg("run")
                .arg(&scenario)
                .args(["--seed", "1", "--tape", tape]),
        )
    };
    let first = agent_lines(&run("a.tape"));
    assert_eq!(first.len(), 3, "{first:?}");
    expect(
        simtape()
            .current_dir(&dir)
            .args(["fixtures", "from-tape", "a.tape", "fixtures"]),
        0,
        "(5 entr(ies); 0 call(s)",
    );
    std::fs::copy(
        dir.join("fixtures/llm.jsonl"),
        project.join("data/refactor-agent/llm.jsonl"),
    )
    .unwrap();
    assert_eq!(agent_lines(&run("b.tape")), first);
}

/// A scenario that asks its model and runs `echo`, both replayed from `data/`, with an
/// `[llm.record]` section whose provider listens on `port`; `extra` goes before the task.
fn recordable(dir: &Path, port: u16, extra: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/llm.jsonl"), "{\"simtape_llm\": 1}\n").unwrap();
    std::fs::write(dir.join("data/process.jsonl"), "{\"simtape_process\": 1}\n").unwrap();
    let source = format!(
        r#"[scenario]
name = "frozen"

[llm]
fixture = "data/llm.jsonl"

[llm.record]
provider = "openai-chat"
base_url = "http://127.0.0.1:{port}/v1"

[process]
tape = "data/process.jsonl"
programs = {{ echo = "replay" }}
{extra}
[[task]]
name = "script"
steps = [
  {{ ask = "Say hello" }},
  {{ run = "echo", args = ["hi"], log = "echoed" }},
  {{ outcome = "ran", value = true }},
]

[[verify]]
kind = "outcome"
name = "ran"
value = true
"#
    );
    let path = dir.join("frozen.toml");
    std::fs::write(&path, source).unwrap();
    path
}

#[test]
fn run_record_freezes_a_real_provider_and_program_into_files_that_replay() {
    // Goal: `run --record` answers the scenario's model from a real provider (aimock) through
    // [llm.record] and runs its replayed program for real, rewriting the fixture and the
    // process tape; with no provider running, the scenario then replays from them with the
    // same records (the same model answer and program output), and the recording's own tape
    // replays byte for byte through the scenario. Without the key nothing is touched.
    let Some((provider, port)) = crate::agents::aimock() else {
        return;
    };
    let dir = scratch("record", "run-record");
    let scenario = recordable(&dir, port, "");
    let record = |key: Option<&str>| {
        let mut command = simtape();
        command
            .current_dir(&dir)
            .arg("run")
            .arg(&scenario)
            .args(["--record", "--tape", "a.tape"])
            .env_remove("OPENAI_API_KEY");
        if let Some(key) = key {
            command.env("OPENAI_API_KEY", key);
        }
        command.output().unwrap()
    };
    let keyless = record(None);
    assert_eq!(keyless.status.code(), Some(2), "{}", text(&keyless));
    assert!(
        text(&keyless).contains("reads the API key from OPENAI_API_KEY, which is not set"),
        "{}",
        text(&keyless)
    );
    let untouched = std::fs::read_to_string(dir.join("data/llm.jsonl")).unwrap();
    assert_eq!(untouched, "{\"simtape_llm\": 1}\n", "nothing was truncated");
    let recorded = record(Some("test-key"));
    drop(provider);
    let shown = text(&recorded);
    assert_eq!(recorded.status.code(), Some(0), "{shown}");
    assert!(shown.contains("recorded: "), "{shown}");
    assert!(
        shown.contains("replay: simtape replay a.tape --scenario"),
        "{shown}"
    );
    let fixture = std::fs::read_to_string(dir.join("data/llm.jsonl")).unwrap();
    assert!(fixture.contains("Hello from aimock."), "{fixture}");
    assert!(
        !fixture.contains("test-key"),
        "the key never reaches the fixture"
    );
    let tape = std::fs::read_to_string(dir.join("data/process.jsonl")).unwrap();
    assert!(tape.contains("\"stdout\":\"hi\\n\""), "{tape}");
    replays_as_recorded(&dir, &scenario);
    let shown = String::from_utf8(
        run_ok(simtape().current_dir(&dir).args(["tape", "show", "b.tape"])).stdout,
    )
    .unwrap();
    assert!(shown.contains("Hello from aimock."), "{shown}");
    expect(
        simtape()
            .current_dir(&dir)
            .args(["replay", "a.tape", "--scenario"])
            .arg(&scenario),
        0,
        "replay: byte-identical",
    );
}

#[test]
fn run_record_names_what_it_cannot_record_before_touching_anything() {
    // Goal: a model without [llm.record], an MCP cassette, and a [network] policy that denies
    // the provider each stop `run --record` (or `check`) with exit 2 naming the section or
    // field, and leave the fixture as it was.
    let dir = scratch("record", "refusals");
    let scenario = recordable(&dir, 9, "");
    let source = std::fs::read_to_string(&scenario).unwrap();
    let section =
        "[llm.record]\nprovider = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    assert!(source.contains(section));
    std::fs::write(&scenario, source.replace(section, "")).unwrap();
    let refused = |scenario: &Path, needle: &str| {
        expect(
            simtape()
                .current_dir(&dir)
                .arg("run")
                .arg(scenario)
                .arg("--record")
                .env("OPENAI_API_KEY", "k"),
            2,
            needle,
        );
        let fixture = std::fs::read_to_string(dir.join("data/llm.jsonl")).unwrap();
        assert_eq!(fixture, "{\"simtape_llm\": 1}\n", "nothing was truncated");
    };
    refused(&scenario, "the scenario has no [llm.record] section");
    std::fs::copy(
        crate::common::repo().join("engine/agent/tests/data/sums.cassette.json"),
        dir.join("sums.cassette.json"),
    )
    .unwrap();
    let mcp = "\n[[mcp]]\nname = \"sums\"\ncassette = \"sums.cassette.json\"\n";
    refused(
        &recordable(&dir, 9, mcp),
        "so `run` cannot record it (it records the model and programs only); record the cassette on its own with `simtape mcp record --out",
    );
    let denying = recordable(&dir, 9, "\n[network]\nallow = [\"api.github.com\"]\n");
    let denied = "field `llm.record.base_url`: recording calls 127.0.0.1:9, which the [network] policy denies";
    expect(simtape().arg("check").arg(&denying), 2, denied);
    refused(&denying, denied);
}

/// Copies the shipped scenarios (with their data and worlds) into `dir/project`.
fn shipped_project(dir: &Path) -> std::path::PathBuf {
    let project = dir.join("project");
    for (path, bytes) in crate::common::files(&crate::common::repo().join("scenarios")) {
        let target = project.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, bytes).unwrap();
    }
    project
}

/// Returns the model and tool traffic of a tape: each llm and mcp request whole, and what
/// each reply answered (the result or error, not which recording or entry answered it).
fn traffic(dir: &Path, tape: &str) -> Vec<serde_json::Value> {
    let export = run_ok(simtape().current_dir(dir).args(["tape", "export", tape]));
    String::from_utf8(export.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter_map(|record| {
            let actor = record["actor"].as_str().unwrap().to_string();
            let payload = &record["payload"];
            let kept = match (actor.as_str(), record["kind"].as_str().unwrap()) {
                ("llm" | "mcp:tickets", "request") => payload.clone(),
                ("llm", "reply") => payload[1][4].clone(),
                ("mcp:tickets", "reply") => {
                    let mut result = payload[1][2].clone();
                    // A JSON-RPC error names the recorded request that answered it.
                    if let Some(seq) = result.pointer_mut("/Err/Rpc/0") {
                        *seq = serde_json::Value::Null;
                    }
                    result
                }
                _ => return None,
            };
            Some(serde_json::json!([actor, record["kind"], kept]))
        })
        .collect()
}

#[test]
fn fixtures_from_a_tape_replay_its_model_programs_and_mcp_servers() {
    // Goal: `fixtures from-tape` writes an LLM fixture, a process tape (output found by digest
    // in the process tapes the tape carries) and a cassette per MCP server; the scenario
    // pointed at them replays the run: recorded-pipeline's records are equal, and
    // ticket-retry, whose world server rate-limited it, becomes a cassette scenario (no
    // world, no fault rules) with the same verdict and the same model and tool traffic.
    let dir = scratch("record", "from-tape-all");
    let project = shipped_project(&dir);
    let run = |scenario: &str, tape: &str| {
        let output = run_ok(
            simtape()
                .current_dir(&dir)
                .arg("run")
                .arg(project.join(scenario))
                .args(["--tape", tape]),
        );
        agent_lines(&output)
    };
    let from_tape = |tape: &str, out: &str, needle: &str| {
        let args = ["fixtures", "from-tape", tape, out];
        expect(simtape().current_dir(&dir).args(args), 0, needle);
    };
    run("recorded-pipeline.toml", "a.tape");
    from_tape(
        "a.tape",
        "fx",
        "process.jsonl (2 entr(ies); 0 run(s) whose output",
    );
    let source = std::fs::read_to_string(project.join("recorded-pipeline.toml")).unwrap();
    let pointed = source.replace(
        "data/recorded-pipeline/process.jsonl",
        "../fx/process.jsonl",
    );
    assert_ne!(pointed, source);
    std::fs::write(project.join("pipeline-from-tape.toml"), pointed).unwrap();
    run("pipeline-from-tape.toml", "b.tape");
    expect(
        simtape()
            .current_dir(&dir)
            .args(["diff", "a.tape", "b.tape"]),
        0,
        "tapes equal (exact)",
    );

    let first = run("ticket-retry.toml", "t.tape");
    assert!(first[0].starts_with("result: PASS"), "{first:?}");
    from_tape(
        "t.tape",
        "tfx",
        // Seed 0: the world's on_call 429 of close_ticket, and no rate-fault 429 (the world's
        // rate faults draw from the MCP actor's stream).
        "mcp-tickets.cassette.json (6 exchange(s) for [[mcp]] \"tickets\"; 0 call(s)",
    );
    let source = std::fs::read_to_string(project.join("ticket-retry.toml")).unwrap();
    let faults = source.find("[[faults.mcp]]").unwrap();
    let verifiers = source.find("[[verify]]\nkind = \"world_goal\"").unwrap();
    let pointed = format!(
        "{}{}",
        &source[..faults],
        &source[verifiers..].replacen(
            "[[verify]]\nkind = \"world_goal\"\nserver = \"tickets\"\n\n",
            "",
            1
        )
    )
    .replace("data/ticket-retry/llm.jsonl", "../tfx/llm.jsonl")
    .replace(
        "world = \"worlds/ticket-tracker.json\"",
        "cassette = \"../tfx/mcp-tickets.cassette.json\"",
    );
    std::fs::write(project.join("tickets-from-tape.toml"), pointed).unwrap();
    assert_eq!(run("tickets-from-tape.toml", "t2.tape"), first);
    let (recorded, replayed) = (traffic(&dir, "t.tape"), traffic(&dir, "t2.tape"));
    // Four model calls, six tool calls (one of them the 429'd close), the tool list.
    assert!(recorded.len() >= 20, "{recorded:?}");
    assert_eq!(recorded, replayed);

    // A server that spoke during its calls (notifications, requests to the agent): each call
    // is one exchange in the cassette, its result after the whole dialogue, and the run
    // pointed at it gives the same verdict and answer.
    let first = run("mcp-sampling.toml", "s.tape");
    assert!(first[0].starts_with("result: PASS"), "{first:?}");
    from_tape(
        "s.tape",
        "sfx",
        "mcp-everything.cassette.json (3 exchange(s) for [[mcp]] \"everything\"; 0 call(s)",
    );
    let source = std::fs::read_to_string(project.join("mcp-sampling.toml")).unwrap();
    let pointed = source.replace(
        "data/mcp-sampling/everything.json",
        "../sfx/mcp-everything.cassette.json",
    );
    std::fs::write(project.join("sampling-from-tape.toml"), pointed).unwrap();
    let again = run("sampling-from-tape.toml", "s2.tape");
    assert!(again[0].starts_with("result: PASS"), "{again:?}");
    assert_eq!(again.last(), first.last(), "the same answer");
}

/// Returns the Python that has the official `openai` SDK (SIMTAPE_SERVE_PYTHON, installed by
/// `.ci/run`), or `None` after a skip notice.
pub(crate) fn sdk_python() -> Option<String> {
    match std::env::var("SIMTAPE_SERVE_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ => {
            crate::clients::missing(
                "SIMTAPE_SERVE_PYTHON is not set: .ci/run installs \
                 engine/serve/tests/peers/requirements.txt into a venv and exports it"
                    .into(),
            );
            None
        }
    }
}

/// A project holding the quick start's agent (examples/quickstart/agent.py), a data file
/// and a `.git` directory, in a fresh scratch directory named `name`.
pub(crate) fn agent_project(name: &str) -> std::path::PathBuf {
    let project = scratch("record", name).join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(project.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(project.join("cities.txt"), "Paris\n").unwrap();
    std::fs::copy(
        crate::common::repo().join("examples/quickstart/agent.py"),
        project.join("agent.py"),
    )
    .unwrap();
    project
}

#[test]
fn record_writes_a_scenario_that_replays_with_the_provider_gone() {
    // Goal: `simtape record -- PYTHON agent.py` runs an openai-SDK agent against a loopback
    // provider (aimock) and writes a generic-program scenario, a fixture matched on each
    // call's last message, the exact fixture and the project snapshot (without .git or its
    // own output); with the provider stopped, `simtape run` of the scenario passes with the
    // recorded answer.
    let Some(python) = sdk_python() else {
        return;
    };
    let Some((provider, port)) = crate::agents::aimock() else {
        return;
    };
    let project = agent_project("command");
    let recorded = simtape()
        .current_dir(&project)
        .args(["record", "--upstream"])
        .arg(format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "test-key")
        .args(["--", &python, "agent.py"])
        .output()
        .unwrap();
    drop(provider);
    let shown = text(&recorded);
    assert_eq!(recorded.status.code(), Some(0), "{shown}");
    assert!(shown.contains("recorded 2 model call(s)"), "{shown}");
    assert!(
        shown.contains("simtape run simtape-recording/scenario.toml --seed 0"),
        "{shown}"
    );
    assert!(
        shown.contains("simtape sweep simtape-recording/scenario.toml --seeds 0..20"),
        "{shown}"
    );
    let out = project.join("simtape-recording");
    let scenario = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(scenario.contains("adapter = \"generic\""), "{scenario}");
    assert!(scenario.contains("args = [\"agent.py\"]"), "{scenario}");
    assert!(scenario.contains("root = \"repo\""), "{scenario}");
    let fixture = std::fs::read_to_string(out.join("llm.jsonl")).unwrap();
    assert!(
        fixture.contains(r#""match":{"last_message":{"contains":"Weather in Paris?"}}"#),
        "{fixture}"
    );
    assert!(
        fixture.contains(r#""match":{"last_tool_result":{"contains":"sunny, 22 C in Paris"}}"#),
        "{fixture}"
    );
    assert!(
        std::fs::read_to_string(out.join("llm.recorded.jsonl"))
            .unwrap()
            .contains("\"glob\""),
        "the exact fixture matches whole conversations"
    );
    assert!(out.join("repo/cities.txt").is_file());
    assert!(!out.join("repo/.git").exists());
    assert!(!out.join("repo/simtape-recording").exists());
    let replayed = simtape()
        .current_dir(&project)
        .args(["run", "simtape-recording/scenario.toml", "--seed", "0"])
        .output()
        .unwrap();
    let shown = text(&replayed);
    assert_eq!(replayed.status.code(), Some(0), "{shown}");
    assert!(shown.contains("answer: It is sunny in Paris."), "{shown}");
    // A prompt with words added still replays from the loosened fixture; the exact one,
    // which matches whole conversations, no longer answers.
    let agent = out.join("repo/agent.py");
    let source = std::fs::read_to_string(&agent).unwrap();
    let edited = source.replace(
        "\"Weather in Paris?\"",
        "\"Weather in Paris? Answer in one sentence.\"",
    );
    assert_ne!(source, edited);
    std::fs::write(&agent, edited).unwrap();
    let run = |scenario: &str| {
        let output = simtape()
            .current_dir(&out)
            .args(["run", scenario, "--seed", "0"])
            .output()
            .unwrap();
        (output.status.code(), text(&output))
    };
    let (code, shown) = run("scenario.toml");
    assert_eq!(code, Some(0), "{shown}");
    let exact = scenario.replace(
        "fixture = \"llm.jsonl\"",
        "fixture = \"llm.recorded.jsonl\"",
    );
    std::fs::write(out.join("exact.toml"), exact).unwrap();
    let (code, shown) = run("exact.toml");
    assert_ne!(code, Some(0), "{shown}");
    assert!(shown.contains("no LLM fixture entry matched"), "{shown}");
}

#[test]
fn record_without_a_key_or_a_provider_exits_2_and_writes_nothing() {
    // Goal: no API key in simtape's environment, or a provider nothing listens for, is a
    // usage error (exit 2) naming the cause, before the output directory is created.
    let project = scratch("record", "refused");
    std::fs::write(project.join("agent.py"), "print('hi')\n").unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let upstream = format!("http://127.0.0.1:{port}/v1");
    let record = |key: Option<&str>| {
        let mut command = simtape();
        command
            .current_dir(&project)
            .args(["record", "--out", "rec", "--upstream", &upstream])
            .env_remove("OPENAI_API_KEY")
            .args(["--", "python3", "agent.py"]);
        if let Some(key) = key {
            command.env("OPENAI_API_KEY", key);
        }
        command.output().unwrap()
    };
    for (key, needle) in [
        (None, "API key in OPENAI_API_KEY"),
        (Some(""), "API key in OPENAI_API_KEY"),
        (Some("test-key"), "is unreachable"),
    ] {
        let output = record(key);
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(2), "{shown}");
        assert!(shown.contains(needle), "{needle:?} in {shown}");
        assert!(shown.contains("nothing was written"), "{shown}");
        assert!(!project.join("rec").exists(), "{shown}");
    }
}
