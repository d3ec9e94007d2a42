//! The failure memory and `simtape report diff`, end to end (docs/failures.md): a sweep's
//! `--out` keeps its failure clusters, the next sweep and `simtape ci --failures` replay them
//! first, and two sweeps of the same seeds, before and after raising the agent's retry
//! budget, diff into resolved clusters and an exact paired test.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{check_doc_block, expect, load_json, repo, run_ok, scratch, simtape, text};

/// Copies ticket-retry (its fixture and world) into `dir/scenarios/` with the agent's retry
/// budget set to `budget`; returns the scenario file, relative to `dir`.
fn ticket_retry(dir: &Path, budget: u32) -> PathBuf {
    let scenarios = dir.join("scenarios");
    for sub in ["data/ticket-retry", "worlds"] {
        std::fs::create_dir_all(scenarios.join(sub)).unwrap();
    }
    for file in ["data/ticket-retry/llm.jsonl", "worlds/ticket-tracker.json"] {
        std::fs::copy(repo().join("scenarios").join(file), scenarios.join(file)).unwrap();
    }
    let source = std::fs::read_to_string(repo().join("scenarios/ticket-retry.toml")).unwrap();
    assert!(source.contains("retry_budget = 20\n"));
    let edited = source.replace("retry_budget = 20\n", &format!("retry_budget = {budget}\n"));
    std::fs::write(scenarios.join("ticket-retry.toml"), edited).unwrap();
    PathBuf::from("scenarios/ticket-retry.toml")
}

/// Sweeps ticket-retry at seeds 0..30 from `dir` with `extra` flags.
fn sweep(dir: &Path, jobs: &str, extra: &[&str]) -> Output {
    simtape()
        .current_dir(dir)
        .args([
            "sweep",
            "scenarios/ticket-retry.toml",
            "--seeds",
            "0..30",
            "--jobs",
            jobs,
        ])
        .args(extra)
        .output()
        .unwrap()
}

/// Whether a file of the database is an entry: `<16 hex digits>.json`.
fn is_entry(name: &str) -> bool {
    name.strip_suffix(".json")
        .is_some_and(|id| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Returns the entry files of the database in `db`, sorted.
fn entries(db: &Path) -> Vec<serde_json::Value> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(db.join("ticket-retry"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| is_entry(&p.file_name().unwrap().to_string_lossy()))
        .collect();
    paths.sort();
    paths.iter().map(|p| load_json(p)).collect()
}

#[test]
fn report_diff_names_resolved_clusters_and_prints_the_paired_test() {
    // Goal: two sweeps of seeds 0..30, with retry budgets 2 and 20: the diff names the
    // clusters the higher budget resolved, the pass rates with intervals, and the exact
    // paired test (b = 0, c = 8, p = 2/256) in text, JSON and HTML; reversed, the new
    // clusters make it a finding (exit 1). Different seed sets compare only the common seeds.
    let dir = scratch("failures", "diff");
    ticket_retry(&dir, 2);
    let before = sweep(&dir, "2", &["--report-out", "before.json"]);
    assert_eq!(before.status.code(), Some(1), "{}", text(&before));
    ticket_retry(&dir, 20);
    run_ok(simtape().current_dir(&dir).args([
        "sweep",
        "scenarios/ticket-retry.toml",
        "--seeds",
        "0..30",
        "--report-out",
        "after.json",
    ]));

    let diff = run_ok(simtape().current_dir(&dir).args([
        "report",
        "diff",
        "before.json",
        "after.json",
        "--html",
        "diff.html",
    ]));
    let stdout = String::from_utf8_lossy(&diff.stdout).into_owned();
    assert!(
        stdout.contains("failure clusters: 0 new, 2 resolved, 0 ongoing"),
        "{stdout}"
    );
    assert!(
        stdout.contains("b = 0 passed before and not after, c = 8 failed before and pass after, p = 0.007812: more robust"),
        "{stdout}"
    );
    check_doc_block(
        "docs/failures.md",
        "Raising the retry budget resolves both clusters",
        &stdout,
    );
    let page = std::fs::read_to_string(dir.join("diff.html")).unwrap();
    for needle in [
        "more robust",
        "<b>b = 0</b>",
        "<b>c = 8</b>",
        "resolved",
        "llm_unmatched",
    ] {
        assert!(page.contains(needle), "{needle} in the page");
    }

    let json = run_ok(simtape().current_dir(&dir).args([
        "report",
        "diff",
        "before.json",
        "after.json",
        "--json",
    ]));
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let scenario = &json["scenarios"][0];
    assert_eq!(scenario["paired"]["b"], 0);
    assert_eq!(scenario["paired"]["c"], 8);
    assert_eq!(scenario["paired"]["direction"], "more_robust");
    assert_eq!(scenario["old"]["passed"], 22);
    assert_eq!(scenario["new"]["passed"], 30);
    let statuses: Vec<&str> = scenario["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["resolved", "resolved"]);

    expect(
        simtape()
            .current_dir(&dir)
            .args(["report", "diff", "after.json", "before.json"]),
        1,
        "c = 0 failed before and pass after, p = 0.007812: less robust",
    );

    // A sweep of other seeds: only the common ones are compared, and the diff says so.
    let other = simtape()
        .current_dir(&dir)
        .args([
            "sweep",
            "scenarios/ticket-retry.toml",
            "--seeds",
            "20..40",
            "--report-out",
            "other.json",
        ])
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(0), "{}", text(&other));
    expect(
        simtape()
            .current_dir(&dir)
            .args(["report", "diff", "before.json", "other.json"]),
        0,
        "the seed sets differ: only the common seeds are compared (20 only in old, 10 only in new, left out)",
    );
}

#[test]
fn a_second_sweep_over_the_same_out_replays_known_failures_first() {
    // Goal: the first sweep's --out keeps one entry per cluster with its seeds and the first
    // seed's decisions (which `run --decisions` takes); the second sweep over the same --out
    // replays them first and says they still fail, at --jobs 1 and 2 with the first sweep's
    // report bytes; after the budget is raised they are resolved, and `ci --failures` says
    // so too (still failing: exit 1; resolved: exit 0).
    let dir = scratch("failures", "memory");
    ticket_retry(&dir, 2);
    let first = sweep(&dir, "2", &["--out", "out", "--report-out", "first.json"]);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    let db = dir.join("out/failures.db");
    let listed = entries(&db);
    assert_eq!(listed.len(), 2, "{listed:?}");
    let mut known: Vec<u64> = Vec::new();
    for entry in &listed {
        assert_eq!(entry["format"], "simtape-failure/1");
        assert_eq!(entry["status"], "failing");
        assert_eq!(entry["shrunk"], serde_json::Value::Null);
        known.extend(
            entry["seeds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_u64().unwrap()),
        );
        // The first seed's decisions are its own: run with them, it fails the same way.
        let first_seed = entry["seeds"][0].as_u64().unwrap();
        let decisions = db.join(entry["decisions"].as_str().unwrap());
        expect(
            simtape()
                .current_dir(&dir)
                .args([
                    "run",
                    "scenarios/ticket-retry.toml",
                    "--seed",
                    &first_seed.to_string(),
                ])
                .arg("--decisions")
                .arg(&decisions),
            3,
            entry["cluster"]["reason"].as_str().unwrap(),
        );
    }
    known.sort_unstable();
    assert_eq!(known, [3, 6, 7, 11, 12, 17, 23, 27]);
    // As `simtape shrink` would: the first entry names a shrunk decisions file (here the
    // seed's own decisions, which fail the same way).
    let first_entry = db.join(format!(
        "ticket-retry/{}",
        std::fs::read_dir(db.join("ticket-retry"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| is_entry(n))
            .min()
            .unwrap()
    ));
    let mut entry: serde_json::Value = load_json(&first_entry);
    let shrunk = entry["decisions"]
        .as_str()
        .unwrap()
        .replace(".decisions.json", ".shrunk.json");
    std::fs::copy(
        db.join(entry["decisions"].as_str().unwrap()),
        db.join(&shrunk),
    )
    .unwrap();
    entry["shrunk"] = serde_json::json!({"seed": entry["seeds"][0], "decisions": shrunk});
    std::fs::write(&first_entry, serde_json::to_string_pretty(&entry).unwrap()).unwrap();

    let mut printed = Vec::new();
    for jobs in ["1", "2"] {
        let again = sweep(&dir, jobs, &["--out", "out", "--report-out", "again.json"]);
        printed.push(again.stdout.clone());
        assert_eq!(again.status.code(), Some(1), "{}", text(&again));
        let stdout = String::from_utf8_lossy(&again.stdout);
        assert!(
            stdout.starts_with(
                "known failures (out/failures.db): 2 cluster(s), 8 seed(s) replayed first\n"
            ),
            "{stdout}"
        );
        assert_eq!(
            stdout
                .matches("  still fails     ticket-retry: llm_unmatched")
                .count(),
            2,
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!(
                "(seed {} with out/failures.db/{shrunk}: still fails)",
                entry["seeds"][0]
            )),
            "{stdout}"
        );
        let stderr = String::from_utf8_lossy(&again.stderr);
        assert!(
            stderr.contains("sweep: 8 known failure seed(s) first"),
            "{stderr}"
        );
        assert!(
            std::fs::read(dir.join("again.json")).unwrap()
                == std::fs::read(dir.join("first.json")).unwrap(),
            "--jobs {jobs}: a sweep that replays known failures first reports other bytes"
        );
    }
    assert!(
        printed[0] == printed[1],
        "--jobs 1 and 2 print different known failures or summaries"
    );

    // `ci` over the same database: the known failures still fail, a finding.
    std::fs::create_dir_all(dir.join("tapes")).unwrap();
    let ci = |code: i32, needle: &str| {
        expect(
            simtape().current_dir(&dir).args([
                "ci",
                ".",
                "--bless",
                "--failures",
                "out/failures.db",
            ]),
            code,
            needle,
        )
    };
    ci(1, "ci: 2 known failure(s) still fail");

    ticket_retry(&dir, 20);
    let fixed = sweep(&dir, "2", &["--out", "out", "--report-out", "fixed.json"]);
    assert_eq!(fixed.status.code(), Some(0), "{}", text(&fixed));
    let stdout = String::from_utf8_lossy(&fixed.stdout);
    let known_lines: String = stdout
        .lines()
        .take_while(|l| !l.starts_with("sweep: seeds"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        known_lines.contains("taken on another version of the scenario, not replayed"),
        "{known_lines}"
    );
    assert_eq!(
        known_lines
            .matches("  resolved        ticket-retry")
            .count(),
        2,
        "{stdout}"
    );
    check_doc_block(
        "docs/failures.md",
        "and says what became of each cluster before",
        &known_lines,
    );
    for entry in entries(&db) {
        assert_eq!(entry["status"], "resolved", "{entry}");
    }
    assert_eq!(
        load_json(&first_entry)["shrunk"]["decisions"].as_str(),
        Some(shrunk.as_str()),
        "a sweep keeps what shrink wrote"
    );
    ci(0, "resolved");
}

#[test]
fn a_damaged_entry_or_a_file_that_is_not_a_report_exits_2_naming_it() {
    // Goal: an entry with a bad field stops the sweep (exit 2) naming the file and the
    // field, before any seed runs; `report diff` on a file that is not a sweep report names
    // it.
    let dir = scratch("failures", "bad");
    ticket_retry(&dir, 2);
    let first = sweep(&dir, "2", &["--out", "out", "--report-out", "r.json"]);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    let folder = dir.join("out/failures.db/ticket-retry");
    let entry = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| is_entry(&p.file_name().unwrap().to_string_lossy()))
        .unwrap();
    let good = std::fs::read_to_string(&entry).unwrap();
    std::fs::write(&entry, good.replace("\"failing\"", "\"gone\"")).unwrap();
    let output = sweep(&dir, "2", &["--out", "out"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let shown = text(&output);
    assert!(
        shown.contains(&format!(
            "{}: status: expected \"failing\" or \"resolved\", found \"gone\"",
            Path::new("out/failures.db/ticket-retry")
                .join(entry.file_name().unwrap())
                .display()
        )),
        "{shown}"
    );
    assert!(!shown.contains("run(s) on"), "no seed ran: {shown}");
    std::fs::write(&entry, good.replace("\"seeds\": [", "\"seeds\": [\"x\", ")).unwrap();
    expect(
        simtape().current_dir(&dir).args([
            "sweep",
            "scenarios/ticket-retry.toml",
            "--seeds",
            "0..2",
            "--out",
            "out",
        ]),
        2,
        "seeds: expected 1 to 16 unsigned 64-bit seeds",
    );
    // `shrunk` names its seed and a file inside the database, never a path outside it.
    let outside = "\"shrunk\": {\"seed\": 3, \"decisions\": \"../x.json\"}";
    std::fs::write(&entry, good.replace("\"shrunk\": null", outside)).unwrap();
    expect(
        simtape().current_dir(&dir).args([
            "sweep",
            "scenarios/ticket-retry.toml",
            "--seeds",
            "0..2",
            "--out",
            "out",
        ]),
        2,
        "shrunk: expected null or {seed, decisions}",
    );

    std::fs::write(
        dir.join("not-a-report.json"),
        "{\"format\": \"simtape-failure/1\"}",
    )
    .unwrap();
    expect(
        simtape().current_dir(&dir).args(["report", "diff", "not-a-report.json", "r.json"]),
        2,
        "not-a-report.json: not a sweep report: format \"simtape-failure/1\", expected \"simtape-sweep/1\"",
    );
    std::fs::write(dir.join("not-json.json"), "seeds 0..30").unwrap();
    expect(
        simtape()
            .current_dir(&dir)
            .args(["report", "diff", "r.json", "not-json.json"]),
        2,
        "not-json.json: not a sweep report: not JSON",
    );
}
