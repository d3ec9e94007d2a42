//! `simtape shrink`: a failing tape's run shrunk to the decisions that matter. The race of
//! race-edit keeps the one latency that decides which edit is lost; a ticket-retry whose
//! retry budget three 429s in a row exhaust keeps exactly those three faults; a Python agent
//! program that crashes on a 500 keeps the one fault, rerun within a budget. Each minimal
//! tape replays alone and fails the same way; shrinking twice gives the same files.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{
    check_doc_block, expect, files, load_json, repo, run_seed, scratch, simtape, text,
    three_429s_variant,
};

/// [`run_seed`] of a seed that must fail (exit 1) or stop in error (exit 3).
fn failing_run(dir: &Path, scenario: &Path, seed: u64, tape: &str) {
    let output = run_seed(dir, scenario, seed, tape);
    assert!(
        matches!(output.status.code(), Some(1 | 3)),
        "seed {seed} must not pass: {}",
        text(&output)
    );
}

fn shrink(dir: &Path, args: &[&str]) -> Output {
    let output = simtape()
        .current_dir(dir)
        .arg("shrink")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    output
}

/// The decisions of a shrink's `decisions.json` that are not at their simplest value (a
/// chance that fires, a draw above its first value), as (name, kind).
fn matter(decisions: &Path) -> Vec<(String, String)> {
    let json = load_json(decisions);
    json["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            let kind = d["kind"].as_str().unwrap();
            let simplest = if kind.starts_with("chance") {
                u64::MAX
            } else {
                0
            };
            d["value"].as_u64().unwrap() != simplest
        })
        .map(|d| {
            (
                d["name"].as_str().unwrap().to_string(),
                d["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Replays `tape` from a directory of its own: byte-identical, with the failing verdict.
fn replays_alone(tape: &Path, name: &str) {
    let elsewhere = scratch("shrink", name);
    expect(
        simtape().current_dir(&elsewhere).arg("replay").arg(tape),
        0,
        "byte-identical",
    );
}

#[test]
fn a_race_edit_seed_shrinks_to_the_latency_that_loses_the_edit() {
    let dir = scratch("shrink", "race");
    failing_run(
        &dir,
        &repo().join("scenarios/race-edit.toml"),
        1,
        "race-1.tape",
    );
    let output = shrink(&dir, &["race-1.tape"]);
    let shown = String::from_utf8_lossy(&output.stdout).to_string();
    check_doc_block("docs/shrinking.md", "<!-- shrink race-edit -->", &shown);
    // The README shows the same shrink, abridged: its lines are the real ones.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for line in shown.lines().skip(1).take(2) {
        assert!(readme.contains(line), "README.md lacks {line:?}");
    }
    // At zero jitter the edits interleave in lockstep and the timeout edit is lost, another
    // failure; this seed loses the retries edit, which one draw decides.
    let out = dir.join("race-1.shrink");
    let left = matter(&out.join("decisions.json"));
    assert_eq!(left.len(), 1, "{left:?}\n{shown}");
    assert!(left[0].0.starts_with("fs#"), "{left:?}");
    assert!(shown.contains("1 of 10 decisions matter"), "{shown}");
    assert!(
        shown.contains("without it, the run fails another way"),
        "{shown}"
    );
    replays_alone(&out.join("min.tape"), "race-replay");
    // The printed reproduce command fails the same way, from anywhere.
    let reproduce = shown
        .lines()
        .find_map(|line| line.strip_prefix("reproduce: "))
        .unwrap();
    let words: Vec<&str> = reproduce.split(' ').collect();
    assert_eq!(&words[..2], ["simtape", "run"], "{reproduce}");
    expect(
        simtape().current_dir(&dir).args(&words[1..]),
        1,
        "retries = 1",
    );
    // Twice, the same files.
    shrink(&dir, &["race-1.tape", "-o", "again"]);
    assert_eq!(files(&out), files(&dir.join("again")));
}

#[test]
fn three_429s_in_a_row_shrink_to_exactly_those_three_faults() {
    let dir = scratch("shrink", "ticket");
    let scenario = three_429s_variant(&dir);
    // Seed 11 draws 429 on comment_ticket's first three attempts, with other draws around.
    failing_run(&dir, &scenario, 11, "t.tape");
    let output = shrink(&dir, &["t.tape", "-o", "min"]);
    let shown = text(&output);
    let left = matter(&dir.join("min/decisions.json"));
    let names: Vec<&str> = left.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["mcp:tickets#0", "mcp:tickets#1", "mcp:tickets#2"],
        "{shown}"
    );
    assert!(
        left.iter().all(|(_, kind)| kind == "chance 1/2"),
        "{left:?}"
    );
    assert_eq!(shown.matches(": fires (chance 1/2)").count(), 3, "{shown}");
    assert_eq!(
        shown.matches("without it, the run passes").count(),
        3,
        "{shown}"
    );
    replays_alone(&dir.join("min/min.tape"), "ticket-replay");
}

/// A Python agent on the standard library: three model calls, and any HTTP error makes it
/// exit 1 (a crash on a 500).
const CRASHING_AGENT: &str = r#"
import json, os, sys, urllib.request, urllib.error
for call in range(3):
    body = {"model": "m", "messages": [{"role": "user", "content": "call %d" % call}]}
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
    )
    try:
        with urllib.request.urlopen(request) as response:
            answer = json.load(response)["choices"][0]["message"]["content"]
    except urllib.error.HTTPError as error:
        print("model error", error.code, file=sys.stderr)
        sys.exit(1)
print(answer)
"#;

fn crashing_agent_scenario(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("agent.py"), CRASHING_AGENT).unwrap();
    // One entry per call: an entry answers once.
    let mut fixture =
        String::from("{\"simtape_llm\": 1, \"latency\": {\"base_ms\": 100, \"jitter_ms\": 50}}\n");
    for call in 0..3 {
        fixture.push_str(&format!(
            "{{\"id\": \"call-{call}\", \"match\": {{\"last_message\": {{\"contains\": \"call {call}\"}}}}, \
             \"response\": {{\"text\": \"Done.\"}}}}\n"
        ));
    }
    std::fs::write(dir.join("llm.jsonl"), fixture).unwrap();
    let toml = format!(
        r#"[scenario]
name = "crash-on-500"

[llm]
fixture = "{fixture}"

[agent]
kind = "command"
adapter = "generic"
command = "python3"
args = [{agent:?}]
task = "Answer."

[[faults.llm]]
rate = "1/3"
status = 500

[[verify]]
kind = "answer"
equals = "Done."
"#,
        fixture = dir.join("llm.jsonl").display(),
        agent = dir.join("agent.py").display().to_string(),
    );
    let path = dir.join("crash.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// The first seed whose draws give the agent a 500 (of 1/3 per call, over three calls); its
/// tape is left at `tape`.
fn first_failing_seed(dir: &Path, scenario: &Path, tape: &str) -> u64 {
    (0..20)
        .find(|seed| run_seed(dir, scenario, *seed, tape).status.code() == Some(1))
        .expect("a seed of 20 meets a 500")
}

#[test]
fn an_agent_program_that_crashes_on_a_500_shrinks_to_the_one_fault() {
    let dir = scratch("shrink", "program");
    let scenario = crashing_agent_scenario(&dir);
    let seed = first_failing_seed(&dir, &scenario, "p.tape");
    let output = shrink(&dir, &["p.tape", "-o", "min", "--max-reruns", "30"]);
    let shown = text(&output);
    let left = matter(&dir.join("min/decisions.json"));
    assert_eq!(left.len(), 1, "seed {seed}: {left:?}\n{shown}");
    assert!(
        left[0].0.starts_with("llm#") && left[0].1 == "chance 1/3",
        "{left:?}"
    );
    assert!(shown.contains("without it, the run passes"), "{shown}");
    let reruns: u32 = shown
        .split(" reruns of at most 30")
        .next()
        .and_then(|head| head.rsplit('(').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the rerun count in {shown}"));
    assert!(reruns <= 30, "{shown}");
    replays_alone(&dir.join("min/min.tape"), "program-replay");
}

#[test]
fn a_passing_tape_a_prefix_and_a_nondeterministic_program_are_refused() {
    let dir = scratch("shrink", "refused");
    let output = simtape()
        .current_dir(&dir)
        .arg("run")
        .arg(repo().join("scenarios/race-edit.toml"))
        .args(["--seed", "2", "--tape", "pass.tape"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    expect(
        simtape().current_dir(&dir).args(["shrink", "pass.tape"]),
        2,
        "nothing to shrink: the run passed",
    );
    // A prefix (a killed run's tape) has no verdict to keep.
    let whole = std::fs::read(dir.join("pass.tape")).unwrap();
    std::fs::write(dir.join("cut.tape"), &whole[..whole.len() / 2]).unwrap();
    expect(
        simtape().current_dir(&dir).args(["shrink", "cut.tape"]),
        1,
        "truncated tape",
    );
    // An agent whose requests carry fresh entropy: its rerun is another run.
    let scenario = crashing_agent_scenario(&dir);
    let noisy = CRASHING_AGENT.replace(
        "\"call %d\" % call",
        "\"call %d %d\" % (call, __import__('random').SystemRandom().randrange(10**12))",
    );
    std::fs::write(dir.join("agent.py"), noisy).unwrap();
    let seed = first_failing_seed(&dir, &scenario, "noisy.tape");
    let output = simtape()
        .current_dir(&dir)
        .args(["shrink", "noisy.tape", "-o", "noisy"])
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "seed {seed}: {shown}");
    assert!(
        shown.contains("rerun 1 of noisy.tape did not give its tape again"),
        "{shown}"
    );
    assert!(
        shown.contains("simtape diff noisy.tape noisy/rerun-1.tape"),
        "{shown}"
    ); // An output directory whose `scenario/` is not a former shrink's is left alone.
    std::fs::create_dir_all(dir.join("mine/scenario")).unwrap();
    std::fs::write(dir.join("mine/scenario/keep.txt"), "mine").unwrap();
    expect(
        simtape()
            .current_dir(&dir)
            .args(["shrink", "noisy.tape", "-o", "mine"]),
        2,
        "exists and is not a shrink's",
    );
    assert!(dir.join("mine/scenario/keep.txt").exists());
}

#[test]
fn a_shrink_of_a_sweeps_tape_is_remembered_by_its_failure_database() {
    let dir = scratch("shrink", "remembered");
    let scenario = repo().join("scenarios/race-edit.toml");
    let sweep = || {
        let output = simtape()
            .current_dir(&dir)
            .arg("sweep")
            .arg(&scenario)
            .args(["--seeds", "0..6", "--out", "out"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", text(&output));
        String::from_utf8_lossy(&output.stdout).to_string()
    };
    sweep();
    let output = shrink(&dir, &["out/race-edit/seed-1.tape"]);
    let shown = text(&output);
    assert!(
        shown.contains("failure database: out/failures.db/race-edit/"),
        "{shown}"
    );
    let entries: Vec<serde_json::Value> = files(&dir.join("out/failures.db/race-edit"))
        .into_iter()
        .filter(|(path, _)| path.to_string_lossy().matches('.').count() == 1)
        .map(|(_, bytes)| serde_json::from_slice(&bytes).unwrap())
        .collect();
    let shrunk: Vec<&serde_json::Value> = entries
        .iter()
        .filter(|entry| !entry["shrunk"].is_null())
        .collect();
    assert_eq!(shrunk.len(), 1, "{entries:?}");
    assert_eq!(shrunk[0]["shrunk"]["seed"], 1);
    // The next sweep replays the shrunk run among the known failures.
    let next = sweep();
    assert!(
        next.lines()
            .any(|line| line.starts_with("  shrunk") && line.ends_with("still fails)")),
        "{next}"
    );
}
