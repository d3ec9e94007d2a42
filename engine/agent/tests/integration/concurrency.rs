//! Concurrent tool calls: one task per call, the seed's latencies decide the interleaving.

use simtape_agent::EvalScenario;
use simtape_agent::{Check, FsState, TextMatch, ToolSource};

use crate::common::{agent, agent_operations, eval, run, scenario, tape, verify};

fn race(tool_concurrency: u32) -> EvalScenario {
    let mut spec = agent(vec![ToolSource::Fs]);
    spec.tool_concurrency = tool_concurrency;
    let both = TextMatch {
        contains: Some("alpha = 10\nbeta = 20".into()),
        ..TextMatch::default()
    };
    let checks = vec![verify(
        "both edits landed",
        1,
        Check::Fs {
            path: "config.txt".into(),
            state: FsState::Modified,
            content: both,
        },
    )];
    eval(scenario("race.jsonl", ""), Some(spec), checks)
}

/// Returns the final text of config.txt.
fn config(report: &simtape_agent::EvalReport) -> String {
    let diff = report.run.fs_diff.as_ref().unwrap();
    String::from_utf8(diff.modified[0].after.clone()).unwrap()
}

#[test]
fn concurrent_edits_race_and_the_seed_decides_the_winner() {
    // Goal: two edit_file calls of one turn run concurrently (read, then write, not atomic),
    // so one update is lost and which one depends on the seed's fs latencies; the same seed
    // gives the same tape bytes.
    let scenario = race(2);
    let mut winners = std::collections::BTreeSet::new();
    for seed in 0..32 {
        let report = run(&scenario, seed);
        let text = config(&report);
        assert!(
            text == "alpha = 10\nbeta = 2\n" || text == "alpha = 1\nbeta = 20\n",
            "{text:?}"
        );
        assert_eq!(report.verdict.label(), "fail");
        winners.insert(text);
        assert_eq!(
            agent_operations(&report)[2..6],
            ["call", "call", "result", "result"],
            "both calls start before either ends"
        );
        if seed < 4 {
            let again = run(&scenario, seed);
            assert_eq!(
                tape(&report),
                tape(&again),
                "seed {seed} is not deterministic"
            );
        }
    }
    assert_eq!(
        winners.len(),
        2,
        "both interleavings occur across seeds: {winners:?}"
    );
}

#[test]
fn tool_concurrency_one_runs_calls_in_order() {
    // Goal: with one slot the calls run one after the other, so no update is lost.
    let scenario = race(1);
    for seed in 0..8 {
        let report = run(&scenario, seed);
        assert_eq!(config(&report), "alpha = 10\nbeta = 20\n");
        assert_eq!(report.verdict.label(), "pass");
        assert_eq!(
            agent_operations(&report)[2..6],
            ["call", "result", "call", "result"]
        );
    }
}

#[test]
fn call_tasks_are_named_after_their_calls() {
    // Goal: each call is its own simulation task, named by tool and call id.
    let report = run(&race(2), 0);
    let mut reader = simtape::tape::TapeReader::new(tape(&report)).unwrap();
    let mut spawned = Vec::new();
    while let Some(record) = reader.next_record().unwrap() {
        if record.kind == simtape::tape::RecordKind::Spawn {
            let payload = reader.resolve(&record).unwrap();
            let json = simtape::tape::payload_to_json(&payload).unwrap();
            let name = json[1].as_str().unwrap();
            if name.starts_with("tool ") {
                spawned.push(name.to_string());
            }
        }
    }
    assert_eq!(spawned, ["tool edit_file a", "tool edit_file b"]);
}

#[test]
fn at_most_tool_concurrency_calls_run_at_once() {
    // Goal: three calls with two slots: the third starts only when one of the first two ends,
    // and every seed keeps at most two in flight.
    let mut spec = agent(vec![ToolSource::Fs]);
    spec.tool_concurrency = 2;
    let checks = vec![verify(
        "c written",
        1,
        Check::Fs {
            path: "c.txt".into(),
            state: FsState::Added,
            content: TextMatch::default(),
        },
    )];
    let scenario = eval(scenario("three.jsonl", ""), Some(spec), checks);
    for seed in 0..16 {
        let report = run(&scenario, seed);
        assert_eq!(report.verdict.label(), "pass", "seed {seed}");
        let operations = agent_operations(&report);
        let mut running = 0;
        let mut most = 0;
        for operation in &operations {
            match operation.as_str() {
                "call" => running += 1,
                "result" => running -= 1,
                _ => {}
            }
            most = most.max(running);
        }
        assert_eq!(most, 2, "seed {seed}: {operations:?}");
        assert_eq!(operations[2..5], ["call", "call", "result"]);
    }
}
