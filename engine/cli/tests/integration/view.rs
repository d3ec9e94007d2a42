//! Seeing a run: the trace export, `tape show --tree`, and the HTML pages opened in headless
//! Chromium. The pages are checked in the browser itself: a probe script added to a copy of
//! each page records console errors and reads the DOM after the page's own scripts ran, and
//! Chromium's `--dump-dom` hands the probe's findings back. Each page is also screenshot into
//! `<target>/tmp/view/screenshots/`. Without Chromium the browser tests skip with a notice,
//! except under CI=true, where a missing browser fails them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use simtape::tape::{RecordKind, TapeReader};

use crate::common::{repo, run_seed, scratch, simtape, three_429s_variant};

/// One Chromium at a time: parallel instances on a small host compete for its socket
/// directory and its two cores.
static BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How long one Chromium invocation may take before the test fails.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(90);

fn run_ok(command: &mut Command) -> Output {
    let output = command.output().expect("simtape runs");
    assert!(
        output.status.success(),
        "{command:?}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn golden(scenario: &str, seed: u64) -> PathBuf {
    repo().join(format!("tapes/{scenario}/seed-{seed}.tape"))
}

/// Returns the Chromium binary, or `None` (with a notice) when there is none and CI is not
/// set; under CI=true a missing Chromium fails the test.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but no chromium on PATH: .ci/run installs the Debian package `chromium`"
        );
        eprintln!(
            "notice: no chromium on PATH; the browser test is skipped (apt-get install chromium)"
        );
    }
    found
}

/// Runs Chromium headless on `page` with `extra` flags and a fresh profile; returns stdout
/// and stderr. Fails the test on a timeout or a non-zero exit.
fn run_chromium(browser: &Path, page: &Path, profile: &Path, extra: &[String]) -> (String, String) {
    let _one_at_a_time = BROWSER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let _ = std::fs::remove_dir_all(profile);
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--window-size=1400,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > CHROMIUM_TIMEOUT {
            let _ = child.kill();
            panic!(
                "chromium did not finish {} within {CHROMIUM_TIMEOUT:?}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("chromium output");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "chromium failed on {}: {stderr}",
        page.display()
    );
    (stdout, stderr)
}

/// Records console errors and uncaught exceptions from the first script on.
const HOOK: &str = r#"<script>
window.__errors = [];
window.addEventListener("error", (e) => window.__errors.push("error: " + (e.message || e)));
window.addEventListener("unhandledrejection", (e) => window.__errors.push("rejection: " + e.reason));
const __consoleError = console.error.bind(console);
console.error = (...args) => { window.__errors.push("console.error: " + args.join(" ")); __consoleError(...args); };
</script>"#;

/// Opens a copy of `page` in Chromium with `probe` (a script body that fills `result`) run
/// after the page's scripts; returns what the probe found, with `errors` (console errors and
/// uncaught exceptions) added, and Chromium's log.
fn probe_page(browser: &Path, page: &Path, name: &str, probe: &str) -> (Value, String) {
    let dir = page.parent().expect("a dir");
    let html = std::fs::read_to_string(page).expect("the page");
    let probe = format!(
        "<script>(function () {{ const result = {{}}; try {{ {probe} }} catch (e) {{ window.__errors.push(\"probe: \" + e + \" \" + e.stack); }}\n\
         result.errors = window.__errors; const pre = document.createElement(\"pre\"); pre.id = \"probe\";\n\
         pre.textContent = JSON.stringify(result); document.body.appendChild(pre); }})();</script>"
    );
    let probed = html
        .replacen("<head>", &format!("<head>\n{HOOK}"), 1)
        .replacen("</body>", &format!("{probe}\n</body>"), 1);
    let probed_path = dir.join(format!("{name}.probe.html"));
    std::fs::write(&probed_path, probed).expect("write the probed page");
    let (dom, stderr) = run_chromium(
        browser,
        &probed_path,
        &dir.join(format!("profile-{name}-dom")),
        &["--dump-dom".to_string()],
    );
    let start = dom.find("<pre id=\"probe\">").expect("the probe ran") + "<pre id=\"probe\">".len();
    let end = start + dom[start..].find("</pre>").expect("the probe's end");
    let text = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    (
        serde_json::from_str(&text).expect("the probe's JSON"),
        stderr,
    )
}

/// Opens `page` in Chromium with `probe` run after the page's scripts; fails on anything
/// loaded from the network and on any console error; returns what the probe found and
/// screenshots the page as `name.png`.
fn open_in_browser(browser: &Path, page: &Path, name: &str, probe: &str) -> Value {
    let html = std::fs::read_to_string(page).expect("the page");
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http") && !html.contains("url(http"),
        "{name}: the page loads nothing from the network"
    );
    let (result, log) = probe_page(browser, page, name, probe);
    assert_eq!(
        result["errors"],
        serde_json::json!([]),
        "{name}: console errors"
    );
    assert!(
        !log.contains("Uncaught"),
        "{name}: an uncaught error: {log}"
    );

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("view/screenshots");
    std::fs::create_dir_all(&shots).expect("the screenshot dir");
    let shot = shots.join(format!("{name}.png"));
    let profile = page.with_file_name(format!("profile-{name}-shot"));
    run_chromium(
        browser,
        page,
        &profile,
        &[format!("--screenshot={}", shot.display())],
    );
    assert!(
        shot.metadata().is_ok_and(|m| m.len() > 10_000),
        "{name}: a screenshot"
    );
    eprintln!("screenshot: {}", shot.display());
    result
}

/// Counts a tape's request/reply pairs (the harness's log records are not calls).
fn call_pairs(tape: &Path) -> u64 {
    let mut reader = TapeReader::open(tape).expect("a tape");
    let mut pairs = 0;
    while let Some(record) = reader.next_record().expect("a record") {
        pairs += u64::from(
            record.kind == RecordKind::Reply && reader.actor_name(record.actor) != "agent",
        );
    }
    pairs
}

#[test]
fn the_probe_reports_console_errors_and_exceptions() {
    // Goal: the browser harness itself: a page that logs an error and throws is caught.
    let Some(browser) = chromium() else { return };
    let dir = scratch("view", "probe");
    let page = dir.join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><head></head><body><script>console.error('bad');\
         null.f();</script></body></html>",
    )
    .unwrap();
    let (result, _) = probe_page(&browser, &page, "broken", "result.ran = true;");
    assert_eq!(result["ran"], true);
    let errors = result["errors"].to_string();
    assert!(errors.contains("console.error: bad"), "{errors}");
    assert!(errors.contains("error: Uncaught TypeError"), "{errors}");
}

#[test]
fn the_trace_export_is_trace_event_json_in_virtual_time() {
    // Goal: `tape export --format chrome-trace` writes the Trace Event Format, one B/E pair
    // per call plus the task lifetimes, timestamps in virtual microseconds.
    let dir = scratch("view", "trace");
    let tape = golden("race-edit", 0);
    let out = dir.join("run.json");
    run_ok(
        simtape()
            .args(["tape", "export", "--format", "chrome-trace"])
            .arg(&tape)
            .arg("-o")
            .arg(&out),
    );
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let phase = |p: &str| events.iter().filter(|e| e["ph"] == p).count() as u64;
    assert_eq!(phase("B"), phase("E"));
    assert_eq!(
        phase("B"),
        call_pairs(&tape) + 3,
        "each call, and the three tasks"
    );
    let last = events
        .iter()
        .filter_map(|e| e["ts"].as_f64())
        .fold(0.0, f64::max);
    assert_eq!(last, 813_873.947, "the run's end in virtual µs");
    assert_eq!(trace["otherData"]["seed"], 0);
    let both = simtape()
        .args(["tape", "export", "--jsonl", "--format", "chrome-trace"])
        .arg(&tape)
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2), "--jsonl and --format conflict");
}

#[test]
fn the_tree_indents_calls_under_turns_and_colours_only_when_asked() {
    // Goal: `tape show --tree` nests the tool tasks' fs calls under the turn; `--color never`
    // writes no escape codes, `--color always` does, and `auto` on a pipe does not.
    let tape = golden("race-edit", 0);
    let tree = |color: &str| {
        let output = run_ok(
            simtape()
                .args(["tape", "show", "--tree", "--color", color])
                .arg(&tape),
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let plain = tree("never");
    assert!(!plain.contains('\u{1b}'));
    let turn = plain
        .lines()
        .find(|l| l.ends_with("turn 1"))
        .expect("turn 1");
    let write = plain
        .lines()
        .find(|l| l.contains("fs write config.toml"))
        .expect("a write");
    // Each line is the time in 14 columns, two spaces, then two spaces per level.
    let depth = |line: &str| line[16..].len() - line[16..].trim_start().len();
    assert!(depth(write) > depth(turn), "{plain}");
    assert!(
        tree("always").contains("\u{1b}[31m"),
        "the failed verifier in red"
    );
    assert!(!tree("auto").contains('\u{1b}'), "a pipe is not a terminal");
}

#[test]
fn the_tape_page_draws_a_lane_per_actor_and_task_and_shows_a_payload_on_click() {
    // Goal: the race-edit failure: lanes grouped by actor, one slice per request/reply pair,
    // the two tool tasks' writes racing on two fs lanes; a click fills the payload panel.
    let Some(browser) = chromium() else { return };
    let dir = scratch("view", "tape-page");
    let tape = golden("race-edit", 0);
    let page = dir.join("t.html");
    run_ok(
        simtape()
            .args(["tape", "report"])
            .arg(&tape)
            .arg("-o")
            .arg(&page),
    );
    let result = open_in_browser(
        &browser,
        &page,
        "tape",
        r##"
        const lanes = Array.from(document.querySelectorAll("g.lane"));
        result.groups = {};
        lanes.forEach((l) => { result.groups[l.dataset.group] = (result.groups[l.dataset.group] || 0) + 1; });
        result.calls = document.querySelectorAll(".slice:not(.cat-task)").length;
        result.writes = Array.from(document.querySelectorAll('g.lane[data-group="fs"]')).map((lane) =>
          Array.from(lane.querySelectorAll(".slice")).filter((s) => s.textContent.startsWith("fs write")).length);
        const write = Array.from(document.querySelectorAll(".slice")).find((s) => s.textContent.startsWith("fs write"));
        write.dispatchEvent(new MouseEvent("click", {bubbles: true}));
        result.title = document.querySelector("#payload .payload-title").textContent;
        result.body = document.querySelector("#payload .payload-body").textContent;
        result.selected = document.querySelectorAll(".slice.selected").length;
        result.verifiers = Array.from(document.querySelectorAll("#verdict tr.verifier")).map((r) => r.textContent);
        result.transcript = document.querySelectorAll("#transcript .turn").length;
        "##,
    );
    assert_eq!(
        result["groups"]["tasks"], 3,
        "main and the two tool tasks: {result}"
    );
    assert_eq!(
        result["groups"]["fs"], 2,
        "one fs lane per tool task: {result}"
    );
    assert_eq!(result["groups"]["llm"], 1);
    assert_eq!(result["calls"], call_pairs(&tape));
    assert_eq!(
        result["writes"],
        serde_json::json!([1, 1]),
        "two edits racing"
    );
    assert!(
        result["title"].as_str().unwrap().starts_with("fs write"),
        "{result}"
    );
    assert!(
        result["body"].as_str().unwrap().contains("config.toml"),
        "{result}"
    );
    assert_eq!(result["selected"], 1);
    assert!(
        result["verifiers"][0].as_str().unwrap().contains("failed"),
        "{result}"
    );
    assert!(result["transcript"].as_u64().unwrap() >= 4, "{result}");
}

#[test]
fn explain_names_the_third_429_and_draws_its_curve_on_the_tape_page() {
    // Goal: on the ticket-retry variant whose retry budget three 429s on comment_ticket use
    // up (so the world's 429 on close_ticket is not retried), explain names the fault draw
    // after which that failure is certain (the fourth attempt getting through: had it been
    // refused too, the run would fail another way), and its page draws the curve, one point
    // per fork point, above the run's timeline.
    let dir = scratch("view", "explain");
    let scenario = three_429s_variant(&dir);
    let output = run_seed(&dir, &scenario, 11, "t.tape");
    assert!(
        matches!(output.status.code(), Some(1 | 3)),
        "a failing run: {:?}",
        output.status
    );
    let output = run_ok(simtape().current_dir(&dir).args([
        "explain",
        "t.tape",
        "--forks",
        "10",
        "--html",
        "explain.html",
    ]));
    let shown = String::from_utf8_lossy(&output.stdout).into_owned();
    let conclusion = shown
        .lines()
        .find(|l| l.starts_with("after record "))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        conclusion.contains("(mcp:tickets#3 (does not fire (chance 1/2)))")
            && conclusion.contains("10/10 futures fail the same way"),
        "the fourth attempt decides it: {shown}"
    );
    assert_eq!(
        shown.matches("(fires (chance 1/2))").count(),
        3,
        "three 429s before it: {shown}"
    );
    let points = shown.lines().filter(|l| l.starts_with("  record ")).count();
    let Some(browser) = chromium() else { return };
    let result = open_in_browser(
        &browser,
        &dir.join("explain.html"),
        "explain",
        r##"
        result.points = document.querySelectorAll("#explain-curve circle").length;
        result.inevitable = document.querySelectorAll("#explain-curve line.inevitable").length;
        result.rows = document.querySelectorAll("#explain tr").length - 1;
        result.note = document.querySelector("#explain .summary-note").textContent;
        result.lanes = document.querySelectorAll("g.lane").length;
        "##,
    );
    assert_eq!(result["points"], points as u64, "{result}");
    assert_eq!(result["rows"], points as u64, "{result}");
    assert_eq!(result["inevitable"], 1, "{result}");
    assert!(
        result["note"]
            .as_str()
            .unwrap()
            .contains("nearly certain after record"),
        "{result}"
    );
    assert!(
        result["lanes"].as_u64().unwrap() > 2,
        "the timeline is drawn: {result}"
    );
}

#[test]
fn the_diff_page_lands_on_the_first_divergence() {
    // Goal: `diff --html` of the failing and a passing seed marks the first divergence on
    // both timelines, scrolls it into view, and shows both records.
    let Some(browser) = chromium() else { return };
    let dir = scratch("view", "diff-page");
    let page = dir.join("d.html");
    let output = simtape()
        .arg("diff")
        .arg(golden("race-edit", 0))
        .arg(golden("race-edit", 2))
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "the tapes diverge");
    let result = open_in_browser(
        &browser,
        &page,
        "diff",
        r##"
        const markers = Array.from(document.querySelectorAll("line.divergence"));
        result.markers = markers.length;
        const r = markers[0].getBoundingClientRect();
        result.in_view = r.right > 0 && r.left < window.innerWidth && r.bottom > 0 && r.top < window.innerHeight;
        result.a = document.querySelector("#payload-a .payload-title").textContent;
        result.b = document.querySelector("#payload-b .payload-title").textContent;
        result.value_a = document.querySelector("#first .value-a").textContent;
        "##,
    );
    assert_eq!(result["markers"], 2, "{result}");
    assert_eq!(result["in_view"], true, "{result}");
    assert!(
        result["a"].as_str().unwrap().starts_with("llm complete"),
        "{result}"
    );
    assert!(
        result["b"].as_str().unwrap().starts_with("llm complete"),
        "{result}"
    );
    assert_eq!(result["value_a"], "410740982");
}

#[test]
fn the_sweep_page_plots_one_point_per_k_and_lists_the_clusters() {
    // Goal: the race-edit sweep as a page, written by `sweep --report html` and again from
    // the JSON report: the same bytes; one point per k on each curve, a cluster per failure
    // reason, a reproduce command per failing seed.
    let Some(browser) = chromium() else { return };
    let dir = scratch("view", "sweep-page");
    let scenario = repo().join("scenarios/race-edit.toml");
    let sweep = |format: &str, out: &Path| {
        let output = simtape()
            .arg("sweep")
            .arg(&scenario)
            .args([
                "--seeds",
                "0..24",
                "--jobs",
                "1",
                "--report",
                format,
                "--report-out",
            ])
            .arg(out)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "some seeds fail");
    };
    let (json, page) = (dir.join("r.json"), dir.join("r.html"));
    sweep("json", &json);
    sweep("html", &page);
    let merged = dir.join("from-json.html");
    let merge = simtape()
        .args(["report", "merge"])
        .arg(&json)
        .args(["--report", "html", "--report-out"])
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(
        merge.status.code(),
        Some(1),
        "the merged report has failures too"
    );
    assert_eq!(
        std::fs::read(&page).unwrap(),
        std::fs::read(&merged).unwrap(),
        "one page from either"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let summary = &report["scenarios"][0]["summary"];
    let ks: Vec<u64> = summary["k"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["k"].as_u64().unwrap())
        .collect();
    let failing = report["scenarios"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["verdict"] != "pass")
        .count();
    let result = open_in_browser(
        &browser,
        &page,
        "sweep",
        r##"
        result.at = Array.from(document.querySelectorAll("circle.point.at")).map((p) => +p.dataset.k);
        result.hat = Array.from(document.querySelectorAll("circle.point.hat")).map((p) => +p.dataset.k);
        result.clusters = document.querySelectorAll("tr.cluster").length;
        result.bars = document.querySelectorAll(".hist-duration rect.bar").length;
        result.model_bars = document.querySelectorAll(".hist-model rect.bar").length;
        result.reproduce = document.querySelectorAll(".reproduce tr").length - 1;
        result.rate = document.querySelector(".pass-rate").textContent;
        "##,
    );
    assert_eq!(result["at"], serde_json::json!(ks), "{result}");
    assert_eq!(result["hat"], serde_json::json!(ks), "{result}");
    assert_eq!(
        result["clusters"],
        summary["failures"].as_array().unwrap().len()
    );
    assert!(result["bars"].as_u64().unwrap() > 0);
    assert!(
        result["model_bars"].as_u64().unwrap() > 0,
        "race-edit's agent: a histogram of model calls per run: {result}"
    );
    assert_eq!(result["reproduce"], failing);
}

#[test]
fn the_explore_page_lists_the_clusters_and_draws_the_coverage_curve() {
    // Goal: `explore --report html` is a page that opens without console errors, with a row per
    // failure cluster, a point per step of the coverage curve and a mark at each cluster's
    // first failure; the same exploration seed gives the same page.
    let Some(browser) = chromium() else { return };
    let dir = scratch("view", "explore-page");
    let scenario = repo().join("scenarios/ticket-retry.toml");
    let explore = |format: &str, out: &Path| {
        let output = simtape()
            .arg("explore")
            .arg(&scenario)
            .args(["--runs", "40", "--report", format, "--report-out"])
            .arg(out)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "it finds a failure");
    };
    let (json, page, again) = (
        dir.join("e.json"),
        dir.join("e.html"),
        dir.join("again.html"),
    );
    explore("json", &json);
    explore("html", &page);
    explore("html", &again);
    assert_eq!(
        std::fs::read(&page).unwrap(),
        std::fs::read(&again).unwrap()
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let result = open_in_browser(
        &browser,
        &page,
        "explore",
        r##"
        result.clusters = document.querySelectorAll("tr.cluster").length;
        result.points = document.querySelectorAll("svg.coverage circle.point").length;
        result.marks = document.querySelectorAll("svg.coverage line.divergence").length;
        "##,
    );
    let clusters = report["clusters"].as_array().unwrap().len();
    assert!(clusters > 0, "{report}");
    assert_eq!(result["clusters"], clusters, "{result}");
    assert_eq!(result["marks"], clusters, "{result}");
    assert_eq!(
        result["points"],
        report["coverage"].as_array().unwrap().len(),
        "{result}"
    );
}

#[test]
fn a_backwards_window_and_a_file_that_is_not_a_tape_are_refused() {
    // Goal: `tape report --from` after `--to` is a usage error (2); a non-tape is named.
    let dir = scratch("view", "refused");
    let page = dir.join("t.html");
    let backwards = simtape()
        .args(["tape", "report"])
        .arg(golden("race-edit", 0))
        .args(["--from", "2s", "--to", "1s", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(backwards.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&backwards.stderr).contains("--from is after --to"));
    let readme = repo().join("README.md");
    let not_a_tape = simtape()
        .args(["tape", "report"])
        .arg(&readme)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(
        not_a_tape.status.code(),
        Some(2),
        "a file that is no tape is bad input, as for every command that reads a tape"
    );
    assert!(String::from_utf8_lossy(&not_a_tape.stderr).contains("README.md: not a simtape tape"));
    assert!(!page.exists(), "no page for a tape that does not read");
}

#[test]
fn the_sweep_diff_page_shows_the_paired_test_and_every_cluster() {
    // Goal: `report diff --html` of a race-edit sweep against itself opens without a
    // console error and shows each cluster as ongoing and the paired test (b = c = 0, p = 1).
    let Some(browser) = chromium() else { return };
    let dir = scratch("view", "sweep-diff-page");
    let json = dir.join("r.json");
    let output = simtape()
        .arg("sweep")
        .arg(repo().join("scenarios/race-edit.toml"))
        .args(["--seeds", "0..24", "--report-out"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "some seeds fail");
    let page = dir.join("diff.html");
    run_ok(
        simtape()
            .args(["report", "diff"])
            .arg(&json)
            .arg(&json)
            .arg("--html")
            .arg(&page),
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let clusters = report["scenarios"][0]["summary"]["failures"]
        .as_array()
        .unwrap()
        .len();
    let result = open_in_browser(
        &browser,
        &page,
        "sweep-diff",
        r##"
        result.ongoing = document.querySelectorAll("tr.cluster.ongoing").length;
        result.paired = document.querySelector(".paired").textContent;
        "##,
    );
    assert_eq!(result["ongoing"], clusters, "{result}");
    let paired = result["paired"].as_str().unwrap();
    assert!(
        paired.contains("b = 0") && paired.contains("c = 0") && paired.contains("p = 1"),
        "{paired}"
    );
}
