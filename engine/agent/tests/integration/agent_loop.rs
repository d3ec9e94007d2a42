//! The agent loop end to end: turns, tools, answers, limits.

use serde_json::json;
use simtape_agent::{Check, FsState, TextMatch, ToolSource};
use simtape_agent::{EndReason, Verdict, NO_VERIFIER, NO_VERIFIER_SAW};

use crate::common::{
    agent, agent_operations, eval, footer_verdict, requests, run, scenario, verify,
};

fn contains(text: &str) -> TextMatch {
    TextMatch {
        contains: Some(text.to_string()),
        ..TextMatch::default()
    }
}

#[test]
fn an_agent_reads_edits_and_answers_and_passes() {
    // Goal: the whole loop (model → tool → result → model) over the overlay, judged by an fs,
    // an answer and a tool_called verifier, with every step on the tape.
    let checks = vec![
        verify(
            "renamed",
            10,
            Check::Fs {
                path: "src/lib.rs".into(),
                state: FsState::Modified,
                content: contains("pub fn new_name()"),
            },
        ),
        verify("answer", 11, Check::Answer(contains("done"))),
        verify(
            "edited with edit_file",
            12,
            Check::ToolCalled {
                tool: "edit_file".into(),
                args: Some(json!({"path": "src/lib.rs", "new": "new_name"})),
                called: true,
            },
        ),
    ];
    let scenario = eval(
        scenario("edit.jsonl", ""),
        Some(agent(vec![ToolSource::Fs])),
        checks,
    );
    let report = run(&scenario, 7);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.verifiers);
    assert_eq!(footer_verdict(&report), "pass");
    assert!(report.verifiers.iter().all(|v| v.held));
    assert_eq!(report.verifiers[2].saw, "found 1 matching call(s)");
    let transcript = report.transcript.as_ref().unwrap();
    assert_eq!(transcript.end, Some(EndReason::FinalAnswer));
    assert_eq!(
        transcript.answer.as_deref(),
        Some("Renamed old_name to new_name: done.")
    );
    assert_eq!(transcript.turns.len(), 3);
    let read = &transcript.turns[0].tool_calls[0];
    assert_eq!((read.name.as_str(), read.ok), ("read_file", true));
    assert_eq!(read.result, "pub fn old_name() -> u32 {\n    1\n}\n");
    assert_eq!(
        transcript.turns[1].tool_calls[0].result,
        "edited src/lib.rs"
    );
    let diff = report.run.fs_diff.as_ref().unwrap();
    assert_eq!(
        diff.modified[0].after,
        b"pub fn new_name() -> u32 {\n    1\n}\n"
    );
    assert_eq!(
        agent_operations(&report),
        [
            "start", "turn", "call", "result", "turn", "call", "result", "turn", "end", "verifier",
            "verifier", "verifier"
        ]
    );
    // The third model call holds the whole conversation (system, task, two rounds); its
    // record carries only the round added since the second call, and the tools only the
    // first call's does. (Tape bodies are MessagePack with structs as arrays: a request
    // record is [model, scope, messages, kept, new, tools_digest, tools], a message
    // [role, content, …].)
    let model_calls: Vec<_> = requests(&report)
        .into_iter()
        .filter(|r| r.actor == "llm")
        .collect();
    assert_eq!(model_calls.len(), 3);
    let third = &model_calls[2].body;
    assert_eq!((third[2].as_u64(), third[3].as_u64()), (Some(6), Some(4)));
    let new = third[4].as_array().unwrap();
    let roles: Vec<&str> = new.iter().map(|m| m[0].as_str().unwrap()).collect();
    assert_eq!(roles, ["assistant", "tool"]);
    assert!(third[6].is_null());
    assert_eq!(model_calls[0].body[6].as_array().unwrap().len(), 8);
}

#[test]
fn unknown_tools_and_invalid_arguments_go_back_to_the_model() {
    // Goal: harness-level mistakes are tool results the model can read and recover from.
    let checks = vec![verify("answer", 1, Check::Answer(contains("draft")))];
    let scenario = eval(
        scenario("recover.jsonl", ""),
        Some(agent(vec![ToolSource::Fs])),
        checks,
    );
    let report = run(&scenario, 1);
    assert_eq!(report.verdict, Verdict::Pass, "{:?}", report.verifiers);
    let transcript = report.transcript.unwrap();
    let first = &transcript.turns[0].tool_calls;
    assert_eq!(
        (first[0].ok, first[0].result.as_str()),
        (false, "error: unknown tool \"frobnicate\"")
    );
    assert_eq!(
        (first[1].ok, first[1].result.as_str()),
        (
            false,
            "error: invalid arguments: argument \"path\" must be a string, found an integer"
        )
    );
    assert_eq!(transcript.turns[1].tool_calls[0].result, "draft\n");
    assert_eq!(
        transcript.answer.as_deref(),
        Some("The notes say draft: done.")
    );
}

#[test]
fn max_turns_ends_the_agent_and_the_answer_verifier_says_why() {
    // Goal: a model that never answers stops after max_turns model calls; verifiers still run.
    let mut spec = agent(vec![ToolSource::Fs]);
    spec.max_turns = 3;
    let checks = vec![verify("answer", 4, Check::Answer(contains("done")))];
    let scenario = eval(scenario("loop.jsonl", ""), Some(spec), checks);
    let report = run(&scenario, 0);
    let transcript = report.transcript.as_ref().unwrap();
    assert_eq!(transcript.end, Some(EndReason::MaxTurns));
    assert_eq!(transcript.turns.len(), 3);
    assert_eq!(
        transcript.turns[2].tool_calls[0].result,
        "config.txt\nnotes.txt\nsrc"
    );
    assert_eq!(
        report.verdict,
        Verdict::Fail {
            verifier: "answer".into(),
            saw: "no final answer (ended: max_turns)".into()
        }
    );
    assert_eq!(
        footer_verdict(&report),
        "fail: answer: no final answer (ended: max_turns)"
    );
}

#[test]
fn a_run_without_verifiers_fails() {
    // Goal: no tests, no pass: a perfect run with nothing to judge it is a FAIL naming "(none)".
    let scenario = eval(scenario("answer.jsonl", ""), Some(agent(vec![])), vec![]);
    let report = run(&scenario, 0);
    assert_eq!(
        report.verdict,
        Verdict::Fail {
            verifier: NO_VERIFIER.into(),
            saw: NO_VERIFIER_SAW.into()
        }
    );
    assert_eq!(
        footer_verdict(&report),
        "fail: (none): no verifier ran: no tests, no pass"
    );
    assert_eq!(
        report.transcript.unwrap().answer.as_deref(),
        Some("Nothing to do: done.")
    );
}

#[test]
fn a_scripted_only_scenario_leaves_the_records_of_scenario_run() {
    // Goal: without an agent and verifiers the harness adds no actor and no record, so the
    // tape matches `Scenario::run`'s record for record (only the footer verdict differs).
    let source = "[[task]]\nname = \"writer\"\nsteps = [{ write = \"out.txt\", content = \"x\" }, { outcome = \"n\", value = 1 }]\n";
    let plain = scenario("answer.jsonl", source);
    let mut builder = plain.builder(3);
    builder.tape_in_memory();
    let expected = plain.run(&mut builder).unwrap();
    let scenario = eval(plain, None, vec![]);
    let report = run(&scenario, 3);
    assert_eq!(report.run.outcomes, vec![("n".to_string(), json!(1))]);
    assert_eq!(report.run.summary.records, expected.summary.records);
    assert_eq!(report.run.summary.fingerprint, expected.summary.fingerprint);
    assert!(report.transcript.is_none());
}
