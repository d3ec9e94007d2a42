//! `simtape fork` and `simtape explain`: a run again, with its parent's decisions up to a record and another seed's
//! after it. The child shares its parent's records up to the branch point, replays alone, names
//! its branch on its header, and a fork of a fork is one straight run.

use std::path::Path;

use simtape::oracle::{diff_paths, Mode};

use crate::common::{check_doc_block, expect, repo, run_ok, run_seed, scratch, simtape, text};

fn fork(dir: &Path, args: &[&str]) -> String {
    let output = run_ok(simtape().current_dir(dir).arg("fork").args(args));
    text(&output)
}

#[test]
fn a_child_shares_its_parents_records_up_to_the_branch_and_replays_alone() {
    let dir = scratch("fork", "race");
    let scenario = repo().join("scenarios/race-edit.toml");
    let output = run_seed(&dir, &scenario, 1, "parent.tape");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    // Record 16 is the first fs read: the decisions before it are the parent's.
    let shown = fork(
        &dir,
        &[
            "parent.tape",
            "--at",
            "16",
            "--seed",
            "7",
            "--tape",
            "child.tape",
        ],
    );
    assert!(shown.contains("fork: parent.tape at record 16"), "{shown}");
    assert!(
        shown.contains("kept 3 of the parent's 10 decisions"),
        "{shown}"
    );
    let diff = diff_paths(
        &dir.join("parent.tape"),
        &dir.join("child.tape"),
        Mode::Exact,
    )
    .unwrap();
    let first = diff
        .first
        .expect("seed 7 draws other latencies after the branch");
    assert!(first.index_a >= 16, "parted at {}: {shown}", first.index_a);
    assert!(
        shown.contains(&format!(
            "the child parts from its parent at record {}",
            first.index_a
        )),
        "{shown}"
    );
    let elsewhere = scratch("fork", "race-replay");
    expect(
        simtape()
            .current_dir(&elsewhere)
            .arg("replay")
            .arg(dir.join("child.tape")),
        0,
        "byte-identical",
    );
    expect(
        simtape()
            .current_dir(&dir)
            .args(["tape", "show", "child.tape", "--limit", "0"]),
        0,
        "at record 16 (its seed 1)",
    );
    // Twice, the same child.
    fork(
        &dir,
        &[
            "parent.tape",
            "--at",
            "16",
            "--seed",
            "7",
            "--tape",
            "again.tape",
        ],
    );
    assert_eq!(
        std::fs::read(dir.join("child.tape")).unwrap(),
        std::fs::read(dir.join("again.tape")).unwrap()
    );
    // A fork of the fork: its decisions file is the whole chain, so `run --decisions` of
    // that file at the last seed is the grandchild again, record for record.
    fork(
        &dir,
        &[
            "child.tape",
            "--at",
            "22",
            "--seed",
            "9",
            "--tape",
            "grandchild.tape",
        ],
    );
    let output = simtape()
        .current_dir(&dir)
        .arg("run")
        .arg(&scenario)
        .args([
            "--seed",
            "9",
            "--decisions",
            "grandchild.decisions.json",
            "--tape",
            "straight.tape",
        ])
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let straight = diff_paths(
        &dir.join("grandchild.tape"),
        &dir.join("straight.tape"),
        Mode::Exact,
    )
    .unwrap();
    assert!(straight.equal, "{}", straight.render_text());
}

#[test]
fn a_branch_point_past_the_end_or_a_prefix_is_refused() {
    let dir = scratch("fork", "refused");
    let output = run_seed(&dir, &repo().join("scenarios/race-edit.toml"), 2, "t.tape");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    expect(
        simtape()
            .current_dir(&dir)
            .args(["fork", "t.tape", "--at", "9999", "--seed", "1"]),
        2,
        "--at 9999: t.tape has no such record before its footer",
    );
    let whole = std::fs::read(dir.join("t.tape")).unwrap();
    std::fs::write(dir.join("cut.tape"), &whole[..whole.len() / 2]).unwrap();
    expect(
        simtape()
            .current_dir(&dir)
            .args(["fork", "cut.tape", "--at", "3", "--seed", "1"]),
        1,
        "truncated tape",
    );
}

#[test]
fn explain_names_the_decision_after_which_the_failure_is_certain() {
    let dir = scratch("fork", "explain");
    let output = run_seed(&dir, &repo().join("scenarios/race-edit.toml"), 1, "t.tape");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let explain = || {
        let output = run_ok(
            simtape()
                .current_dir(&dir)
                .args(["explain", "t.tape", "--forks", "10"]),
        );
        String::from_utf8_lossy(&output.stdout).to_string()
    };
    let shown = explain();
    // One line per point, each with its share of futures that fail the same way.
    let points = shown.lines().filter(|l| l.starts_with("  record ")).count();
    assert!(points >= 5, "{shown}");
    let verdict = shown.lines().last().unwrap();
    assert!(
        verdict.starts_with("after record ") && verdict.contains("fs#"),
        "an fs latency decides which edit is lost: {shown}"
    );
    assert!(
        verdict.contains("futures fail the same way; before it,"),
        "{shown}"
    );
    // The forks' seeds are fixed by the point: the same curve every time.
    assert_eq!(explain(), shown);
    let output = run_seed(
        &dir,
        &repo().join("scenarios/race-edit.toml"),
        2,
        "pass.tape",
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    expect(
        simtape().current_dir(&dir).args(["explain", "pass.tape"]),
        2,
        "nothing to explain: the run passed",
    );
}

#[test]
fn a_hundred_forks_of_a_passing_run_before_its_edits_fail_in_the_stated_fraction_and_replay_alone()
{
    // Goal: race-edit's seed 2 passes; forked at record 11 (its first fs request, before the
    // two edits race), the children keep its model call and draw the fs latencies again, so
    // some lose an edit. The fraction is stated in docs/exploring.md; every child replays
    // alone.
    let dir = scratch("fork", "hundred");
    let output = run_seed(
        &dir,
        &repo().join("scenarios/race-edit.toml"),
        2,
        "parent.tape",
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let mut failed = 0;
    for seed in 0..100 {
        let child = format!("child-{seed}.tape");
        let shown = fork(
            &dir,
            &[
                "parent.tape",
                "--at",
                "11",
                "--seed",
                &seed.to_string(),
                "--tape",
                &child,
            ],
        );
        if shown.contains("\nchild: fail: both edits landed") {
            failed += 1;
        } else {
            assert!(shown.contains("\nchild: pass"), "{shown}");
        }
        run_ok(simtape().current_dir(&dir).args(["replay", &child]));
    }
    check_doc_block(
        "docs/exploring.md",
        "Forked before its two edits",
        &format!(
            "100 forks of race-edit seed 2 at record 11: {failed} fail (an edit lost), {} pass\n",
            100 - failed
        ),
    );
    assert!((10..=90).contains(&failed), "{failed} of 100");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_generic_python_agent_forked_at_its_second_model_call_replays_the_first_and_diverges_after() {
    // Goal: an agent program runs again for the fork (its script travels with the tape), gets
    // the parent's first reply, and from its second call draws from the new seed: with seed
    // 3 that call meets the scenario's 429, so the child parts right there.
    let dir = scratch("fork", "generic");
    let second = generic_parent(&dir);
    let at = second.to_string();
    let shown = fork(
        &dir,
        &[
            "parent.tape",
            "--at",
            &at,
            "--seed",
            "3",
            "--tape",
            "child.tape",
        ],
    );
    let diff = diff_paths(
        &dir.join("parent.tape"),
        &dir.join("child.tape"),
        Mode::Exact,
    )
    .unwrap();
    let first = diff.first.expect("seed 3's 429 changes the second call");
    assert!(
        first.index_a > second,
        "the first call and the second request are the parent's: {shown}"
    );
    assert!(
        shown.contains(&format!(
            "the child parts from its parent at record {}",
            first.index_a
        )),
        "{shown}"
    );
    run_ok(simtape().current_dir(&dir).args(["replay", "child.tape"]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The tape's model calls: the ordinals of the `llm` actor's request records.
fn model_calls(tape: &Path) -> Vec<u64> {
    let mut reader = simtape::tape::TapeReader::open(tape).unwrap();
    let mut calls = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if reader.actor_name(record.actor) == "llm"
            && record.kind == simtape::tape::RecordKind::Request
        {
            calls.push(record.index);
        }
    }
    calls
}

/// A generic Python agent's passing run at seed 0, and the ordinal of its second model call.
fn generic_parent(dir: &Path) -> u64 {
    let scenario = repo().join("examples/agents/generic-python/scenario.toml");
    let output = run_seed(dir, &scenario, 0, "parent.tape");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let calls = model_calls(&dir.join("parent.tape"));
    assert_eq!(calls.len(), 2, "two model calls");
    calls[1]
}

/// Checks that `child` has its parent's records up to the reply to the second model call
/// (record `second` + 1 at the earliest), says `answer` there, and replays alone elsewhere.
fn switched_at_the_second_call(dir: &Path, second: u64, child: &str, answer: &str) {
    let diff = diff_paths(&dir.join("parent.tape"), &dir.join(child), Mode::Exact).unwrap();
    let first = diff.first.expect("the other model answers otherwise");
    assert!(first.index_a > second, "parted at {}", first.index_a);
    let shown = text(&run_ok(
        simtape().current_dir(dir).args(["tape", "show", child]),
    ));
    assert!(shown.contains(answer), "{shown}");
    let elsewhere = scratch("fork", &format!("{child}-elsewhere"));
    expect(
        simtape()
            .current_dir(&elsewhere)
            .arg("replay")
            .arg(dir.join(child)),
        0,
        "byte-identical",
    );
}

#[test]
fn a_fork_onto_another_fixture_keeps_the_first_call_and_answers_from_the_branch_with_it() {
    // Goal: `fork --fixture` switches the model's side at the branch point: the first call
    // gets the parent's reply, the second the other fixture's; the child's tape carries the
    // handover and the file, so it replays alone; a second switch is refused, as is one in a
    // scenario without a model.
    let dir = scratch("fork", "fixture");
    let second = generic_parent(&dir);
    std::fs::write(
        dir.join("other.jsonl"),
        "{\"simtape_llm\": 1}\n{\"match\": {\"last_tool_result\": {\"contains\": \"5\"}}, \
         \"response\": {\"text\": \"2 + 3 = 6, says the other model.\"}}\n",
    )
    .unwrap();
    let at = second.to_string();
    let shown = fork(
        &dir,
        &[
            "parent.tape",
            "--at",
            &at,
            "--seed",
            "5",
            "--fixture",
            "other.jsonl",
            "--tape",
            "child.tape",
        ],
    );
    assert!(
        shown.contains("the child's calls from call 2 on are answered by other.jsonl"),
        "{shown}"
    );
    assert!(
        shown.contains("child: fail: answer: expected to contain \"= 5\""),
        "{shown}"
    );
    switched_at_the_second_call(&dir, second, "child.tape", "says the other model");
    expect(
        simtape().current_dir(&dir).args([
            "fork",
            "child.tape",
            "--at",
            &at,
            "--seed",
            "6",
            "--fixture",
            "other.jsonl",
        ]),
        2,
        "already hands its model over at call 2 ([llm.handover])",
    );
    std::fs::write(dir.join("bad.jsonl"), "not a fixture\n").unwrap();
    expect(
        simtape().current_dir(&dir).args([
            "fork",
            "parent.tape",
            "--at",
            &at,
            "--seed",
            "6",
            "--fixture",
            "bad.jsonl",
        ]),
        2,
        "--fixture bad.jsonl:",
    );
    let output = run_seed(&dir, &repo().join("scenarios/hello.toml"), 0, "hello.tape");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    expect(
        simtape().current_dir(&dir).args([
            "fork",
            "hello.tape",
            "--at",
            "1",
            "--seed",
            "6",
            "--fixture",
            "other.jsonl",
        ]),
        2,
        "hello.tape has no [llm]",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fork_onto_a_real_provider_records_from_the_branch_and_replays_without_it() {
    // Goal: `fork --model` records the calls from the branch point on from a provider (aimock
    // on loopback standing in for it) into a fixture beside the child's tape; with the
    // provider gone, the child's tape replays alone.
    let Some((provider, port)) = crate::agents::aimock() else {
        return;
    };
    let dir = scratch("fork", "model");
    let second = generic_parent(&dir);
    let upstream = format!("http://127.0.0.1:{port}/v1");
    let output = simtape()
        .current_dir(&dir)
        .args(["fork", "parent.tape", "--at", &second.to_string()])
        .args([
            "--seed",
            "5",
            "--model",
            "openai-chat",
            "--upstream",
            &upstream,
        ])
        .args(["--tape", "child.tape"])
        .env("OPENAI_API_KEY", "test-key")
        .output()
        .unwrap();
    drop(provider);
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("from call 2 on are recorded from openai-chat into child.llm.jsonl"),
        "{shown}"
    );
    let recorded = std::fs::read_to_string(dir.join("child.llm.jsonl")).unwrap();
    assert_eq!(
        recorded.matches("says the recorded model").count(),
        1,
        "only the call after the branch is recorded: {recorded}"
    );
    switched_at_the_second_call(&dir, second, "child.tape", "says the recorded model");
    let _ = std::fs::remove_dir_all(&dir);
}
