//! `simtape run --evidence DIR` and the run-and-test contract: `GATES.json`,
//! `evidence/plan.json`, `evidence/tests.json` (a gate failing on the base tree and passing
//! after), `evidence/run_log.txt` (normalized), `evidence/artifacts.json`; the BLOCKED verdict;
//! and the forbidden states (a pass without an executed verifier, a run outside the io
//! boundary, unscrubbed log fields).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{load_json, repo, scratch, simtape, text};

/// Runs `scenario` with `--evidence evidence` from `cwd`; returns the exit code.
fn run_with_evidence(cwd: &Path, scenario: &Path, evidence: &Path) -> Option<i32> {
    let output = simtape()
        .current_dir(cwd)
        .arg("run")
        .arg(scenario)
        .arg("--evidence")
        .arg(evidence)
        .output()
        .unwrap();
    assert!(!text(&output).contains("panicked"), "{}", text(&output));
    output.status.code()
}

/// A command agent that fixes `status.txt`, and a gate that checks the fix: the gate fails
/// on the base tree and passes after the agent.
fn fixing_agent(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("repo")).unwrap();
    std::fs::write(dir.join("repo/status.txt"), "broken\n").unwrap();
    std::fs::write(dir.join("llm.jsonl"), "{\"simtape_llm\": 1}\n").unwrap();
    let toml = r#"[scenario]
name = "fixer"
seeds = [0]

[fs]
root = "repo"

[llm]
fixture = "llm.jsonl"

[agent]
kind = "command"
adapter = "generic"
command = "sh"
args = ["-c", "echo fixed > status.txt; echo done"]
task = "Fix the status."

[[verify]]
name = "status is fixed"
kind = "gate"
program = "sh"
args = ["-c", "grep -q fixed status.txt"]
exit_code = 0
"#;
    let path = dir.join("fixer.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

#[test]
fn a_gate_fails_before_the_agent_and_passes_after() {
    // Goal: tests.json runs the gate on the base tree before the agent (failing_before) and
    // on the final tree after it (passing_after); GATES.json and plan.json name the exact
    // argv, cwd, expected exit code, the replay command, the io boundary and the timeouts.
    let dir = scratch("evidence", "fixer");
    let scenario = fixing_agent(&dir);
    let evidence = dir.join("ev");
    assert_eq!(run_with_evidence(&dir, &scenario, &evidence), Some(0));
    let tests = load_json(&evidence.join("evidence/tests.json"));
    let gate = &tests["gates"][0];
    assert_eq!(
        gate["argv"],
        serde_json::json!(["sh", "-c", "grep -q fixed status.txt"])
    );
    assert_eq!(
        (
            &gate["before_exit_code"],
            &gate["failing_before"],
            &gate["exit_code"],
            &gate["passing_after"]
        ),
        (
            &Value::from(1),
            &Value::from(true),
            &Value::from(0),
            &Value::from(true)
        ),
        "{tests}"
    );
    assert_eq!(
        (&tests["verdict"], &tests["executed_verifiers"]),
        (&"pass".into(), &2.into())
    );
    let gates = load_json(&evidence.join("GATES.json"));
    assert_eq!(gates["commands"][0]["cwd"], "repo");
    assert_eq!(gates["commands"][0]["expect_exit"], 0);
    assert_eq!(gates["io_boundary"], "repo");
    assert_eq!(
        gates["replay"],
        "simtape replay run.tape --scenario ../fixer.toml"
    );
    let plan = load_json(&evidence.join("evidence/plan.json"));
    assert_eq!(plan["io_boundary"]["writes"], "scratch copy");
    assert_eq!(plan["network"]["offline"], true);
    assert_eq!(plan["timeout_caps"]["gate_timeout_ms"], 300_000);
    assert!(plan["timeout_caps"]["agent_timeout_ms"].is_u64());
}

#[test]
fn the_evidence_is_complete_hashed_normalized_and_replays_from_anywhere() {
    // Goal: every file of the contract is there; artifacts.json hashes every artifact (sorted);
    // the run log is the same bytes whichever directory the run started from and holds no
    // absolute path, time, duration or pid; replay.sh replays from another directory.
    let dir = scratch("evidence", "complete");
    let scenario = repo().join("scenarios/refactor-files.toml");
    let (first, second) = (dir.join("a"), dir.join("sub/b"));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    assert_eq!(run_with_evidence(&dir, &scenario, &first), Some(0));
    assert_eq!(
        run_with_evidence(&dir.join("sub"), &scenario, Path::new("b")),
        Some(0)
    );
    for file in ["GATES.json", "evidence/plan.json", "evidence/tests.json"] {
        assert!(first.join(file).is_file(), "{file} missing");
    }
    let artifacts = load_json(&first.join("evidence/artifacts.json"));
    let listed: Vec<&str> = artifacts["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["file"].as_str().unwrap())
        .collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(listed, sorted);
    for wanted in [
        "GATES.json",
        "evidence/run_log.txt",
        "evidence/tests.json",
        "run.tape",
        "replay.sh",
    ] {
        assert!(listed.contains(&wanted), "{wanted} not in {listed:?}");
    }
    for entry in artifacts["artifacts"].as_array().unwrap() {
        let bytes = std::fs::read(first.join(entry["file"].as_str().unwrap())).unwrap();
        assert_eq!(entry["sha256"], sha256_hex(&bytes), "{entry}");
    }
    let log = std::fs::read_to_string(first.join("evidence/run_log.txt")).unwrap();
    assert_eq!(
        log,
        std::fs::read_to_string(second.join("evidence/run_log.txt")).unwrap()
    );
    assert!(
        log.contains("verdict pass") && log.contains("fs added"),
        "{log}"
    );
    assert!(simtape_eval::evidence::unscrubbed(&log).is_empty(), "{log}");
    let root = dir.display().to_string();
    assert!(!log.contains(&root), "{log}");
    // replay.sh from elsewhere, with the binary under test as `simtape`.
    let bin = Path::new(env!("CARGO_BIN_EXE_simtape")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let replay = std::process::Command::new("sh")
        .arg(first.join("replay.sh"))
        .current_dir("/")
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(replay.status.success(), "{}", text(&replay));
    assert!(
        text(&replay).contains("byte-identical"),
        "{}",
        text(&replay)
    );
}

#[test]
fn forbidden_states_do_not_pass() {
    // Goal: no verifier, no pass (tests.json says none executed); an agent's read outside the
    // io boundary is BLOCKED, exit 4, in tests.json and the run log.
    let dir = scratch("evidence", "forbidden");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agent/tests/data/llm");
    let untested = dir.join("untested.toml");
    std::fs::write(
        &untested,
        "[scenario]\nname = \"untested\"\n\n[[task]]\nname = \"t\"\nsteps = [{ sleep = \"1ms\" }]\n",
    )
    .unwrap();
    assert_eq!(
        run_with_evidence(&dir, &untested, &dir.join("ev-untested")),
        Some(1)
    );
    let tests = load_json(&dir.join("ev-untested/evidence/tests.json"));
    assert_eq!(
        (&tests["verdict"], &tests["executed_verifiers"]),
        (&"fail".into(), &0.into())
    );
    let escape = dir.join("escape.toml");
    std::fs::write(
        &escape,
        format!(
            "[scenario]\nname = \"escape\"\n\n[fs]\nroot = \"work\"\n\n[llm]\nfixture = {:?}\n\n\
             [agent]\nmodel = \"test-model\"\ntask = \"Read it.\"\ntools = [\"fs\"]\n\n\
             [[verify]]\nkind = \"answer\"\ncontains = \"x\"\n",
            fixtures.join("escape.jsonl").display().to_string()
        ),
    )
    .unwrap();
    assert_eq!(
        run_with_evidence(&dir, &escape, &dir.join("ev-escape")),
        Some(4)
    );
    let tests = load_json(&dir.join("ev-escape/evidence/tests.json"));
    assert_eq!(tests["verdict"], "blocked", "{tests}");
    assert_eq!(tests["executed_verifiers"], 0);
    let log = std::fs::read_to_string(dir.join("ev-escape/evidence/run_log.txt")).unwrap();
    assert!(
        log.contains("verdict blocked: tool call call_1_0 (read_file)"),
        "{log}"
    );
}

fn sha256_hex(bytes: &[u8]) -> String {
    simtape::tape::sha256_hex(bytes)
}
