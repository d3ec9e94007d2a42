//! Each verifier kind, holding and failing, with what it saw.

use serde_json::json;
use simtape_agent::{Check, FsState, Pattern, TextMatch, ToolSource, VerifySpec};
use simtape_agent::{Verdict, VerifierResult};

use crate::common::{agent, agent_operations, eval, run, scenario, verify};

/// Scripted tasks beside the agent: a report file added, the notes changed, an outcome.
const TASKS: &str = r#"
[process]
tape = "process/gate.jsonl"
programs = { make = "replay" }

[[task]]
name = "worker"
steps = [
  { mkdir = "out" },
  { write = "out/report.txt", content = "total: 3\n" },
  { append = "notes.txt", content = "more\n" },
  { outcome = "count", value = 3 },
]
"#;

fn text(equals: Option<&str>, contains: Option<&str>, matches: Option<&str>) -> TextMatch {
    TextMatch {
        equals: equals.map(String::from),
        contains: contains.map(String::from),
        excludes: None,
        matches: matches.map(|source| Pattern::new(source).unwrap()),
    }
}

fn fs(path: &str, state: FsState, content: TextMatch) -> Check {
    Check::Fs {
        path: path.into(),
        state,
        content,
    }
}

fn gate(args: &[&str], exit_code: i32) -> Check {
    Check::Gate {
        program: "make".into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        exit_code,
    }
}

fn tool_called(tool: &str, args: Option<serde_json::Value>, called: bool) -> Check {
    Check::ToolCalled {
        tool: tool.into(),
        args,
        called,
    }
}

fn checks() -> Vec<VerifySpec> {
    let none = TextMatch::default();
    let cases = vec![
        (
            "added",
            fs(
                "out/report.txt",
                FsState::Added,
                text(None, Some("total: 3"), None),
            ),
        ),
        (
            "modified",
            fs(
                "notes.txt",
                FsState::Modified,
                text(Some("draft\nmore\n"), None, None),
            ),
        ),
        (
            "not modified",
            fs("src/lib.rs", FsState::Modified, none.clone()),
        ),
        (
            "wrong content",
            fs(
                "out/report.txt",
                FsState::Exists,
                text(Some("total: 4\n"), None, None),
            ),
        ),
        (
            "pattern",
            fs(
                "out/report.txt",
                FsState::Added,
                text(None, None, Some("^total: [0-9]+\n$")),
            ),
        ),
        (
            "pattern fails",
            fs(
                "notes.txt",
                FsState::Exists,
                text(None, None, Some("^done")),
            ),
        ),
        ("absent", fs("missing.txt", FsState::Absent, none.clone())),
        ("exists", fs("missing.txt", FsState::Exists, none.clone())),
        (
            "unchanged",
            fs("./src/lib.rs", FsState::Unchanged, none.clone()),
        ),
        (
            "unchanged, misspelt",
            fs("src/lib.rs~", FsState::Unchanged, none.clone()),
        ),
        ("answer", Check::Answer(text(None, Some("done"), None))),
        (
            "answer fails",
            Check::Answer(text(None, Some("finished"), None)),
        ),
        ("never read", tool_called("read_file", None, false)),
        ("read", tool_called("read_file", None, true)),
        (
            "listed root",
            tool_called("list_dir", Some(json!({"path": "."})), true),
        ),
        (
            "listed src",
            tool_called("list_dir", Some(json!({"path": "src"})), true),
        ),
        ("never listed", tool_called("list_dir", None, false)),
        ("never ran", tool_called("run", None, false)),
        ("tests pass", gate(&["test"], 0)),
        ("lint clean", gate(&["lint"], 0)),
        (
            "count",
            Check::Outcome {
                name: "count".into(),
                value: json!(3),
            },
        ),
        (
            "count wrong",
            Check::Outcome {
                name: "count".into(),
                value: json!(4),
            },
        ),
        (
            "no such outcome",
            Check::Outcome {
                name: "total".into(),
                value: json!(1),
            },
        ),
    ];
    cases
        .into_iter()
        .enumerate()
        .map(|(index, (name, check))| verify(name, 100 + index as u64, check))
        .collect()
}

/// The one turn of `listing.jsonl`-like behaviour comes from the loop fixture, capped at one.
fn results() -> (Verdict, Vec<VerifierResult>, Vec<String>) {
    let mut spec = agent(vec![ToolSource::Fs]);
    spec.max_turns = 1;
    let scenario = eval(scenario("loop.jsonl", TASKS), Some(spec), checks());
    let report = run(&scenario, 0);
    let operations = agent_operations(&report);
    (report.verdict, report.verifiers, operations)
}

#[test]
fn every_verifier_kind_holds_or_fails_with_what_it_saw() {
    // Goal: the wording of each check, held or not, in file order, with its line.
    let (verdict, results, operations) = results();
    let saw: Vec<(&str, bool, &str)> = results
        .iter()
        .map(|r| (r.name.as_str(), r.held, r.saw.as_str()))
        .collect();
    let expected = [
        ("added", true, "found added, content as expected"),
        ("modified", true, "found modified, content as expected"),
        ("not modified", false, "expected modified, found unchanged"),
        ("wrong content", false, "content expected \"total: 4\\n\", found \"total: 3\\n\""),
        ("pattern", true, "found added, content as expected"),
        ("pattern fails", false, "content expected to match /^done/, found \"draft\\nmore\\n\""),
        ("absent", true, "found absent"),
        ("exists", false, "expected exists, found absent"),
        ("unchanged", true, "found unchanged"),
        (
            "unchanged, misspelt",
            false,
            "expected unchanged, found absent (the path exists neither before nor after the run)",
        ),
        ("answer", false, "no final answer (ended: max_turns)"),
        ("answer fails", false, "no final answer (ended: max_turns)"),
        ("never read", true, "found no call"),
        ("read", false, "expected a call, found none"),
        ("listed root", true, "found 1 matching call(s)"),
        (
            "listed src",
            false,
            "expected a call with arguments {\"path\":\"src\"}, found 1 call(s), none matching (first arguments {\"path\":\".\"})",
        ),
        ("never listed", false, "expected no call, found 1 (first arguments {\"path\":\".\"})"),
        (
            "never ran",
            false,
            "no tool named \"run\" is offered to the agent (tools: read_file, write_file, append_file, edit_file, list_dir, delete_file, rename, make_dir)",
        ),
        ("tests pass", true, "exit code 0"),
        ("lint clean", false, "expected exit code 0, found 2 (stderr \"lint: 3 warnings\")"),
        ("count", true, "found 3"),
        ("count wrong", false, "expected 4, found 3"),
        ("no such outcome", false, "expected 1, found no outcome \"total\""),
    ];
    assert_eq!(saw, expected);
    assert_eq!(results[2].line, 102);
    assert_eq!(
        verdict,
        Verdict::Fail {
            verifier: "not modified".into(),
            saw: "expected modified, found unchanged".into()
        }
    );
    assert_eq!(
        operations.iter().filter(|op| *op == "verifier").count(),
        expected.len()
    );
}

#[test]
fn an_answer_verifier_reads_the_final_answer() {
    // Goal: answers are matched in full and quoted by their head when they fail.
    let checks = vec![
        verify("done", 1, Check::Answer(text(None, Some("done"), None))),
        verify(
            "exact",
            2,
            Check::Answer(text(Some("Nothing to do."), None, None)),
        ),
    ];
    let scenario = eval(scenario("answer.jsonl", ""), Some(agent(vec![])), checks);
    let report = run(&scenario, 0);
    assert_eq!(report.verifiers[0].saw, "found \"Nothing to do: done.\"");
    assert_eq!(
        report.verdict.to_string(),
        "fail: exact: expected \"Nothing to do.\", found \"Nothing to do: done.\""
    );
}

#[test]
fn gate_commands_run_on_the_tape_after_the_agent() {
    // Goal: a gate is a process call inside the run; its recorded duration is virtual time.
    let checks = vec![verify("tests pass", 1, gate(&["test"], 0))];
    let scenario = eval(scenario("answer.jsonl", TASKS), Some(agent(vec![])), checks);
    let report = run(&scenario, 0);
    assert_eq!(report.verdict, Verdict::Pass);
    // The answer takes 100 ms; the gate's recorded run 2 s.
    assert_eq!(report.run.summary.end_ns, 2_100_000_000);
}
