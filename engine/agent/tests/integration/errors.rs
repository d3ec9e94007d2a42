//! What stops a run: ERROR verdicts name it (BLOCKED ones when a policy stopped it), and no
//! verifier's word counts.

use simtape_agent::{Check, FsState, TextMatch, ToolSource};
use simtape_agent::{EvalFailure, Verdict};

use crate::common::{agent, eval, footer_verdict, run, scenario, verify};

fn any_answer() -> Vec<simtape_agent::VerifySpec> {
    vec![verify("answer", 1, Check::Answer(TextMatch::default()))]
}

#[test]
fn an_unmatched_model_call_is_an_error() {
    // Goal: a replay that cannot answer stops the run; it is never handed to the model.
    let scenario = eval(
        scenario("unmatched.jsonl", ""),
        Some(agent(vec![])),
        any_answer(),
    );
    let report = run(&scenario, 0);
    let failure = report.failure.as_ref().expect("a failure");
    assert_eq!(failure.kind(), "llm_unmatched");
    let Verdict::Error { reason } = &report.verdict else {
        panic!("expected an error, got {}", report.verdict);
    };
    assert!(
        reason.starts_with("model call of turn 1: no LLM fixture entry matched request sha256:"),
        "{reason}"
    );
    assert!(report.verifiers.is_empty());
    assert_eq!(footer_verdict(&report), report.verdict.to_string());
}

#[test]
fn an_fs_escape_is_blocked() {
    // Goal: a tool call that leaves the overlay root stops the run, naming the call; a policy
    // stopped it, so the verdict is blocked (on the tape's footer too), not error.
    let scenario = eval(
        scenario("escape.jsonl", ""),
        Some(agent(vec![ToolSource::Fs])),
        any_answer(),
    );
    let report = run(&scenario, 0);
    assert!(matches!(
        report.failure.as_deref(),
        Some(EvalFailure::Agent(_))
    ));
    assert_eq!(report.failure.as_ref().unwrap().kind(), "fs_escape");
    assert_eq!(
        report.verdict.to_string(),
        "blocked: tool call call_1_0 (read_file): path \"../outside.txt\" escapes the overlay root"
    );
    assert!(matches!(&report.verdict, Verdict::Blocked { policy, .. } if policy == "fs_escape"));
    assert_eq!(footer_verdict(&report), report.verdict.to_string());
    let transcript = report.transcript.unwrap();
    assert_eq!(transcript.end, None, "the agent never ended");
    assert_eq!(transcript.turns[0].tool_calls[0].name, "read_file");
}

#[test]
fn a_failed_scripted_step_is_an_error() {
    // Goal: the scripted tasks run beside the agent; their failure stops the run too.
    let tasks = "[[task]]\nname = \"reader\"\nsteps = [{ read = \"missing.txt\" }]\n";
    let scenario = eval(
        scenario("answer.jsonl", tasks),
        Some(agent(vec![])),
        any_answer(),
    );
    let report = run(&scenario, 0);
    assert_eq!(report.failure.as_ref().unwrap().kind(), "step_failed");
    assert!(report
        .verdict
        .to_string()
        .starts_with("error: task \"reader\" failed at step task[0].steps[0]"));
}

#[test]
fn a_scripted_step_a_policy_refuses_is_blocked() {
    // Goal: a scripted step's denied connection or escaping path is stopped by the same
    // policies as the agent's calls: the verdict is blocked by that policy (exit 4), not an
    // engine error, and the reason still names the task and step.
    let cases = [
        (
            "[network]\nallow = [\"api.github.com\"]\n[[task]]\nname = \"uploader\"\nsteps = [{ connect = \"pastebin.com:443\" }]\n",
            "net_denied",
            "task \"uploader\" failed at step task[0].steps[0] (`connect`): connection to pastebin.com:443 denied",
        ),
        (
            "[[task]]\nname = \"reader\"\nsteps = [{ read = \"../outside.txt\" }]\n",
            "fs_escape",
            "task \"reader\" failed at step task[0].steps[0] (`read`): path \"../outside.txt\" escapes the overlay root",
        ),
    ];
    for (tasks, expected_policy, expected_reason) in cases {
        let scenario = eval(
            scenario("answer.jsonl", tasks),
            Some(agent(vec![])),
            any_answer(),
        );
        let report = run(&scenario, 0);
        let Verdict::Blocked { policy, reason } = &report.verdict else {
            panic!("expected blocked, got {}", report.verdict);
        };
        assert_eq!(policy, expected_policy);
        assert!(reason.starts_with(expected_reason), "{reason}");
        assert_eq!(footer_verdict(&report), report.verdict.to_string());
        assert!(report.verifiers.is_empty(), "no verifier's word counts");
    }
}

#[test]
fn a_limit_is_an_error_with_the_transcript_so_far() {
    // Goal: the engine's own stops (here virtual time) are errors; the report keeps what the
    // agent did before.
    let source = "[limits]\nvirtual_time_max_ns = \"150ms\"\n";
    let scenario = eval(
        scenario("loop.jsonl", source),
        Some(agent(vec![ToolSource::Fs])),
        any_answer(),
    );
    let report = run(&scenario, 0);
    assert_eq!(report.failure.as_ref().unwrap().kind(), "limit_exceeded");
    assert!(
        report.run.summary.records > 0,
        "the tape's records are counted"
    );
    assert_eq!(report.verdict.label(), "error");
    assert_eq!(report.transcript.as_ref().unwrap().turns.len(), 1);
    assert_eq!(footer_verdict(&report), report.verdict.to_string());
}

#[test]
fn an_fs_verifier_that_meets_an_escape_is_blocked() {
    // Goal: a verifier cannot look outside the io boundary either: the run is blocked, where
    // it used to FAIL as if the path were merely wrong.
    let check = Check::Fs {
        path: "../outside.txt".into(),
        state: FsState::Absent,
        content: TextMatch::default(),
    };
    let scenario = eval(
        scenario("answer.jsonl", ""),
        Some(agent(vec![])),
        vec![verify("outside", 1, check)],
    );
    let report = run(&scenario, 0);
    assert_eq!(report.failure.as_ref().unwrap().kind(), "fs_escape");
    assert_eq!(
        report.verdict.to_string(),
        "blocked: verifier \"outside\": path \"../outside.txt\" escapes the overlay root"
    );
}

#[test]
fn a_gate_whose_program_is_hermetic_is_blocked() {
    // Goal: a gate needs a program that `[process]` leaves out: the tool is disabled, the gate
    // cannot say pass or fail, and the run is blocked (`tool_disabled`), not failed.
    let gate = Check::Gate {
        program: "cargo".into(),
        args: vec!["test".into()],
        exit_code: 0,
    };
    let scenario = eval(
        scenario("answer.jsonl", "[process]\ndefault = \"hermetic\"\n"),
        Some(agent(vec![])),
        vec![verify("tests pass", 1, gate)],
    );
    let report = run(&scenario, 0);
    assert_eq!(report.verdict.label(), "blocked");
    let Verdict::Blocked { policy, reason } = &report.verdict else {
        panic!("expected blocked, got {}", report.verdict);
    };
    assert_eq!(policy, "tool_disabled");
    assert!(reason.starts_with("verifier \"tests pass\": "), "{reason}");
    assert!(report.verifiers.is_empty(), "no verifier's word counts");
}
