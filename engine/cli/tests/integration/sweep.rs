//! `simtape sweep` and `simtape report merge`, end to end: real processes, real files, exit
//! codes, and the byte-for-byte claims (the same report whatever --jobs, shards merge into
//! the unsharded report).

use crate::common;
use crate::common::text;

use common::{expect, files, load_json, repo, scratch, simtape};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scenario(name: &str) -> PathBuf {
    repo().join("scenarios").join(name)
}

fn output(command: &mut Command) -> Output {
    command.output().unwrap()
}

/// Returns a `simtape sweep` command over `scenarios` and `seeds`, run in `cwd`.
fn sweep(cwd: &Path, scenarios: &[&str], seeds: &str) -> Command {
    let mut command = simtape();
    command.current_dir(cwd).arg("sweep");
    for name in scenarios {
        command.arg(scenario(name));
    }
    command.args(["--seeds", seeds]);
    command
}

#[test]
fn random_delays_sweep_passes_every_seed() {
    // Goal: a sweep of a healthy scenario over 40 seeds passes them all and exits 0.
    let dir = scratch("sweep", "random-delays");
    let run = output(sweep(&dir, &["random-delays.toml"], "0..40").args([
        "--jobs",
        "2",
        "--report-out",
        "report.json",
    ]));
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("40 run(s), 40 passed, pass rate 1"),
        "{stdout}"
    );
    let report = load_json(&dir.join("report.json"));
    let only = &report["scenarios"][0];
    assert_eq!(only["name"], "random-delays");
    assert_eq!(only["summary"]["runs"], 40);
    assert_eq!(only["summary"]["passed"], 40);
    let ks: Vec<u64> = only["summary"]["k"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["k"].as_u64().unwrap())
        .collect();
    assert_eq!(ks, [1, 2, 5, 10, 40]);
    let seeds: Vec<u64> = only["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, (0..40).collect::<Vec<_>>());
    assert_eq!(report["partial"], false);
}

#[test]
fn deadlock_sweep_fails_every_seed_and_keeps_verifiable_tapes() {
    // Goal: every seed of a deadlocking scenario fails with reason deadlock, names its replay
    // command, and leaves a sound tape under --out.
    let dir = scratch("sweep", "deadlock");
    let run = output(sweep(&dir, &["deadlock.toml"], "0..6").args([
        "--out",
        "out",
        "--report",
        "json",
        "--report-out",
        "r.json",
    ]));
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("6 seed(s): deadlock: deadlock at t=10ms"),
        "{stdout}"
    );
    assert!(stdout.contains("--seed 5"), "{stdout}");
    let report = load_json(&dir.join("r.json"));
    let results = report["scenarios"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 6);
    for result in results {
        let seed = result["seed"].as_u64().unwrap();
        assert_eq!(result["verdict"], "error");
        assert_eq!(result["reason"]["kind"], "deadlock");
        let replay = result["replay"].as_str().unwrap();
        assert!(replay.starts_with("simtape run "), "{replay}");
        assert!(replay.ends_with(&format!("--seed {seed}")), "{replay}");
        let tape = result["tape"].as_str().unwrap();
        assert_eq!(tape, format!("out/deadlock/seed-{seed}.tape"));
        let verify = output(simtape().current_dir(&dir).args(["tape", "verify", tape]));
        assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
    }
}

#[test]
fn race_sweep_finds_the_losing_seeds_and_each_replays_byte_for_byte() {
    // Goal: the racy agent scenario passes on some seeds and fails on others; each failure
    // names the verifier and what it saw, is a JUnit <failure>, and its kept tape replays to
    // the same bytes.
    let dir = scratch("sweep", "race");
    let run = output(sweep(&dir, &["race-edit.toml"], "0..24").args([
        "--out",
        "out",
        "--report-out",
        "r.json",
    ]));
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    let report = load_json(&dir.join("r.json"));
    let results = report["scenarios"][0]["results"].as_array().unwrap();
    let failed: Vec<&serde_json::Value> =
        results.iter().filter(|r| r["verdict"] == "fail").collect();
    let passed = results.iter().filter(|r| r["verdict"] == "pass").count();
    assert!(
        passed > 0 && !failed.is_empty(),
        "{passed} passed, {} failed",
        failed.len()
    );
    assert_eq!(passed + failed.len(), 24, "no seed ends in error");
    for result in &failed {
        assert_eq!(result["reason"]["kind"], "verifier");
        let message = result["reason"]["message"].as_str().unwrap();
        assert!(message.starts_with("both edits landed: "), "{message}");
        let tape = result["tape"].as_str().unwrap();
        let replay = output(simtape().current_dir(&dir).args([
            "replay",
            tape,
            "--scenario",
            scenario("race-edit.toml").to_str().unwrap(),
        ]));
        assert_eq!(replay.status.code(), Some(0), "{}", text(&replay));
        assert!(
            text(&replay).contains("byte-identical"),
            "{}",
            text(&replay)
        );
    }
    let junit = output(sweep(&dir, &["race-edit.toml"], "0..24").args(["--report", "junit"]));
    let xml = String::from_utf8(junit.stdout).unwrap();
    assert_eq!(xml.matches("<failure ").count(), failed.len(), "{xml}");
}

#[test]
fn jobs_do_not_change_the_report_or_the_tapes() {
    // Goal: --jobs 1 and --jobs 2 write the same JSON report and the same kept tapes, byte
    // for byte.
    let mut outcomes = Vec::new();
    for jobs in ["1", "2"] {
        let dir = scratch("sweep", &format!("jobs-{jobs}"));
        let run = output(
            sweep(
                &dir,
                &["race-edit.toml", "random-delays.toml", "deadlock.toml"],
                "0..20",
            )
            .args([
                "--jobs",
                jobs,
                "--out",
                "out",
                "--report-out",
                "report.json",
            ]),
        );
        assert_eq!(run.status.code(), Some(1), "{}", text(&run));
        let report = std::fs::read(dir.join("report.json")).unwrap();
        outcomes.push((report, files(&dir.join("out"))));
    }
    let kept = &outcomes[0].1;
    let deadlocked = kept
        .iter()
        .filter(|(path, _)| path.starts_with("deadlock"))
        .count();
    let raced = kept
        .iter()
        .filter(|(path, _)| path.starts_with("race-edit"))
        .count();
    assert_eq!(deadlocked, 20, "one kept tape per deadlocked seed");
    assert!(
        raced > 0 && raced < 20,
        "{raced} race-edit seeds failed of 20"
    );
    assert!(
        outcomes[0] == outcomes[1],
        "--jobs changed the report or a tape"
    );
}

#[test]
fn merged_shards_equal_the_unsharded_report() {
    // Goal: the reports of shards 0/2 and 1/2, merged, are the unsharded report byte for byte;
    // a doctored shard or a missing one is refused.
    let dir = scratch("sweep", "shards");
    let scenarios = ["random-delays.toml", "deadlock.toml"];
    let whole = output(sweep(&dir, &scenarios, "3..20").args(["--report-out", "whole.json"]));
    assert_eq!(whole.status.code(), Some(1), "{}", text(&whole));
    for shard in ["0/2", "1/2"] {
        let name = format!("shard-{}.json", &shard[..1]);
        let run = output(sweep(&dir, &scenarios, "3..20").args([
            "--shard",
            shard,
            "--report-out",
            &name,
        ]));
        assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    }
    let merge = output(simtape().current_dir(&dir).args([
        "report",
        "merge",
        "shard-1.json",
        "shard-0.json",
        "--report-out",
        "merged.json",
    ]));
    assert_eq!(merge.status.code(), Some(1), "{}", text(&merge));
    let whole = std::fs::read(dir.join("whole.json")).unwrap();
    let merged = std::fs::read(dir.join("merged.json")).unwrap();
    assert!(
        whole == merged,
        "the merged report differs from the unsharded one"
    );
    // A shard whose failing verdict was edited to pass (summary and all) is refused, named.
    let mut doctored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("shard-1.json")).unwrap()).unwrap();
    let failing = doctored["scenarios"][0]["results"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["verdict"] != "pass")
        .expect("shard 1/2 has a failing seed");
    failing["verdict"] = "pass".into();
    failing["reason"] = serde_json::Value::Null;
    std::fs::write(dir.join("doctored.json"), doctored.to_string()).unwrap();
    let refused = output(simtape().current_dir(&dir).args([
        "report",
        "merge",
        "shard-0.json",
        "doctored.json",
    ]));
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("doctored.json: report 2: its results do not match its digest"),
        "{}",
        text(&refused)
    );
    let missing = output(
        simtape()
            .current_dir(&dir)
            .args(["report", "merge", "shard-0.json"]),
    );
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        text(&missing).contains("shard 1/2 is missing"),
        "{}",
        text(&missing)
    );
}

#[test]
fn junit_and_csv_have_one_entry_per_seed() {
    // Goal: JUnit XML has one <testcase per (scenario, seed) and CSV one row each plus a
    // header.
    let dir = scratch("sweep", "formats");
    let scenarios = ["random-delays.toml", "deadlock.toml"];
    let junit = output(sweep(&dir, &scenarios, "0..7").args(["--report", "junit"]));
    assert_eq!(junit.status.code(), Some(1), "{}", text(&junit));
    let xml = String::from_utf8(junit.stdout).unwrap();
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "),
        "{xml}"
    );
    assert!(xml.trim_end().ends_with("</testsuites>"), "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 14, "{xml}");
    assert_eq!(xml.matches("<testsuite ").count(), 2, "{xml}");
    assert_eq!(xml.matches("<error type=\"deadlock\"").count(), 7, "{xml}");
    assert_eq!(xml.matches('<').count(), xml.matches('>').count(), "{xml}");
    let csv = output(sweep(&dir, &scenarios, "0..7").args(["--report", "csv"]));
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(csv.lines().count(), 15, "{csv}");
    assert!(
        csv.starts_with("scenario,seed,verdict,reason,end_ns,events\n"),
        "{csv}"
    );
    assert!(csv.contains("\nrandom-delays,6,pass,,"), "{csv}");
    let jsonl = output(sweep(&dir, &scenarios, "0..7").args(["--report", "jsonl"]));
    let jsonl = String::from_utf8(jsonl.stdout).unwrap();
    assert_eq!(jsonl.lines().count(), 14, "{jsonl}");
    for line in jsonl.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(record["scenario"].is_string(), "{line}");
    }
}

#[test]
fn bad_seeds_or_shard_exit_2() {
    // Goal: malformed or empty seed ranges and impossible shards are usage errors (exit 2).
    let dir = scratch("sweep", "usage");
    for seeds in ["5..5", "9..2", "abc", "0..x"] {
        let run = output(&mut sweep(&dir, &["hello.toml"], seeds));
        assert_eq!(
            run.status.code(),
            Some(2),
            "--seeds {seeds}: {}",
            text(&run)
        );
    }
    for shard in ["2/2", "0/0", "1", "a/b"] {
        let run = output(sweep(&dir, &["hello.toml"], "0..4").args(["--shard", shard]));
        assert_eq!(
            run.status.code(),
            Some(2),
            "--shard {shard}: {}",
            text(&run)
        );
    }
    let missing = output(&mut sweep(&dir, &["no-such-scenario.toml"], "0..4"));
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
}

#[cfg(unix)]
#[test]
fn ctrl_c_writes_a_partial_report() {
    // Goal: SIGINT stops the workers, and the report still comes out, marked partial.
    let dir = scratch("sweep", "ctrl-c");
    let mut child = sweep(&dir, &["random-delays.toml"], "0..5000000")
        .args(["--jobs", "2", "--report-out", "partial.json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt only once the sweep says it has started (its Ctrl-C handler is in place).
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut first).unwrap();
    assert!(first.starts_with("sweep: "), "{first}");
    let kill = output(Command::new("kill").args(["-INT", &child.id().to_string()]));
    assert!(kill.status.success(), "{}", text(&kill));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{rest}");
    assert!(rest.contains("the report is partial"), "{rest}");
    let report = load_json(&dir.join("partial.json"));
    assert_eq!(report["partial"], true);
    let runs = report["scenarios"][0]["summary"]["runs"].as_u64().unwrap();
    assert!(runs < 5_000_000, "{runs}");
}

#[test]
fn a_sweep_leaves_no_empty_directory_and_promises_no_report_it_did_not_write() {
    // Goal: a scenario with no failing seed leaves nothing under --out; one with more failing
    // seeds than the summary shows points to --report-out when no report was asked for, and
    // to the report when one was.
    let dir = scratch("sweep", "tidy");
    let run = output(
        sweep(&dir, &["random-delays.toml", "deadlock.toml"], "0..25").args(["--out", "out"]),
    );
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    assert!(
        !dir.join("out/random-delays").exists(),
        "an empty directory was left"
    );
    assert!(dir.join("out/deadlock/seed-0.tape").is_file());
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("… and 5 more (--report-out FILE writes a report that lists them all)"),
        "{stdout}"
    );
    let reported =
        output(sweep(&dir, &["deadlock.toml"], "0..25").args(["--report-out", "r.json"]));
    assert!(
        String::from_utf8_lossy(&reported.stdout)
            .contains("… and 5 more (the report lists them all)"),
        "{}",
        text(&reported)
    );
}

#[test]
fn the_readme_main_job_shows_retries_and_a_failing_seed() {
    // Goal: the sweep the README's set-up runs shows what simtape is for: the agent's retries
    // (the 429s it survived) on ticket-retry, and failing race-edit seeds with the command
    // that reproduces each; the report keeps each seed's retries.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(readme.contains(
        "sweep scenarios/ticket-retry.toml scenarios/race-edit.toml --seeds 0..1000 --out out/sweep"
    ));
    let dir = scratch("sweep", "main-job");
    let scenarios = ["ticket-retry.toml", "race-edit.toml"];
    let run =
        output(sweep(&dir, &scenarios, "0..8").args(["--out", "out", "--report-out", "r.json"]));
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let retries = stdout
        .lines()
        .filter(|l| l.contains("agent retries (faults met and survived):"))
        .nth(1)
        .expect("a retries line for ticket-retry");
    assert!(!retries.contains(": 0 in"), "{stdout}");
    assert!(stdout.contains("(verifier): simtape run "), "{stdout}");
    let report = load_json(&dir.join("r.json"));
    let ticket = &report["scenarios"][1];
    assert_eq!(ticket["name"], "ticket-retry");
    assert!(
        ticket["results"][0]["retries"].as_u64().unwrap() >= 1,
        "{ticket}"
    );
    assert!(ticket["summary"]["retries"]["total"].as_u64().unwrap() >= 8);
}

/// The variables `--shard auto` reads, removed so the test's own environment cannot leak in.
const SHARD_VARS: [&str; 7] = [
    "SLURM_ARRAY_TASK_ID",
    "JOB_COMPLETION_INDEX",
    "CI_NODE_INDEX",
    "CIRCLE_NODE_INDEX",
    "BUILDKITE_PARALLEL_JOB",
    "SIMTAPE_SHARD_INDEX",
    "SIMTAPE_SHARD_COUNT",
];

fn sweep_auto(dir: &Path, env: &[(&str, &str)], shard: &str) -> Output {
    let mut command = sweep(dir, &["random-delays.toml"], "0..12");
    for var in SHARD_VARS {
        command.env_remove(var);
    }
    command
        .envs(env.iter().copied())
        .args(["--shard", shard, "--report-out", "auto.json"]);
    output(&mut command)
}

#[test]
fn shard_auto_reads_the_scheduler_and_names_what_it_read() {
    // Goal: `--shard auto` takes the shard of a Slurm array task and of a Kubernetes index
    // (count from auto/N), records it in the report like --shard I/N, and says where from.
    let dir = scratch("sweep", "shard-auto");
    let slurm = sweep_auto(
        &dir,
        &[
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ],
        "auto",
    );
    assert_eq!(slurm.status.code(), Some(0), "{}", text(&slurm));
    assert!(
        text(&slurm).contains(
            "sweep: shard 1/3 from Slurm job array (SLURM_ARRAY_TASK_ID=1, SLURM_ARRAY_TASK_COUNT=3)"
        ),
        "{}",
        text(&slurm)
    );
    let report = load_json(&dir.join("auto.json"));
    assert_eq!(report["shard"], serde_json::json!({"index": 1, "count": 3}));
    let k8s = sweep_auto(&dir, &[("JOB_COMPLETION_INDEX", "3")], "auto/4");
    assert_eq!(k8s.status.code(), Some(0), "{}", text(&k8s));
    let report = load_json(&dir.join("auto.json"));
    assert_eq!(report["shard"], serde_json::json!({"index": 3, "count": 4}));
}

#[test]
fn shard_auto_refuses_a_missing_or_ambiguous_environment() {
    // Goal: no scheduler, two schedulers, or an index without a count is exit 2 naming the
    // variables, before any seed runs.
    let dir = scratch("sweep", "shard-auto-bad");
    let none = sweep_auto(&dir, &[], "auto");
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
    assert!(
        text(&none).contains("no scheduler environment found"),
        "{}",
        text(&none)
    );
    let two = sweep_auto(
        &dir,
        &[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
            ("CI_NODE_INDEX", "1"),
            ("CI_NODE_TOTAL", "2"),
        ],
        "auto",
    );
    assert_eq!(two.status.code(), Some(2), "{}", text(&two));
    assert!(text(&two).contains("CI_NODE_INDEX"), "{}", text(&two));
    let no_count = sweep_auto(&dir, &[("JOB_COMPLETION_INDEX", "0")], "auto");
    assert_eq!(no_count.status.code(), Some(2), "{}", text(&no_count));
    assert!(
        text(&no_count).contains("SIMTAPE_SHARD_COUNT"),
        "{}",
        text(&no_count)
    );
    assert!(!dir.join("auto.json").exists(), "no run started");
}

/// Converts a parsed YAML document to JSON, for the schema check.
fn yaml_to_json(yaml: &yaml_rust2::Yaml) -> serde_json::Value {
    use serde_json::Value;
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::String(text) => Value::String(text.clone()),
        Yaml::Integer(n) => Value::from(*n),
        Yaml::Real(text) => Value::from(text.parse::<f64>().unwrap()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Null => Value::Null,
        Yaml::Array(items) => Value::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    (
                        k.as_str().expect("string keys").to_string(),
                        yaml_to_json(v),
                    )
                })
                .collect(),
        ),
        other => panic!("unexpected YAML node {other:?}"),
    }
}

#[test]
fn k8s_plan_is_a_valid_indexed_job_and_merge_job() {
    // Goal: `sweep plan --k8s` writes two Jobs that pass the Job schema (tests/k8s/): an
    // Indexed Job of N completions running `--shard auto` with the count in the environment,
    // and a merge Job; a manifest the schema should refuse is refused (the check can fail).
    let dir = scratch("sweep", "plan-k8s");
    let run = output(simtape().current_dir(&dir).args([
        "sweep",
        "plan",
        "--k8s",
        "--image",
        "registry.example/simtape:1",
        "scenarios/race-edit.toml",
        "--seeds",
        "0..100",
        "--shards",
        "4",
        "--out",
        "sweep.yaml",
    ]));
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let yaml = std::fs::read_to_string(dir.join("sweep.yaml")).unwrap();
    let docs: Vec<serde_json::Value> = yaml_rust2::YamlLoader::load_from_str(&yaml)
        .unwrap()
        .iter()
        .map(yaml_to_json)
        .collect();
    assert_eq!(docs.len(), 2, "{yaml}");
    let schema = load_json(&repo().join("engine/cli/tests/k8s/job-batch-v1.schema.json"));
    let validator = jsonschema::validator_for(&schema).unwrap();
    for doc in &docs {
        let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{yaml}");
    }
    let shards = &docs[0]["spec"];
    assert_eq!(shards["completionMode"], "Indexed");
    assert_eq!(shards["completions"], 4);
    let container = &shards["template"]["spec"]["containers"][0];
    assert_eq!(container["env"][0]["name"], "SIMTAPE_SHARD_COUNT");
    assert_eq!(container["env"][0]["value"], "4");
    assert!(
        container["args"][0]
            .as_str()
            .unwrap()
            .contains("sweep scenarios/race-edit.toml --seeds 0..100 --shard auto"),
        "{yaml}"
    );
    assert_eq!(docs[1]["metadata"]["name"], "simtape-sweep-merge");
    let mut wrong = docs[0].clone();
    wrong["spec"]["template"]["spec"]["restartPolicy"] = "Always".into();
    wrong["spec"]["completion"] = 4.into();
    assert_eq!(validator.iter_errors(&wrong).count(), 2);
}

#[test]
fn plan_refuses_bad_arguments() {
    // Goal: a plan that could not run is refused before anything is written (exit 2).
    let dir = scratch("sweep", "plan-bad");
    std::fs::copy(scenario("hello.toml"), dir.join("x.toml")).unwrap();
    let good = output(simtape().current_dir(&dir).args([
        "sweep", "plan", "--slurm", "--seeds", "0..4", "--shards", "2", "x.toml",
    ]));
    assert_eq!(good.status.code(), Some(0), "{}", text(&good));
    let cases: [&[&str]; 5] = [
        &["--slurm", "--seeds", "0..4", "--shards", "5", "x.toml"],
        &[
            "--slurm",
            "--seeds",
            "0..4",
            "--shards",
            "2",
            "no-such.toml",
        ],
        &["--k8s", "--seeds", "0..4", "--shards", "2", "x.toml"],
        &[
            "--k8s",
            "--image",
            "i",
            "--results",
            "rel",
            "--seeds",
            "0..4",
            "--shards",
            "2",
            "x.toml",
        ],
        &[
            "--slurm", "--name", "Bad_Name", "--seeds", "0..4", "--shards", "2", "x.toml",
        ],
    ];
    for args in cases {
        let run = output(
            simtape()
                .current_dir(&dir)
                .args(["sweep", "plan"])
                .args(args),
        );
        assert_eq!(run.status.code(), Some(2), "{args:?}: {}", text(&run));
    }
}

/// Copies the scenarios a resumed or cached sweep runs (and race-edit's files) into `dir`,
/// so a test may edit them.
fn project(dir: &Path) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("data/race/worktree")).unwrap();
    for file in [
        "race-edit.toml",
        "random-delays.toml",
        "data/race/llm.jsonl",
        "data/race/worktree/config.toml",
    ] {
        std::fs::copy(repo().join("scenarios").join(file), project.join(file)).unwrap();
    }
    project
}

/// A sweep of the copied race-edit and random-delays over seeds `0..40` on two threads.
fn project_sweep(dir: &Path, project: &Path) -> Command {
    let mut command = simtape();
    command
        .current_dir(dir)
        .arg("sweep")
        .arg(project.join("race-edit.toml"))
        .arg(project.join("random-delays.toml"))
        .args(["--seeds", "0..40", "--jobs", "2"]);
    command
}

/// Returns the kept tapes under `out` (not the result store, not a killed write's
/// temporary files), with their bytes.
fn kept_tapes(out: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files(out)
        .into_iter()
        .filter(|(path, _)| {
            path.extension().is_some_and(|e| e == "tape")
                && !path.starts_with("results.cache")
                && !path.file_name().unwrap().to_string_lossy().starts_with('.')
        })
        .collect()
}

#[test]
fn a_sweep_killed_half_way_resumes_to_the_one_shot_report_and_tapes() {
    // Goal: `kill -9` once half the runs are done, then `--resume` over the same --out: only
    // the seeds without a stored result run, and the report and kept tapes are byte for
    // byte those of the same sweep run in one go (each in its own directory, under the same
    // relative --out, which the report names).
    let dir = scratch("sweep", "resume");
    let project = project(&dir);
    let (whole, killed) = (dir.join("whole"), dir.join("killed"));
    for cwd in [&whole, &killed] {
        std::fs::create_dir_all(cwd).unwrap();
    }
    let args = ["--out", "out", "--report-out", "report.json"];
    let one_shot = output(project_sweep(&whole, &project).args(args));
    assert_eq!(one_shot.status.code(), Some(1), "{}", text(&one_shot));

    let mut child = project_sweep(&killed, &project)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Not on a terminal, the progress is a line at every tenth of the runs.
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    for line in std::io::BufRead::lines(stderr) {
        if line.unwrap().starts_with("sweep: 40/80 runs") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !killed.join("report.json").exists(),
        "no report from a killed sweep"
    );
    let stored = std::fs::read_dir(killed.join("out/results.cache"))
        .unwrap()
        .filter(|entry| {
            let name = entry.as_ref().unwrap().file_name();
            !name.to_string_lossy().starts_with('.')
        })
        .count();
    assert!((40..80).contains(&stored), "{stored} results stored");

    let resumed = output(project_sweep(&killed, &project).args(args).arg("--resume"));
    assert_eq!(resumed.status.code(), Some(1), "{}", text(&resumed));
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    let skipped: u64 = stderr
        .lines()
        .filter_map(|line| {
            line.split(": ")
                .nth(2)?
                .split(" of ")
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    assert_eq!(skipped, stored as u64, "{stderr}");
    assert!(
        std::fs::read(killed.join("report.json")).unwrap()
            == std::fs::read(whole.join("report.json")).unwrap(),
        "the resumed report differs from the one-shot report"
    );
    let (tapes, resumed_tapes) = (
        kept_tapes(&whole.join("out")),
        kept_tapes(&killed.join("out")),
    );
    assert!(!tapes.is_empty());
    assert!(tapes == resumed_tapes, "the kept tapes differ");
}

#[test]
fn a_result_cache_skips_unchanged_runs_and_reruns_exactly_the_edited_scenarios_seeds() {
    // Goal: a second identical sweep with --cache runs no seed and reports the same bytes;
    // after one line is added to race-edit's model fixture, race-edit's 40 seeds run again
    // and none of random-delays' (whose files did not change); a cached failing seed's tape
    // lands in a new --out and replays.
    let dir = scratch("sweep", "cache");
    let project = project(&dir);
    // Each sweep writes a fresh --out of the same name: the reports then name the same
    // tapes, and a cached failing seed's tape must come from the cache.
    let sweep_with_cache = |report: &str| {
        let _ = std::fs::remove_dir_all(dir.join("out"));
        let run = output(project_sweep(&dir, &project).args([
            "--cache",
            "cache",
            "--out",
            "out",
            "--report-out",
            report,
        ]));
        assert_eq!(run.status.code(), Some(1), "{}", text(&run));
        let tapes = kept_tapes(&dir.join("out"));
        (String::from_utf8_lossy(&run.stderr).into_owned(), tapes)
    };
    let (first, tapes) = sweep_with_cache("r1.json");
    assert!(
        first.contains("sweep: race-edit: 0 of 40 run(s) skipped"),
        "{first}"
    );
    let (second, cached_tapes) = sweep_with_cache("r2.json");
    assert!(
        second.contains("sweep: race-edit: 40 of 40 run(s) skipped"),
        "{second}"
    );
    assert!(
        second.contains("sweep: random-delays: 40 of 40 run(s) skipped"),
        "{second}"
    );
    let report = |name: &str| std::fs::read(dir.join(name)).unwrap();
    assert!(report("r1.json") == report("r2.json"), "the reports differ");
    assert!(
        !tapes.is_empty() && tapes == cached_tapes,
        "the kept tapes differ"
    );
    expect(
        simtape()
            .arg("replay")
            .arg(dir.join("out").join(&tapes[0].0)),
        0,
        "byte-identical",
    );

    let fixture = project.join("data/race/llm.jsonl");
    let mut text = std::fs::read_to_string(&fixture).unwrap();
    text.push_str("# one more comment line: the same model, another file\n");
    std::fs::write(&fixture, text).unwrap();
    let (third, _) = sweep_with_cache("r3.json");
    assert!(
        third.contains("sweep: race-edit: 0 of 40 run(s) skipped"),
        "{third}"
    );
    assert!(
        third.contains("sweep: random-delays: 40 of 40 run(s) skipped"),
        "{third}"
    );
    // A comment line changes no answer: the same results, now run again.
    assert!(report("r1.json") == report("r3.json"), "the reports differ");
    let said: String = third
        .lines()
        .filter(|line| line.contains("run(s) skipped"))
        .map(|line| format!("{line}\n"))
        .collect();
    common::check_doc_block("docs/sweeps.md", "Either way the sweep says", &said);
}
