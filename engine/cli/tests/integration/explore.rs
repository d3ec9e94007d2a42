//! `simtape explore`: swarm runs and forks of runs that reached something new find a failure
//! the scenario's sweep does not show; the same exploration seed gives the same report at any
//! `--jobs`; what it finds replays alone, is shrunk and stored in the failure database, and a
//! later sweep replays it through its decisions, never as a plain seed.

use crate::common::{check_doc_block, expect, load_json, repo, scratch, simtape, text};

#[test]
fn explore_finds_a_failure_the_sweep_does_not_and_reports_it_the_same_at_any_jobs() {
    let dir = scratch("explore", "report");
    let explore = |jobs: &str, json: bool| {
        let mut command = simtape();
        command.current_dir(repo()).args([
            "explore",
            "scenarios/ticket-retry.toml",
            "--runs",
            "64",
            "--jobs",
            jobs,
        ]);
        if json {
            command.arg("--json");
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", text(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let shown = explore("1", false);
    check_doc_block(
        "docs/exploring.md",
        "It prints each new failure cluster",
        &shown,
    );
    assert_eq!(explore("2", false), shown, "the same report at --jobs 2");
    let report: serde_json::Value = serde_json::from_str(&explore("2", true)).unwrap();
    assert_eq!(report["runs"], 64);
    assert_eq!(report["strategy"], "guided");
    assert!(report["forks"].as_u64().unwrap() > 0, "{report}");
    let first = &report["clusters"][0];
    assert_eq!(first["cluster"]["kind"], "llm_unmatched", "{report}");
    assert_eq!(first["origin"]["kind"], "swarm", "{report}");
    // The coverage curve grows at each run that reached something new.
    let curve = report["coverage"].as_array().unwrap();
    assert!(curve.len() >= 3, "{report}");
    assert!(curve
        .windows(2)
        .all(|w| w[0]["features"].as_u64() < w[1]["features"].as_u64()));
    // The scenario's own sweep of the same number of seeds passes every one.
    let output = simtape()
        .current_dir(repo())
        .args(["sweep", "scenarios/ticket-retry.toml", "--seeds", "0..64"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_explore_finds_replays_alone_is_shrunk_and_a_sweep_keeps_it() {
    let dir = scratch("explore", "keep");
    let out = dir.join("out");
    let output = simtape()
        .current_dir(repo())
        .args([
            "explore",
            "scenarios/ticket-retry.toml",
            "--runs",
            "16",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    let entries: Vec<_> = std::fs::read_dir(out.join("failures.db/ticket-retry"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json") && !p.to_string_lossy().contains(".seed-")
        })
        .collect();
    assert_eq!(entries.len(), 1, "{shown}");
    let entry = load_json(&entries[0]);
    assert_eq!(entry["explored"], true);
    assert_eq!(entry["status"], "failing");
    assert!(entry["shrunk"]["decisions"].is_string(), "{entry}");
    let id = entries[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let found = out.join("ticket-retry").join(&id);
    // The first failing run replays alone, from anywhere.
    let output = simtape()
        .current_dir(&dir)
        .arg("replay")
        .arg(found.join("found.tape"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    // Its shrink keeps the swarm setting the failure needs and reproduces the failure.
    let shrunk = load_json(&found.join("shrink/decisions.json"));
    let names: Vec<&str> = shrunk["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("swarm:mcp:tickets#")),
        "{names:?}"
    );
    let seed = entry["seeds"][0].as_u64().unwrap().to_string();
    let output = simtape()
        .current_dir(repo())
        .args([
            "run",
            "scenarios/ticket-retry.toml",
            "--seed",
            &seed,
            "--decisions",
        ])
        .arg(found.join("shrink/decisions.json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "an ERROR: {}", text(&output));
    // A later sweep replays it through its shrunk decisions, not as a plain seed, and
    // keeps it failing.
    let output = simtape()
        .current_dir(repo())
        .args([
            "sweep",
            "scenarios/ticket-retry.toml",
            "--seeds",
            "0..4",
            "--failures",
        ])
        .arg(out.join("failures.db"))
        .output()
        .unwrap();
    let swept = text(&output);
    assert_eq!(output.status.code(), Some(0), "{swept}");
    assert!(swept.contains("still fails"), "{swept}");
    assert!(
        !swept.contains("known failure seed(s) first"),
        "the explored seed is not replayed plainly: {swept}"
    );
    assert_eq!(load_json(&entries[0])["status"], "failing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explore_refuses_what_it_cannot_search() {
    expect(
        simtape()
            .current_dir(repo())
            .args(["explore", "scenarios/deadlock.toml"]),
        2,
        "nothing to explore: the scenario draws nothing",
    );
    expect(
        simtape().current_dir(repo()).args([
            "explore",
            "scenarios/ticket-retry.toml",
            "--budget",
            "0s",
        ]),
        2,
        "a budget of 0 runs nothing",
    );
    expect(
        simtape().current_dir(repo()).args([
            "explore",
            "scenarios/ticket-retry.toml",
            "--strategy",
            "random",
        ]),
        2,
        "expected one of uniform, swarm, guided",
    );
}

#[test]
fn explore_writes_the_sweep_report_formats_one_entry_per_cluster() {
    // Goal: `--report` renders what explore found in the sweep's formats: JUnit with one failed
    // test case per cluster (runs to first failure in its body), CSV and JSON lines with one
    // row per cluster, JSON the whole report; `--report-out` writes it and keeps the text.
    let dir = scratch("explore", "formats");
    let scenario = repo().join("scenarios/ticket-retry.toml");
    let report = |format: &str| {
        let output = simtape()
            .arg("explore")
            .arg(&scenario)
            .args(["--runs", "40", "--jobs", "1", "--report", format])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", text(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let clusters = json["clusters"].as_array().unwrap();
    assert!(!clusters.is_empty(), "{json}");
    let junit = report("junit");
    assert!(
        junit.contains(&format!(
            "<testsuite name=\"ticket-retry\" tests=\"{n}\" failures=\"{n}\"",
            n = clusters.len()
        )),
        "{junit}"
    );
    assert!(
        junit.contains(&format!(
            "runs to first failure: {}",
            clusters[0]["first_run"]
        )),
        "{junit}"
    );
    let csv = report("csv");
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        "scenario,cluster,verdict,reason,first_run,runs,seed,origin"
    );
    assert_eq!(rows.len(), clusters.len() + 1, "{csv}");
    assert!(rows[1].starts_with("ticket-retry,"), "{csv}");
    let jsonl = report("jsonl");
    assert_eq!(jsonl.lines().count(), clusters.len(), "{jsonl}");
    let out = dir.join("r/explore.xml");
    let output = simtape()
        .arg("explore")
        .arg(&scenario)
        .args([
            "--runs",
            "40",
            "--jobs",
            "1",
            "--report",
            "junit",
            "--report-out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let shown = text(&output);
    assert!(
        shown.contains("failure clusters, by runs to first failure"),
        "{shown}"
    );
    assert!(shown.contains("report: "), "{shown}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), junit);
    let _ = std::fs::remove_dir_all(&dir);
}
