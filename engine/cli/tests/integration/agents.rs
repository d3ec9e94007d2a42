//! Agent programs under simulation (`[agent] kind = "command"`): a program outside the
//! simulation reaches the scenario's model through simtape's endpoints, works in a scratch
//! copy of the `[fs]` root, and is judged by the same verifiers as the built-in agent; its
//! runs are byte-identical per seed, replay without the program, sweep with failing tapes
//! kept, and end cleanly on a timeout. The generic-adapter agent here is a Python script on
//! the standard library alone; Claude Code runs `scenarios/claude-code-fix-test.toml`.

use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};

use crate::clients::{claude, codex, gemini_cli, opencode};
use crate::common::{repo, scratch, simtape, text};

/// An agent on the OpenAI Chat Completions wire, with nothing but Python's standard library:
/// it asks the model once (a number from the OS's entropy in the request: per-process noise
/// that the scenario's `[normalize]` rule removes; its process id would not do, the sandbox's
/// pid namespace makes that the same every run), writes the answer to notes.txt, deletes
/// old.txt, prints the answer; a model error makes it exit 1.
const AGENT: &str = r#"
import json, os, random, sys, urllib.request, urllib.error
nonce = random.SystemRandom().randrange(10**12)
task = "%s (agent run %d)" % (os.environ["SIMTAPE_TASK"], nonce)
body = {"model": "m", "messages": [{"role": "user", "content": task}]}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(),
    headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
)
try:
    with urllib.request.urlopen(request) as response:
        answer = json.load(response)["choices"][0]["message"]["content"]
except urllib.error.HTTPError as error:
    print("model error", error.code)
    sys.exit(1)
with open("notes.txt", "w") as notes:
    notes.write(answer + "\n")
os.remove("old.txt")
print("thinking...")
print(answer)
"#;

/// Writes a scenario whose generic agent runs `AGENT`; `extra` is appended to it.
fn scenario(dir: &Path, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("repo")).unwrap();
    std::fs::write(dir.join("repo/old.txt"), "stale\n").unwrap();
    std::fs::write(dir.join("repo/keep.txt"), "kept\n").unwrap();
    std::fs::write(dir.join("agent.py"), AGENT).unwrap();
    let fixture = concat!(
        "{\"simtape_llm\": 1, \"latency\": {\"base_ms\": 800}}\n",
        "{\"id\": \"answer\", \"match\": {\"last_message\": {\"contains\": \"notes\"}}, ",
        "\"response\": {\"text\": \"Notes written by the model.\"}}\n",
    );
    std::fs::write(dir.join("llm.jsonl"), fixture).unwrap();
    let agent = dir.join("agent.py");
    let toml = format!(
        r#"[scenario]
name = "notes"
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
task = "Write the notes."

[normalize]
patterns = [{{ match = "agent run [0-9]+", replace = "agent run <nonce>" }}]

[[verify]]
kind = "fs"
path = "notes.txt"
state = "added"
contains = "Notes written"

[[verify]]
kind = "fs"
path = "old.txt"
state = "deleted"

[[verify]]
kind = "answer"
equals = "Notes written by the model."

[[verify]]
kind = "gate"
program = "sh"
args = ["-c", "test -f notes.txt && test ! -e old.txt"]
exit_code = 0
{extra}"#,
        agent = agent.display().to_string(),
    );
    let path = dir.join("notes.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

#[test]
fn an_agent_program_is_judged_by_the_verifiers_and_its_tape_replays() {
    let dir = scratch("agents", "judged");
    let scenario = scenario(&dir, "");
    let tapes = [dir.join("a.tape"), dir.join("b.tape")];
    for tape in &tapes {
        let output = simtape()
            .arg("run")
            .arg(&scenario)
            .arg("--tape")
            .arg(tape)
            .arg("--evidence")
            .arg(dir.join("evidence"))
            .output()
            .unwrap();
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(0), "{shown}");
        assert!(shown.contains("result: PASS"), "{shown}");
        for verifier in [
            "agent exits 0",
            "fs notes.txt",
            "fs old.txt",
            "answer",
            "gate sh",
        ] {
            assert!(
                shown.contains(&format!("verify held   {verifier}")),
                "{verifier}: {shown}"
            );
        }
        assert!(
            shown.contains("fs diff: 1 added, 0 modified, 1 deleted"),
            "{shown}"
        );
    }
    let (a, b) = (
        std::fs::read(&tapes[0]).unwrap(),
        std::fs::read(&tapes[1]).unwrap(),
    );
    assert!(a == b, "two runs of one seed wrote different tapes");
    // The real directory is never touched: the agent worked in a copy.
    assert!(dir.join("repo/old.txt").exists());
    assert!(!dir.join("repo/notes.txt").exists());
    // The session log: the adapter's events, stamped with virtual time; the sidecar names
    // the program and how it ended.
    let log = std::fs::read_to_string(dir.join("evidence/session.ndjson")).unwrap();
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "message", "result"], "{log}");
    assert_eq!(events[2]["text"], "Notes written by the model.");
    assert!(events[2]["timestamp_ms"].as_u64().unwrap() >= 800, "{log}");
    let manifest = crate::common::load_json(&dir.join("evidence/manifest.json"));
    let listed: Vec<&str> = manifest["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["file"].as_str().unwrap())
        .collect();
    for file in [
        "session.ndjson",
        "session.meta.json",
        "requests.ndjson",
        "agent.stderr",
    ] {
        assert!(listed.contains(&file), "{file} in {listed:?}");
    }
    let meta = crate::common::load_json(&dir.join("evidence/session.meta.json"));
    assert_eq!(meta["adapter"], "generic");
    assert_eq!(meta["exit"]["exited"], 0);
    // Replay runs the pipeline again from the tape's inputs, without the program.
    let replay = simtape()
        .arg("replay")
        .arg(&tapes[0])
        .arg("--scenario")
        .arg(&scenario)
        .env("PATH", "")
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay));
    assert!(
        text(&replay).contains("byte-identical"),
        "{}",
        text(&replay)
    );
    // The tape carries the [fs] root and the fixture: alone in an empty directory, with the
    // scenario, its files and the program gone, it replays the same.
    let alone = dir.join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(&tapes[0], alone.join("run.tape")).unwrap();
    for gone in ["repo", "llm.jsonl", "notes.toml", "agent.py"] {
        let path = dir.join(gone);
        match path.is_dir() {
            true => std::fs::remove_dir_all(&path).unwrap(),
            false => std::fs::remove_file(&path).unwrap(),
        }
    }
    let replay = simtape()
        .current_dir(&alone)
        .args(["replay", "run.tape"])
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

#[test]
fn a_scenario_normalize_rule_keeps_per_process_noise_off_the_tape() {
    // Goal: without its `[normalize]` rule the agent's nonce reaches the tape and
    // --check-determinism names the difference; with it, the runs are byte-identical.
    let dir = scratch("agents", "normalize");
    let scenario = scenario(&dir, "");
    let check = |scenario: &Path| {
        simtape()
            .arg("run")
            .arg(scenario)
            .arg("--check-determinism")
            .output()
            .unwrap()
    };
    let with_rule = check(&scenario);
    assert_eq!(with_rule.status.code(), Some(0), "{}", text(&with_rule));
    assert!(
        text(&with_rule).contains("byte-identical"),
        "{}",
        text(&with_rule)
    );
    let source = std::fs::read_to_string(&scenario).unwrap();
    let start = source.find("[normalize]").unwrap();
    let end = source[start..].find("[[verify]]").unwrap() + start;
    let bare = dir.join("bare.toml");
    std::fs::write(&bare, format!("{}{}", &source[..start], &source[end..])).unwrap();
    let without = check(&bare);
    assert_eq!(without.status.code(), Some(1), "{}", text(&without));
    assert!(text(&without).contains("differ"), "{}", text(&without));
}

#[test]
fn a_sweep_of_an_agent_program_reports_pass_at_k_and_keeps_failing_tapes() {
    let dir = scratch("agents", "sweep");
    let faults = "\n[[faults.llm]]\nrate = \"1/2\"\nstatus = 500\nmessage = \"boom\"\n";
    let scenario = scenario(&dir, faults);
    let out = dir.join("out");
    let output = simtape()
        .args(["sweep", "--seeds", "0..8", "--jobs", "2", "--out"])
        .arg(&out)
        .arg(&scenario)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "some seeds fail: {shown}");
    assert!(shown.contains("pass@k"), "{shown}");
    let kept: Vec<String> = std::fs::read_dir(out.join("notes"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!kept.is_empty(), "failing seeds keep their tapes: {shown}");
    assert!(kept.len() < 8, "passing seeds keep none: {kept:?}");
    for name in &kept {
        let seed = name.trim_start_matches("seed-").trim_end_matches(".tape");
        assert!(
            shown.contains(&format!("seed {seed} ")),
            "{name} is a failing seed: {shown}"
        );
        // A kept tape is the failure itself: it replays byte for byte.
        let replay = simtape()
            .arg("replay")
            .arg(out.join("notes").join(name))
            .arg("--scenario")
            .arg(&scenario)
            .output()
            .unwrap();
        assert_eq!(replay.status.code(), Some(0), "{}", text(&replay));
    }
}

#[test]
fn an_agent_program_over_its_timeout_is_stopped_with_its_whole_group() {
    // In its sandbox (the default) and on the host (--no-sandbox): the shell ignores SIGTERM
    // and leaves a child of its own; after the timeout neither is alive.
    for (case, flags) in [("sandboxed", &[][..]), ("host", &["--no-sandbox"][..])] {
        let dir = scratch("agents", &format!("timeout-{case}"));
        let scenario = scenario(&dir, "");
        let marker = format!("30{}{}", flags.len(), std::process::id() % 1000);
        let source = std::fs::read_to_string(&scenario).unwrap();
        let start = source.find("command = ").unwrap();
        let end = source.find("task = ").unwrap();
        let script = format!("trap '' TERM; sleep {marker} & wait");
        let hung = format!(
            "{}command = \"sh\"\nargs = [\"-c\", {script:?}]\ntimeout = \"1s\"\n{}",
            &source[..start],
            &source[end..]
        );
        std::fs::write(&scenario, hung).unwrap();
        let started = Instant::now();
        let tape = dir.join("timeout.tape");
        let output = simtape()
            .arg("run")
            .arg(&scenario)
            .args(flags)
            .arg("--tape")
            .arg(&tape)
            .output()
            .unwrap();
        let shown = text(&output);
        assert_eq!(
            output.status.code(),
            Some(3),
            "{case}: a run error: {shown}"
        );
        // The tape of a run that ended in error is whole and verifies.
        let verify = simtape()
            .arg("tape")
            .arg("verify")
            .arg(&tape)
            .output()
            .unwrap();
        assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
        assert!(shown.contains("ran over its timeout of 1000 ms"), "{shown}");
        assert!(started.elapsed() < Duration::from_secs(20), "{shown}");
        std::thread::sleep(Duration::from_millis(200));
        let sleepers = crate::common::processes_with(&format!("sleep {marker}"));
        assert!(
            sleepers.is_empty(),
            "{case}: the agent's child was killed with it: {sleepers:?}"
        );
    }
}

#[test]
fn a_missing_agent_program_is_an_input_error_naming_its_package() {
    let dir = scratch("agents", "missing");
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let output = simtape()
        .arg("run")
        .arg(repo().join("scenarios/claude-code-fix-test.toml"))
        .env("PATH", &empty)
        .env_remove("SIMTAPE_CLAUDE_CODE_BIN")
        .current_dir(&dir)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("npm install -g @anthropic-ai/claude-code"),
        "{shown}"
    );
    assert!(shown.contains("--agent-bin"), "{shown}");
}

#[test]
fn claude_code_fixes_the_failing_test_and_retries_the_seeded_529s() {
    let Some(claude) = claude() else {
        return;
    };
    let dir = scratch("agents", "claude-code");
    let scenario = repo().join("scenarios/claude-code-fix-test.toml");
    // Seed 1 draws 529 "overloaded" answers: Claude Code's own retries go on the tape.
    let mut tapes = Vec::new();
    for run in 0..3 {
        let tape = dir.join(format!("run-{run}.tape"));
        let evidence = dir.join(format!("evidence-{run}"));
        let output = simtape()
            .args(["run", "--seed", "1", "--tape"])
            .arg(&tape)
            .arg("--evidence")
            .arg(&evidence)
            .arg("--agent-bin")
            .arg(&claude)
            .arg(&scenario)
            .output()
            .unwrap();
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(0), "{shown}");
        assert!(shown.contains("verify held   the test passes"), "{shown}");
        assert!(shown.contains("verify held   tool_called Edit"), "{shown}");
        // The three 529s the agent got past count as its retries.
        assert!(shown.contains(", 3 retr(ies),"), "{shown}");
        let log = std::fs::read_to_string(evidence.join("session.ndjson")).unwrap();
        assert!(log.contains("api_retry: 529 overloaded"), "{log}");
        // The edit's answer streams a signed thinking block; Claude Code takes it and sends
        // it back, signature and all, in its next request.
        let requests = std::fs::read_to_string(evidence.join("requests.ndjson")).unwrap();
        assert!(
            requests.contains(r#"\"signature\":\"simtape:"#),
            "the thinking block went back to the model"
        );
        tapes.push(std::fs::read(&tape).unwrap());
    }
    assert!(tapes.windows(2).all(|w| w[0] == w[1]), "the tapes differ");
    let shown = simtape()
        .arg("tape")
        .arg("show")
        .arg(dir.join("run-0.tape"))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("529"), "the fault is on the tape");
}

#[test]
fn claude_code_runs_unrestricted_in_its_sandbox_and_ten_runs_give_one_tape() {
    // In the sandbox Claude Code runs as uid 1000 with bypassPermissions, which it refuses
    // to root (simtape runs as root in CI); seed 2 ten times over gives one tape.
    let Some(claude) = claude() else {
        return;
    };
    let dir = scratch("agents", "claude-code-ten");
    let scenario = repo().join("scenarios/claude-code-fix-test.toml");
    let mut digests = std::collections::BTreeSet::new();
    for run in 0..10 {
        let tape = dir.join(format!("run-{run}.tape"));
        let evidence = dir.join(format!("evidence-{run}"));
        let output = simtape()
            .args(["run", "--seed", "2", "--tape"])
            .arg(&tape)
            .arg("--evidence")
            .arg(&evidence)
            .arg("--agent-bin")
            .arg(&claude)
            .arg(&scenario)
            .output()
            .unwrap();
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(0), "{shown}");
        assert!(shown.contains("sandbox namespaces"), "{shown}");
        let meta = crate::common::load_json(&evidence.join("session.meta.json"));
        let args = meta["args"].to_string();
        assert!(
            args.contains(r#""--permission-mode","bypassPermissions""#),
            "{args}"
        );
        assert_eq!(meta["sandbox"], "on", "{meta}");
        digests.insert(std::fs::read(&tape).unwrap());
    }
    assert_eq!(digests.len(), 1, "ten runs, one tape");
}

#[test]
fn claude_codes_background_bash_children_do_not_outlive_its_run() {
    // Claude Code's Bash tool runs each command in a session of its own: a double-forked
    // daemon and a background child that ignores SIGTERM, started by the model's command,
    // are gone when the run ends, though Claude Code never ends them.
    let Some(claude) = claude() else {
        return;
    };
    let dir = scratch("agents", "claude-code-lingerers");
    std::fs::create_dir_all(dir.join("repo")).unwrap();
    std::fs::write(dir.join("repo/readme.txt"), "a project\n").unwrap();
    let marker = format!("45{}", std::process::id() % 10_000);
    let command = format!(
        "(setsid sleep {marker}1 > /dev/null 2>&1 &); (trap '' TERM; sleep {marker}2 > /dev/null 2>&1) & echo started"
    );
    let fixture = format!(
        "{{\"simtape_llm\": 1}}\n{}\n{}\n",
        serde_json::json!({"id": "start", "match": {"last_message": {"contains": "background"}},
            "response": {"text": "Starting them.", "tool_calls": [{"name": "Bash",
            "arguments": {"command": command, "description": "Start the helpers"}}]}}),
        serde_json::json!({"id": "answer", "match": {"last_tool_result": {"contains": "started"}},
            "response": {"text": "Both helpers run in the background."}}),
    );
    std::fs::write(dir.join("llm.jsonl"), fixture).unwrap();
    let scenario = dir.join("lingerers.toml");
    std::fs::write(
        &scenario,
        r#"[scenario]
name = "lingerers"
seeds = [0]
[fs]
root = "repo"
[llm]
fixture = "llm.jsonl"
[agent]
kind = "command"
adapter = "claude-code"
task = "Start the helpers in the background."
timeout = "120s"
[[verify]]
kind = "answer"
contains = "background"
"#,
    )
    .unwrap();
    let output = simtape()
        .arg("run")
        .arg(&scenario)
        .arg("--agent-bin")
        .arg(&claude)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    std::thread::sleep(Duration::from_millis(300));
    let left = crate::common::processes_with(&format!("sleep {marker}"));
    assert!(
        left.is_empty(),
        "Claude Code's background children outlived it: {left:?}"
    );
}

/// Runs an example's agent-program scenario twice with `program`; checks it passes with
/// `held` among its verifiers, that its session log holds `logged`, and that the two tapes
/// are the same bytes.
fn run_example_twice(example: &str, program: &Path, held: &str, logged: &[&str]) {
    let scenario = repo().join(format!("examples/agents/{example}/scenario.toml"));
    run_twice(example, &scenario, program, held, logged);
}

/// Runs `scenario` twice with `program` (in a scratch directory named by `label`); checks it
/// passes with `held` among its verifiers, that its session log holds `logged`, and that the
/// two tapes are the same bytes.
fn run_twice(label: &str, scenario: &Path, program: &Path, held: &str, logged: &[&str]) {
    let dir = scratch("agents", label);
    let mut tapes = Vec::new();
    for run in 0..2 {
        let ran = run_agent(&dir, run, scenario, program);
        assert_eq!(ran.code, Some(0), "{}", ran.shown);
        assert!(
            ran.shown.contains(&format!("verify held   {held}")),
            "{}",
            ran.shown
        );
        let log = std::fs::read_to_string(ran.evidence.join("session.ndjson")).unwrap();
        for wanted in logged {
            assert!(log.contains(wanted), "{wanted} in {log}");
        }
        tapes.push(ran.tape);
    }
    assert!(tapes[0] == tapes[1], "{label}: the tapes differ");
}

/// One `simtape run` of an agent scenario: its exit code, what it printed, its evidence
/// directory and its tape.
pub(crate) struct AgentRun {
    pub(crate) code: Option<i32>,
    pub(crate) shown: String,
    pub(crate) evidence: PathBuf,
    pub(crate) tape: Vec<u8>,
}

/// Runs `scenario` with `program` as run number `run` in `dir`.
pub(crate) fn run_agent(dir: &Path, run: usize, scenario: &Path, program: &Path) -> AgentRun {
    let tape = dir.join(format!("run-{run}.tape"));
    let evidence = dir.join(format!("evidence-{run}"));
    let output = simtape()
        .args(["run", "--tape"])
        .arg(&tape)
        .arg("--evidence")
        .arg(&evidence)
        .arg("--agent-bin")
        .arg(program)
        .arg(scenario)
        .output()
        .unwrap();
    AgentRun {
        code: output.status.code(),
        shown: text(&output),
        evidence,
        tape: std::fs::read(&tape).unwrap(),
    }
}

#[test]
fn codex_runs_as_a_scenario_agent_through_its_own_retry() {
    // Codex (npm @openai/codex) as the agent program of examples/agents/codex: it writes
    // hello.txt through its exec_command tool after retrying a 429; two runs, one tape.
    let Some(codex) = codex() else {
        return;
    };
    let logged = ["429 Too Many Requests", "\"name\":\"command_execution\""];
    run_example_twice("codex", &codex, "fs hello.txt", &logged);
}

#[test]
fn opencode_runs_as_a_scenario_agent() {
    // OpenCode (npm opencode-ai) as the agent program of examples/agents/opencode: its title
    // request and first turn arrive together (ordered by the settle rule), then it writes
    // hello.txt with its write tool; two runs, one tape.
    let Some(opencode) = opencode() else {
        return;
    };
    let logged = ["\"name\":\"write\"", "Wrote file successfully."];
    run_example_twice("opencode", &opencode, "fs hello.txt", &logged);
}

#[test]
fn gemini_cli_runs_as_a_scenario_agent_through_its_own_retry() {
    // Gemini CLI (npm @google/gemini-cli) as the agent program of examples/agents/gemini-cli,
    // pointed at simtape's Gemini API endpoint: it retries the seeded 429 (Google's
    // RESOURCE_EXHAUSTED) on its own, the summary counts that retry from the tape, it writes
    // hello.txt with its write_file tool and answers; ten runs, one tape.
    let Some(gemini) = gemini_cli() else {
        return;
    };
    let scenario = repo().join("examples/agents/gemini-cli/scenario.toml");
    let dir = scratch("agents", "gemini-cli");
    let mut tapes = std::collections::BTreeSet::new();
    for run in 0..10 {
        let ran = run_agent(&dir, run, &scenario, &gemini);
        let shown = &ran.shown;
        assert_eq!(ran.code, Some(0), "{shown}");
        assert!(shown.contains("verify held   fs hello.txt"), "{shown}");
        assert!(
            shown.contains("agent: 2 turn(s), 1 tool call(s), 1 retr(ies)"),
            "the 429 and its retry are on the tape: {shown}"
        );
        let log = std::fs::read_to_string(ran.evidence.join("session.ndjson")).unwrap();
        assert!(log.contains("\"name\":\"write_file\""), "{log}");
        let stderr = std::fs::read_to_string(ran.evidence.join("agent.stderr")).unwrap();
        assert!(
            stderr.contains("Resource has been exhausted"),
            "Gemini CLI read Google's 429: {stderr}"
        );
        tapes.insert(ran.tape);
    }
    assert_eq!(tapes.len(), 1, "ten runs, one tape");
}

/// Runs `program` twice on the ticket-tracker world of `engine/cli/tests/data/serve-mcp/FILE`:
/// it works the ticket through the world's 429, the world_goal verifier judges the world's
/// final state, and its session log shows the close call under `close_tool`.
fn work_the_ticket_world(file: &str, program: &Path, close_tool: &str) {
    let scenario = repo().join("engine/cli/tests/data/serve-mcp").join(file);
    let logged = [format!("\"name\":\"{close_tool}\"")];
    let logged: Vec<&str> = logged.iter().map(String::as_str).collect();
    run_twice(file, &scenario, program, "world_goal tickets", &logged);
}

#[test]
fn claude_code_works_an_mcp_world_as_a_scenario_agent() {
    // The adapter hands Claude Code the served MCP config and allows the server's tools.
    let Some(claude) = claude() else {
        return;
    };
    work_the_ticket_world("scenario.toml", &claude, "mcp__tickets__close_ticket");
}

#[test]
fn gemini_cli_does_not_retry_a_stream_cut_mid_body() {
    // Measured behaviour, for docs/agents.md: Gemini CLI's first streamed call is cut after
    // one event, the connection closed mid-body; it does not retry it, exits 1 naming the
    // dropped socket, and the run FAILs.
    let Some(gemini) = gemini_cli() else {
        return;
    };
    let scenario = repo().join("engine/cli/tests/data/gemini-cli-cut/scenario.toml");
    let ran = run_agent(&scratch("agents", "gemini-cli-cut"), 0, &scenario, &gemini);
    let shown = &ran.shown;
    assert_eq!(ran.code, Some(1), "{shown}");
    assert!(shown.contains("the agent exited with status 1"), "{shown}");
    let stderr = std::fs::read_to_string(ran.evidence.join("agent.stderr")).unwrap();
    assert!(stderr.contains("TypeError: terminated"), "{stderr}");
}

#[test]
fn gemini_cli_works_an_mcp_world_as_a_scenario_agent() {
    // The adapter names the server in Gemini CLI's settings; it offers the server's tools as
    // `mcp_tickets_TOOL` and gets past the world's 429 on close.
    let Some(gemini) = gemini_cli() else {
        return;
    };
    work_the_ticket_world("gemini-cli.toml", &gemini, "mcp_tickets_close_ticket");
}

#[test]
fn codex_works_an_mcp_world_as_a_scenario_agent() {
    // The adapter names the server in Codex's config; Codex offers its tools as a Responses
    // namespace, which simtape flattens to the names Claude Code uses (the same fixture), and
    // the calls go back by namespace and name.
    let Some(codex) = codex() else {
        return;
    };
    work_the_ticket_world("codex.toml", &codex, "mcp__tickets__close_ticket");
}

#[test]
fn opencode_works_an_mcp_world_as_a_scenario_agent() {
    // The adapter names the server as a remote MCP server in OpenCode's config; OpenCode calls
    // its tools as SERVER_TOOL.
    let Some(opencode) = opencode() else {
        return;
    };
    work_the_ticket_world("opencode.toml", &opencode, "tickets_close_ticket");
}

/// A running aimock, stopped when dropped.
pub(crate) struct Aimock(std::process::Child);

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts aimock (npm `@copilotkit/aimock`, the LLM record tests' fake provider, installed by
/// `.ci/run` under engine/core/tests/peers) on a free port; `None` after a skip notice.
pub(crate) fn aimock() -> Option<(Aimock, u16)> {
    let peers = repo().join("engine/core/tests/peers");
    let bin = peers.join("node_modules/.bin/llmock");
    if !bin.exists() {
        crate::clients::missing(format!(
            "aimock missing ({}): npm ci --prefix engine/core/tests/peers",
            bin.display()
        ));
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Aimock(
        std::process::Command::new(&bin)
            .args([
                "-p",
                &port.to_string(),
                "-h",
                "127.0.0.1",
                "--log-level",
                "silent",
                "-f",
            ])
            .arg(peers.join("fixtures"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some((child, port));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("aimock did not listen on port {port}");
}

#[test]
fn serve_records_a_real_provider_into_a_fixture_the_scenario_then_replays() {
    // Goal: `simtape serve --record-llm` answers the agent from a real provider (aimock here)
    // and writes each call into a fixture; served from that fixture, the same agent gets the
    // same answer, with no provider running.
    let Some((provider, port)) = aimock() else {
        return;
    };
    let dir = scratch("agents", "record");
    let agent = dir.join("agent.py");
    let script = r#"
import json, os, urllib.request
body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(), headers={"content-type": "application/json"})
with urllib.request.urlopen(request) as response:
    answer = json.load(response)["choices"][0]["message"]["content"]
print("answer:", answer)
"#;
    std::fs::write(&agent, script).unwrap();
    std::fs::write(dir.join("empty.jsonl"), "{\"simtape_llm\": 1}\n").unwrap();
    let scenario = |fixture: &str| {
        let path = dir.join(format!("{fixture}.toml"));
        let toml = format!(
            "[scenario]\nname = \"record\"\nseeds = [0]\n[llm]\nfixture = \"{fixture}.jsonl\"\n[[task]]\nname = \"t\"\nsteps = [{{ sleep = \"0s\" }}]\n"
        );
        std::fs::write(&path, toml).unwrap();
        path
    };
    let recorded = simtape()
        .arg("serve")
        .arg(scenario("empty"))
        .args(["--record-llm", "openai-chat", "--fixture-out"])
        .arg(dir.join("recorded.jsonl"))
        .arg("--upstream")
        .arg(format!("http://127.0.0.1:{port}/v1"))
        .arg("--")
        .arg("python3")
        .arg(&agent)
        .current_dir(&dir)
        .output()
        .unwrap();
    drop(provider);
    assert_eq!(recorded.status.code(), Some(0), "{}", text(&recorded));
    let fixture = std::fs::read_to_string(dir.join("recorded.jsonl")).unwrap();
    assert!(fixture.contains("Hello from aimock."), "{fixture}");
    let replayed = simtape()
        .arg("serve")
        .arg(scenario("recorded"))
        .arg("--")
        .arg("python3")
        .arg(&agent)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(replayed.status.code(), Some(0), "{}", text(&replayed));
    // The agent runs in the sandbox, over an overlay of this directory: it says its answer
    // (serve passes its output through) rather than leave a file on the host.
    for output in [&recorded, &replayed] {
        assert!(
            text(output).contains("answer: Hello from aimock."),
            "{}",
            text(output)
        );
    }
}

#[test]
fn run_records_an_agent_programs_model_into_a_fixture_that_then_replays() {
    // Goal: `simtape run --record-llm` on an agent-program scenario answers the agent from a
    // real provider (aimock), judges the run as usual, and leaves a fixture from which the
    // same scenario then passes with no provider running; the request noise the scenario
    // normalizes (the agent's pid) is normalized in the recorded match too.
    let Some((provider, port)) = aimock() else {
        return;
    };
    let dir = scratch("agents", "run-record");
    let path = scenario(&dir, "");
    let toml = std::fs::read_to_string(&path)
        .unwrap()
        .replace("Write the notes.", "Say hello, then write the notes.")
        .replace("Notes written by the model.", "Hello from aimock.")
        .replace("Notes written", "Hello from aimock");
    std::fs::write(&path, &toml).unwrap();
    let record = |extra: &[&str]| {
        simtape()
            .arg("run")
            .arg(&path)
            .args(["--record-llm", "openai-chat", "--fixture-out"])
            .arg(dir.join("recorded.jsonl"))
            .arg("--upstream")
            .arg(format!("http://127.0.0.1:{port}/v1"))
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = record(&["--check-determinism"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let recorded = record(&[]);
    drop(provider);
    let shown = text(&recorded);
    assert_eq!(recorded.status.code(), Some(0), "{shown}");
    assert!(shown.contains("verify held   answer"), "{shown}");
    let fixture = std::fs::read_to_string(dir.join("recorded.jsonl")).unwrap();
    assert!(fixture.contains("(agent run <nonce>)"), "{fixture}");
    std::fs::write(&path, toml.replace("llm.jsonl", "recorded.jsonl")).unwrap();
    let replayed = simtape().arg("run").arg(&path).output().unwrap();
    let shown = text(&replayed);
    assert_eq!(replayed.status.code(), Some(0), "{shown}");
    assert!(shown.contains("answer: Hello from aimock."), "{shown}");
}

#[test]
fn an_agent_program_on_the_virtual_clock_reads_the_runs_time() {
    // Goal: with `clock = "virtual"` (libfaketime) the agent's own wall clock reads the run's
    // virtual time: the scenario's start, moved on by the model call's simulated 800 ms, not
    // the host's date; the answer (its last line) is judged on it.
    if simtape_serve::clock::libfaketime().is_none() {
        crate::clients::missing(
            "libfaketime missing: install the Debian package faketime (.ci/run does)".into(),
        );
        return;
    }
    let dir = scratch("agents", "clock");
    let scenario = scenario(&dir, "");
    let clock_agent = dir.join("clock.py");
    let script = "import datetime, subprocess, sys\n\
        subprocess.run([sys.executable, sys.argv[1]], check=True)\n\
        print(datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S'))\n";
    std::fs::write(&clock_agent, script).unwrap();
    let source = std::fs::read_to_string(&scenario).unwrap();
    let agent = dir.join("agent.py").display().to_string();
    let timed = source
        .replace(
            &format!("args = [{agent:?}]"),
            &format!(
                "args = [{:?}, {agent:?}]\nclock = \"virtual\"",
                clock_agent.display().to_string()
            ),
        )
        .replace(
            "equals = \"Notes written by the model.\"",
            "equals = \"2026-01-01 00:00:00\"",
        );
    assert!(timed.contains("clock = \"virtual\""), "{timed}");
    std::fs::write(&scenario, timed).unwrap();
    let output = simtape().arg("run").arg(&scenario).output().unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(shown.contains("verify held   answer"), "{shown}");
}

#[test]
fn an_agent_programs_settle_window_is_set_by_the_scenario_or_the_flag() {
    // Goal: `[agent] settle` decodes (a bad one is a check error at its field), and
    // `--settle-ms` on run and sweep widens the window; the runs still pass.
    let dir = scratch("agents", "settle");
    let path = scenario(&dir, "");
    let source = std::fs::read_to_string(&path).unwrap();
    let with = |settle: &str| {
        let edited = source.replace(
            "task = \"Write the notes.\"",
            &format!("task = \"Write the notes.\"\nsettle = {settle}"),
        );
        assert_ne!(edited, source);
        std::fs::write(&path, edited).unwrap();
    };
    with("\"fast\"");
    let check = simtape().arg("check").arg(&path).output().unwrap();
    assert_eq!(check.status.code(), Some(2), "{}", text(&check));
    assert!(
        text(&check).contains("field `agent.settle`"),
        "{}",
        text(&check)
    );
    with("\"40ms\"");
    let run = simtape().arg("run").arg(&path).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let flagged = simtape()
        .arg("run")
        .arg(&path)
        .args(["--settle-ms", "60"])
        .output()
        .unwrap();
    assert_eq!(flagged.status.code(), Some(0), "{}", text(&flagged));
    let swept = simtape()
        .arg("sweep")
        .arg(&path)
        .args(["--seeds", "0..2", "--settle-ms", "60"])
        .output()
        .unwrap();
    assert_eq!(swept.status.code(), Some(0), "{}", text(&swept));
    let refused = simtape()
        .arg("run")
        .arg(&path)
        .args(["--settle-ms", "70000"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
}
