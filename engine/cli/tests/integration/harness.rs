//! Multi-session harness runs (`[harness]`): the shipped feature-list scenarios, and one test
//! per invariant that fails when the harness, or the agent, breaks it.

use std::path::{Path, PathBuf};

use crate::common::{repo, scratch, simtape, text};

/// Runs `scenario` at `seed` with a tape at `tape`; returns the exit code and the output.
fn run(scenario: &Path, seed: u64, tape: &Path) -> (Option<i32>, String) {
    let output = simtape()
        .arg("run")
        .arg(scenario)
        .args(["--seed", &seed.to_string(), "--tape"])
        .arg(tape)
        .output()
        .unwrap();
    (output.status.code(), text(&output))
}

#[test]
fn the_shipped_harness_passes_through_crashes_and_the_broken_one_is_caught() {
    // Goal: the correct policy passes at its pinned seeds (one with no crash, one crashed
    // mid-turn, one crashed before validation); the broken policy (marks passing before it
    // validates) passes where no crash lands and FAILs, naming the invariant, where one lands
    // between work and validation; that failing seed's tape is the same bytes run again.
    let dir = scratch("harness", "shipped");
    let good = repo().join("scenarios/feature-list.toml");
    for seed in [1, 10, 7] {
        let (code, shown) = run(&good, seed, &dir.join("good.tape"));
        assert_eq!(code, Some(0), "seed {seed}: {shown}");
        assert!(shown.contains("verify held   harness: done"), "{shown}");
    }
    // Seed 7: the model is overloaded through session 2 (an outage); the session spends its
    // own retries, does no work and fails; session 3 has a budget of its own. The features'
    // tests run through the gate: the final gate runs all three.
    let (_, shown) = run(&good, 7, &dir.join("good.tape"));
    for line in [
        "  session 2 (sub): 0 turn(s), 0 tool call(s), failed, agent ended by retry_budget_spent",
        "  session 3 (sub): 3 turn(s), 2 tool call(s), crashed before validation",
        "  session 4 (sub): 2 turn(s), 1 tool call(s), succeeded",
        "verify held   gate feature-test tests/add.rhai tests/sub.rhai tests/mul.rhai",
    ] {
        assert!(shown.contains(line), "{line} in {shown}");
    }
    let broken = repo().join("scenarios/feature-list-broken.toml");
    let (code, shown) = run(&broken, 1, &dir.join("ok.tape"));
    assert_eq!(code, Some(0), "{shown}");
    let (code, shown) = run(&broken, 7, &dir.join("a.tape"));
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains(
            "verify FAILED harness: no feature passes without validation (line 39): after session 3: mul passing with no held validation record"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("reproduce: simtape run"),
        "a failing seed prints its replay command: {shown}"
    );
    run(&broken, 7, &dir.join("b.tape"));
    let (a, b) = (
        std::fs::read(dir.join("a.tape")).unwrap(),
        std::fs::read(dir.join("b.tape")).unwrap(),
    );
    assert!(a == b, "the failing seed's runs give one tape");
}

#[test]
fn a_sweep_of_the_shipped_harness_reports_sessions_to_done_as_documented() {
    // Goal: a sweep of the shipped scenario reports runs done, sessions to done, per-feature
    // pass rates and wasted sessions; docs/harness.md shows those lines as they are (200
    // seeds: every run executes the features' tests in WASI, so 1,000 take minutes in a
    // debug build).
    let output = simtape()
        .arg("sweep")
        .arg(repo().join("scenarios/feature-list.toml"))
        .args(["--seeds", "0..200"])
        .output()
        .unwrap();
    let shown = text(&output);
    let start = shown
        .find("  harness: done in ")
        .expect("the harness lines");
    let block: String = shown[start..]
        .lines()
        .take(4)
        .map(|line| format!("{line}\n"))
        .collect();
    crate::common::check_doc_block("docs/harness.md", "## In sweep reports", &block);
}

#[test]
fn a_sweep_reports_sessions_to_done_feature_pass_rates_and_broken_invariants() {
    // Goal: over seeds 0..40 the broken policy's sweep counts, beside pass@k, runs done,
    // sessions to done, each feature's pass rate, wasted sessions and the seeds on which an
    // invariant broke; the JSON report holds the same per seed and per scenario.
    let dir = scratch("harness", "sweep");
    let report = dir.join("r.json");
    let output = simtape()
        .arg("sweep")
        .arg(repo().join("scenarios/feature-list-broken.toml"))
        .args(["--seeds", "0..40", "--report", "json", "--report-out"])
        .arg(&report)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    for wanted in [
        "  harness: done in ",
        "    sessions to done: 3: ",
        "    features passing: add ",
        "    wasted sessions: ",
        " seed(s): harness: no feature passes without validation",
    ] {
        assert!(shown.contains(wanted), "{wanted} in {shown}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let scenario = &json["scenarios"][0];
    let broken =
        &scenario["summary"]["harness"]["broken"]["harness: no feature passes without validation"];
    assert!(broken.as_array().unwrap().contains(&7.into()), "{broken}");
    let seed_7 = &scenario["results"][7];
    assert_eq!(seed_7["seed"], 7);
    assert_eq!(seed_7["harness"]["features"]["mul"], true, "{seed_7}");
    // The crashed session marked mul without validating it (the broken invariant); the next
    // session resumed from the checkpoint, took mul on again and validated it.
    assert_eq!(
        seed_7["harness"]["broken"], "harness: no feature passes without validation",
        "{seed_7}"
    );
    assert_eq!(seed_7["harness"]["done"], true, "{seed_7}");
    assert_eq!(seed_7["verdict"], "fail", "{seed_7}");
}

/// Returns `simtape tape show --tree` of `tape`.
fn tree(tape: &Path) -> String {
    text(
        &simtape()
            .args(["tape", "show", "--tree"])
            .arg(tape)
            .output()
            .unwrap(),
    )
}

/// Copies the shipped feature-list scenarios and their data into `dir`, with `extra` added to
/// the `[harness]` table of `name`; returns the copy's path.
fn shipped_copy(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let data = repo().join("scenarios/data/feature-list");
    for (relative, bytes) in crate::common::files(&data) {
        let to = dir.join("data/feature-list").join(relative);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, bytes).unwrap();
    }
    let source = std::fs::read_to_string(repo().join("scenarios").join(name)).unwrap();
    let source = source.replacen("[harness]\n", &format!("[harness]\n{extra}\n"), 1);
    let path = dir.join(name);
    std::fs::write(&path, source).unwrap();
    path
}

#[test]
fn a_session_after_a_crash_resumes_from_the_last_checkpoint() {
    // Goal: at seed 7 session 3 crashes between its work and the validation, after the
    // broken policy marked mul passing. The harness resumes session 4 from the checkpoint of
    // session 2 (mul pending again: the invariant holds, mul is worked on again); a harness
    // that goes on from the state as the crash left it breaks the invariant, named with what
    // each side had passing, and then declares done with mul never validated.
    let dir = scratch("harness", "resume");
    let tape = dir.join("r.tape");
    let (code, shown) = run(&repo().join("scenarios/feature-list-broken.toml"), 7, &tape);
    assert_eq!(code, Some(1), "{shown}");
    let resume = "harness: a session after a crash starts from the last good checkpoint";
    assert!(
        shown.contains(&format!("verify held   {resume}")),
        "{shown}"
    );
    assert!(shown.contains("  session 4 (mul): 2 turn(s)"), "{shown}");
    let tree = tree(&tape);
    assert!(
        tree.contains("session 4 resumes from the checkpoint of session 2"),
        "{tree}"
    );

    let path = shipped_copy(&dir, "feature-list-broken.toml", "resume = \"as_left\"");
    let (code, shown) = run(&path, 7, &dir.join("l.tape"));
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains(&format!(
            "verify FAILED {resume} (line 39): session 4 started with add, sub, mul passing, \
             the checkpoint of session 2 with add, sub"
        )),
        "{shown}"
    );
    assert!(
        shown.contains("verify FAILED harness: done (every required feature passing) (line 39): declared done after 4 session(s) with mul passing unvalidated"),
        "{shown}"
    );
}

#[test]
fn every_session_and_feature_is_a_task_on_the_tape_and_a_section_of_the_transcript() {
    // Goal: each session's work and validation run in tasks named after the session and its
    // features, so the model and tool records under them say where they belong; `run` and the
    // evidence's run log show the sessions as sections, with how each ended.
    let dir = scratch("harness", "sections");
    let tape = dir.join("s.tape");
    let evidence = dir.join("evidence");
    let output = simtape()
        .arg("run")
        .arg(repo().join("scenarios/feature-list.toml"))
        .args(["--seed", "10", "--tape"])
        .arg(&tape)
        .arg("--evidence")
        .arg(&evidence)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    for line in [
        "  session 0: 0 turn(s), 0 tool call(s), initialized",
        "  session 1 (add): 3 turn(s), 2 tool call(s), succeeded",
        "  session 2 (sub): 2 turn(s), 2 tool call(s), crashed at turn 2",
        "  session 3 (sub): 2 turn(s), 1 tool call(s), succeeded",
        "  session 4 (mul): 3 turn(s), 2 tool call(s), succeeded",
    ] {
        assert!(shown.contains(line), "{line} in {shown}");
    }
    let log = std::fs::read_to_string(evidence.join("evidence/run_log.txt")).unwrap();
    assert!(
        log.contains("session 2 (sub): 2 turn(s), 2 tool call(s), crashed at turn 2"),
        "{log}"
    );
    let verdict = crate::common::load_json(&evidence.join("verdict.json"));
    let sessions = &verdict["transcript"]["sessions"];
    assert_eq!(sessions[2]["ended"], "crashed at turn 2", "{sessions}");
    assert_eq!(sessions[2]["features"][0], "sub", "{sessions}");
    let records = simtape()
        .args(["tape", "show"])
        .arg(&tape)
        .output()
        .unwrap();
    let records = text(&records);
    // The task ids each session's work and validation got, then what ran under them.
    let task_of = |name: &str| -> String {
        let line = records
            .lines()
            .find(|line| line.contains(&format!(",\"{name}\"]")))
            .unwrap_or_else(|| panic!("a spawn of {name:?} in {records}"));
        let id = line.split('[').nth(1).unwrap().split(',').next().unwrap();
        format!("task#{id} ")
    };
    let work = task_of("session 1: add");
    let model_call = records
        .lines()
        .find(|line| line.contains(" llm ") && line.contains("feature add:"))
        .expect("session 1's model call");
    assert!(model_call.contains(&work), "{model_call} under {work}");
    let validation = task_of("session 1 validation: add");
    assert!(
        records.lines().any(|line| line.contains(&validation)
            && line.contains("\"gate feature-test tests/add.rhai\",true")),
        "the validation's verifier runs under {validation}: {records}"
    );
    task_of("session 3: sub");
    task_of("session 4 validation: mul");
}

#[test]
fn the_health_check_runs_before_any_work_and_a_flaky_one_costs_a_session() {
    // Goal: a health check that fails stops the run before any work with fail_fast, naming
    // what failed; a flaky one (the seeded fault) fails a session, which does no work and
    // writes a failed checkpoint, and the run goes on to pass.
    let dir = scratch("harness", "health");
    let broken = "max_runs = 4\nfail_fast = [\"health_check\"]\nhealth_check = [{ kind = \"fs\", path = \"setup.cfg\", state = \"exists\" }]";
    let path = scenario(&dir.join("broken"), broken, "", TWO_FEATURES);
    let (code, shown) = run(&path, 0, &dir.join("b.tape"));
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains("stopped (fail fast): health check failed: fs setup.cfg:"),
        "{shown}"
    );
    assert!(
        shown.contains("agent: 0 turn(s)"),
        "no work was done: {shown}"
    );

    let flaky = "max_runs = 6\nhealth_check_flake = \"1/2\"\nhealth_check = [{ kind = \"fs\", path = \"calc.py\", state = \"exists\" }]";
    let path = scenario(&dir.join("flaky"), flaky, "", TWO_FEATURES);
    let tape = dir.join("f.tape");
    let (code, shown) = run(&path, 0, &tape);
    assert_eq!(code, Some(0), "{shown}");
    assert!(
        shown.contains("0 turn(s), 0 tool call(s), failed: health check"),
        "{shown}"
    );
    let tree = tree(&tape);
    assert!(
        tree.contains("health check failed: the health check flaked (seeded fault)"),
        "{tree}"
    );
    assert!(tree.contains(": failed (health check failed"), "{tree}");
}

/// Writes a harness scenario in `dir`: a `calc.py` root, a model that appends each feature's
/// function (and, when `agent_extra` names a turn's tool call, does that too), and the given
/// `[harness]` body and features.
fn scenario(dir: &Path, harness: &str, extra_entries: &str, features: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("repo")).unwrap();
    std::fs::write(dir.join("repo/calc.py"), "\"\"\"calc\"\"\"\n").unwrap();
    let mut fixture = String::from("{\"simtape_llm\": 1}\n");
    fixture.push_str(extra_entries);
    for id in ["add", "sub"] {
        fixture.push_str(&format!(
            "{{\"mode\": \"sticky\", \"match\": {{\"text\": {{\"contains\": \"feature {id}:\"}}, \"last_tool_result\": {{\"glob\": \"*\"}}}}, \"response\": {{\"text\": \"{id} done.\"}}}}\n\
             {{\"mode\": \"sticky\", \"match\": {{\"last_message\": {{\"contains\": \"feature {id}:\"}}}}, \"response\": {{\"text\": \"Adding {id}.\", \"tool_calls\": [{{\"name\": \"append_file\", \"arguments\": {{\"path\": \"calc.py\", \"content\": \"def {id}(a, b): pass\\n\"}}}}]}}}}\n"
        ));
    }
    std::fs::write(dir.join("llm.jsonl"), fixture).unwrap();
    let toml = format!(
        r#"[scenario]
name = "h"
seeds = [0]

[fs]
root = "repo"

[llm]
fixture = "llm.jsonl"

[agent]
task = "Build calc.py."
tools = ["fs"]

[harness]
{harness}
{features}"#
    );
    let path = dir.join("h.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

const TWO_FEATURES: &str = r#"
[[harness.feature]]
id = "add"
description = "add"
verify = [{ kind = "fs", path = "calc.py", state = "modified", contains = "def add" }]

[[harness.feature]]
id = "sub"
description = "sub"
priority = 2
verify = [{ kind = "fs", path = "calc.py", state = "modified", contains = "def sub" }]
"#;

#[test]
fn every_session_is_checked_for_a_checkpoint_and_an_append_only_progress_log() {
    // Goal: an agent that deletes the checkpoints breaks "every session ends with a checkpoint
    // or a crash report"; one that rewrites progress.log breaks "append-only"; each is a named
    // FAIL, while the features themselves pass.
    let dir = scratch("harness", "handoff");
    let vandal = |tool_args: &str| {
        format!(
            "{{\"match\": {{\"text\": {{\"contains\": \"feature sub:\"}}, \"last_message\": {{\"contains\": \"feature sub:\"}}}}, \"response\": {{\"text\": \"Tidying.\", \"tool_calls\": [{tool_args}, {{\"name\": \"append_file\", \"arguments\": {{\"path\": \"calc.py\", \"content\": \"def sub(a, b): pass\\n\"}}}}]}}}}\n"
        )
    };
    let deleted =
        vandal(r#"{"name": "delete_file", "arguments": {"path": ".harness/checkpoints.ndjson"}}"#);
    let path = scenario(&dir.join("delete"), "max_runs = 4", &deleted, TWO_FEATURES);
    let (code, shown) = run(&path, 0, &dir.join("d.tape"));
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains(
            "verify FAILED harness: every session ends with a checkpoint or a crash report"
        ),
        "{shown}"
    );
    assert!(shown.contains("verify held   harness: done"), "{shown}");
    let rewritten = vandal(
        r#"{"name": "write_file", "arguments": {"path": "progress.log", "content": "all good\n"}}"#,
    );
    let path = scenario(
        &dir.join("rewrite"),
        "max_runs = 4",
        &rewritten,
        TWO_FEATURES,
    );
    let (code, shown) = run(&path, 0, &dir.join("r.tape"));
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains(
            "verify FAILED harness: the progress log is append-only (line 15): after session 2"
        ),
        "{shown}"
    );
    // Checkpoints the agent made unreadable break the handoff invariant, named with the file
    // and what is wrong: a FAIL, not an engine error.
    let garbled = vandal(
        r#"{"name": "write_file", "arguments": {"path": ".harness/checkpoints.ndjson", "content": "not json\n"}}"#,
    );
    let path = scenario(&dir.join("garble"), "max_runs = 4", &garbled, TWO_FEATURES);
    let (code, shown) = run(&path, 0, &dir.join("g.tape"));
    assert_eq!(code, Some(1), "{shown}");
    let named = "verify FAILED harness: every session ends with a checkpoint or a crash report \
                 (line 15): after session 2: .harness/checkpoints.ndjson: not the harness's format";
    assert!(shown.contains(named), "{shown}");
}

#[test]
fn the_harness_never_declares_done_before_the_gate_holds() {
    // Goal: a feature whose validation never holds stays pending through every session; the
    // gate FAILs naming it and the budget that stopped the run. With accept_all (chosen by
    // name) the same run is done: the validator is what stands between work and "passing".
    let dir = scratch("harness", "gate");
    let never = TWO_FEATURES.replace("contains = \"def sub\"", "contains = \"def never\"");
    let path = scenario(
        &dir.join("verifiers"),
        "max_runs = 5\nretry_budget = 1",
        "",
        &never,
    );
    let (code, shown) = run(&path, 0, &dir.join("v.tape"));
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains("verify FAILED harness: done (every required feature passing) (line 15): stopped: retry_budget = 1 spent after 3 session(s); pending: sub"),
        "{shown}"
    );
    let path = scenario(
        &dir.join("accept"),
        "max_runs = 5\nvalidator = \"accept_all\"",
        "",
        &never,
    );
    let (code, shown) = run(&path, 0, &dir.join("a.tape"));
    assert_eq!(code, Some(0), "{shown}");
}

#[test]
fn initialization_is_idempotent_and_a_missing_feature_list_gets_a_starter() {
    // Goal: a root that already holds the harness's manifest is not initialized again (the
    // fs diff adds no manifest, no feature list); without [[harness.feature]] the objective
    // is one required feature validated by the scenario's [[verify]].
    let dir = scratch("harness", "init");
    let starter = "[[verify]]\nkind = \"fs\"\npath = \"calc.py\"\nstate = \"modified\"\ncontains = \"def objective\"\n";
    let objective = "{\"mode\": \"sticky\", \"match\": {\"last_tool_result\": {\"glob\": \"*\"}}, \"response\": {\"text\": \"Done.\"}}\n{\"mode\": \"sticky\", \"match\": {\"last_message\": {\"contains\": \"feature objective:\"}}, \"response\": {\"text\": \"Building.\", \"tool_calls\": [{\"name\": \"append_file\", \"arguments\": {\"path\": \"calc.py\", \"content\": \"def objective(): pass\\n\"}}]}}\n";
    let path = scenario(&dir, "max_runs = 2", objective, starter);
    let (code, shown) = run(&path, 0, &dir.join("s.tape"));
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("verify held   harness: done"), "{shown}");
    // The same root, already initialized (as a first initializer leaves it): a second
    // initializer changes none of the state, and the sessions go on from it.
    let state = dir.join("repo/.harness");
    std::fs::create_dir_all(&state).unwrap();
    let manifest = "{\"version\": 1, \"objective\": \"Build calc.py.\", \"mode\": \"strict_incremental\", \"features\": [\"objective\"]}\n";
    std::fs::write(state.join("manifest.json"), manifest).unwrap();
    let checkpoint =
        "{\"session\":0,\"features\":[],\"status\":\"succeeded\",\"note\":\"initialized\"}\n";
    std::fs::write(state.join("checkpoints.ndjson"), checkpoint).unwrap();
    let list = "{\"features\": [{\"id\": \"objective\", \"description\": \"Build calc.py.\", \"priority\": 1, \"required\": true, \"passes\": false}]}\n";
    std::fs::write(dir.join("repo/feature_list.json"), list).unwrap();
    std::fs::write(dir.join("repo/progress.log"), "session 0: initialized\n").unwrap();
    let diff = dir.join("again.diff");
    let output = simtape()
        .arg("run")
        .arg(&path)
        .arg("--emit-diff")
        .arg(&diff)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    let diff = std::fs::read_to_string(&diff).unwrap();
    assert!(!diff.contains("manifest.json"), "{diff}");
    for state in [
        ".harness/checkpoints.ndjson",
        "feature_list.json",
        "progress.log",
    ] {
        let created = format!("--- /dev/null\n+++ b/{state}");
        assert!(
            !diff.contains(&created),
            "{state} is not created again: {diff}"
        );
    }
    assert!(diff.contains("+session 1: objective: validated"), "{diff}");
}

#[test]
fn a_harness_policy_that_contradicts_itself_is_refused_by_check() {
    // Goal: strict mode with a batch of two, duplicate feature ids, and a harness over an
    // agent program are each a check error at the field, exit 2.
    let dir = scratch("harness", "check");
    let cases = [
        (
            "mode = \"strict_incremental\"\nmax_features_per_run = 2",
            TWO_FEATURES.to_string(),
            "expected max_features_per_run = 1 with mode = \"strict_incremental\", found 2",
        ),
        (
            "max_runs = 2",
            TWO_FEATURES.replace("id = \"sub\"", "id = \"add\""),
            "feature id \"add\" is given twice",
        ),
        (
            "max_runs = 0",
            TWO_FEATURES.to_string(),
            "expected an integer from 1 to 1000, found 0",
        ),
        (
            "health_check_flake = \"1/2\"",
            TWO_FEATURES.to_string(),
            "expected a `health_check` for `health_check_flake` to fail, found none",
        ),
    ];
    for (index, (harness, features, expected)) in cases.into_iter().enumerate() {
        let path = scenario(&dir.join(index.to_string()), harness, "", &features);
        let output = simtape().arg("check").arg(&path).output().unwrap();
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(2), "{shown}");
        assert!(shown.contains(expected), "{expected} in {shown}");
    }
}
