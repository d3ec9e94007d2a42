//! Model retries: back-off in virtual time, retry hints, the run-wide budget.

use simtape_agent::{Check, TextMatch};
use simtape_agent::{EndReason, Verdict};

use crate::common::{agent, agent_operations, eval, requests, run, scenario, verify};

fn answer_contains(text: &str) -> Check {
    Check::Answer(TextMatch {
        contains: Some(text.to_string()),
        ..TextMatch::default()
    })
}

#[test]
fn a_429_is_retried_after_its_retry_hint_in_virtual_time() {
    // Goal: the retry waits max(hint, back-off) = 5 s of virtual time, then succeeds.
    let checks = vec![verify("answer", 1, answer_contains("done"))];
    let scenario = eval(scenario("retry.jsonl", ""), Some(agent(vec![])), checks);
    let report = run(&scenario, 0);
    assert_eq!(report.verdict, Verdict::Pass);
    let model_calls: Vec<u64> = requests(&report)
        .into_iter()
        .filter(|r| r.actor == "llm")
        .map(|r| r.t_ns)
        .collect();
    // The 429 takes 100 ms, the back-off 5 s; the retry then takes 100 ms.
    assert_eq!(model_calls, [0, 5_100_000_000]);
    assert_eq!(report.run.summary.end_ns, 5_200_000_000);
    let retry = requests(&report)
        .into_iter()
        .find(|r| r.operation == "retry")
        .unwrap();
    // [what, attempt, wait_ms, error]
    assert_eq!(retry.body["retry"][1], 1);
    assert_eq!(retry.body["retry"][2], 5000);
    assert_eq!(report.transcript.unwrap().retries, 1);
}

#[test]
fn a_spent_retry_budget_ends_the_agent_and_verifiers_still_judge() {
    // Goal: back-off doubles (100 ms, 200 ms), the third failure finds the budget of two
    // spent; the agent ends with `retry_budget_spent` and the answer verifier fails.
    let mut spec = agent(vec![]);
    spec.retry_budget = 2;
    let checks = vec![verify("answer", 1, answer_contains("done"))];
    let scenario = eval(scenario("overloaded.jsonl", ""), Some(spec), checks);
    let report = run(&scenario, 0);
    let transcript = report.transcript.as_ref().unwrap();
    assert_eq!(transcript.end, Some(EndReason::RetryBudgetSpent));
    assert_eq!(transcript.retries, 2);
    let model_calls: Vec<u64> = requests(&report)
        .into_iter()
        .filter(|r| r.actor == "llm")
        .map(|r| r.t_ns)
        .collect();
    assert_eq!(model_calls, [0, 200_000_000, 500_000_000]);
    assert_eq!(report.run.summary.end_ns, 600_000_000);
    assert_eq!(
        report.verdict,
        Verdict::Fail {
            verifier: "answer".into(),
            saw: "no final answer (ended: retry_budget_spent)".into()
        }
    );
    assert_eq!(
        agent_operations(&report),
        ["start", "turn", "retry", "retry", "end", "verifier"]
    );
}
