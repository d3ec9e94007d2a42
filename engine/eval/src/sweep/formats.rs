//! The sweep report rendered for machines (JSON, JSON lines, JUnit XML, CSV) and for people
//! (the text summary). Every rendering is a pure function of the report, so equal reports give
//! equal bytes.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::report::{ScenarioResults, SeedResult, SweepReport};
use crate::VerdictKind;

/// At most this many failing seeds are listed in the text summary (the report has them all).
const FAILING_SEEDS_SHOWN_MAX: usize = 20;

/// The machine-readable report formats; [`ReportFormat::description`] says what each holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// JSON, the whole report.
    Json,
    /// JSON lines, one per (scenario, seed).
    Jsonl,
    /// JUnit XML.
    Junit,
    /// CSV, one row per (scenario, seed).
    Csv,
    /// A self-contained HTML page for people (`view::html::sweep`).
    Html,
}

impl ReportFormat {
    /// Every format, in the order a help text lists them.
    pub const ALL: [ReportFormat; 5] = [
        ReportFormat::Json,
        ReportFormat::Jsonl,
        ReportFormat::Junit,
        ReportFormat::Csv,
        ReportFormat::Html,
    ];

    /// Returns the format's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ReportFormat::Json => "json",
            ReportFormat::Jsonl => "jsonl",
            ReportFormat::Junit => "junit",
            ReportFormat::Csv => "csv",
            ReportFormat::Html => "html",
        }
    }

    /// Returns the format named `name` on the command line.
    ///
    /// ```
    /// use simtape_eval::sweep::ReportFormat;
    /// assert_eq!(ReportFormat::from_name("junit"), Some(ReportFormat::Junit));
    /// assert_eq!(ReportFormat::from_name("xml"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<ReportFormat> {
        ReportFormat::ALL
            .into_iter()
            .find(|format| format.name() == name)
    }

    /// Returns what the format holds, for a help text.
    pub fn description(self) -> &'static str {
        match self {
            ReportFormat::Json => {
                "The whole report: scenarios, per-seed results sorted by seed, summaries"
            }
            ReportFormat::Jsonl => {
                "One JSON object per (scenario, seed), in (scenario, seed) order"
            }
            ReportFormat::Junit => "JUnit XML: one test suite per scenario, one test case per seed",
            ReportFormat::Csv => {
                "`scenario,seed,verdict,reason,end_ns,events`, one row per (scenario, seed)"
            }
            ReportFormat::Html => {
                "One self-contained HTML page: pass rate, pass@k and pass^k curves, failure clusters, histograms, reproduce commands"
            }
        }
    }
}

/// Writes `report` in `format` to `path`, creating its directory first.
pub fn write_report(
    report: &SweepReport,
    format: ReportFormat,
    path: &Path,
) -> Result<(), ReportWriteError> {
    let io = |dir: &Path| {
        let dir = dir.to_path_buf();
        move |source| ReportWriteError { path: dir, source }
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::write(path, render(report, format)).map_err(io(path))
}

/// A report that could not be written: the directory or file named, and why. Fatal to the
/// command that writes it; the report itself is complete.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct ReportWriteError {
    /// The directory or file that could not be created.
    pub path: std::path::PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// Renders `report` in `format`.
pub fn render(report: &SweepReport, format: ReportFormat) -> String {
    match format {
        ReportFormat::Json => {
            let mut text = serde_json::to_string_pretty(report).expect("reports serialize");
            text.push('\n');
            text
        }
        ReportFormat::Jsonl => jsonl(report),
        ReportFormat::Junit => junit(report),
        ReportFormat::Csv => csv(report),
        ReportFormat::Html => crate::view::html::sweep::render(report),
    }
}

fn jsonl(report: &SweepReport) -> String {
    #[derive(Serialize)]
    struct Line<'a> {
        scenario: &'a str,
        #[serde(flatten)]
        result: &'a SeedResult,
    }
    let mut out = String::new();
    for scenario in &report.scenarios {
        for result in &scenario.results {
            let line = Line {
                scenario: &scenario.name,
                result,
            };
            out.push_str(&serde_json::to_string(&line).expect("records serialize"));
            out.push('\n');
        }
    }
    out
}

fn csv(report: &SweepReport) -> String {
    let mut out = String::from("scenario,seed,verdict,reason,end_ns,events\n");
    for scenario in &report.scenarios {
        for result in &scenario.results {
            let reason = result
                .reason
                .as_ref()
                .map(|r| format!("{}: {}", r.kind, r.first_line()))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{},{},{},{},{},{}",
                csv_field(&scenario.name),
                result.seed,
                result.verdict.label(),
                csv_field(&reason),
                result.end_ns,
                result.events
            );
        }
    }
    out
}

/// Quotes a CSV field (RFC 4180) when it holds a comma, a quote or a line break.
pub(crate) fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn junit(report: &SweepReport) -> String {
    let count = |verdict: VerdictKind| {
        report
            .scenarios
            .iter()
            .flat_map(|s| &s.results)
            .filter(|r| r.verdict == verdict)
            .count()
    };
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"simtape sweep {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
        report.seeds,
        report.runs(),
        count(VerdictKind::Fail),
        // JUnit knows no blocked: a run a policy stopped is an <error> of its policy's type.
        count(VerdictKind::Error) + count(VerdictKind::Blocked)
    );
    for scenario in &report.scenarios {
        junit_suite(&mut out, scenario);
    }
    out.push_str("</testsuites>\n");
    out
}

fn junit_suite(out: &mut String, scenario: &ScenarioResults) {
    let count = |verdict: VerdictKind| {
        scenario
            .results
            .iter()
            .filter(|r| r.verdict == verdict)
            .count()
    };
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">",
        xml_escape(&scenario.name),
        scenario.results.len(),
        count(VerdictKind::Fail),
        // JUnit knows no blocked: a run a policy stopped is an <error> of its policy's type.
        count(VerdictKind::Error) + count(VerdictKind::Blocked)
    );
    for result in &scenario.results {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"seed-{}\"",
            xml_escape(&scenario.name),
            result.seed
        );
        let Some(reason) = &result.reason else {
            out.push_str("/>\n");
            continue;
        };
        let element = if result.verdict == VerdictKind::Fail {
            "failure"
        } else {
            "error"
        };
        let mut body = reason.message.clone();
        if let Some(replay) = &result.replay {
            let _ = write!(body, "\nreplay: {replay}");
        }
        if let Some(tape) = &result.tape {
            let _ = write!(body, "\ntape: {tape}");
        }
        let _ = writeln!(
            out,
            ">\n      <{element} type=\"{}\" message=\"{}\">{}</{element}>\n    </testcase>",
            xml_escape(&reason.kind),
            xml_escape(reason.first_line()),
            xml_escape(&body)
        );
    }
    // One test case per property, judged over the sweep: a `sometimes` never hit fails.
    for tally in &scenario.summary.properties {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"property {}\"",
            xml_escape(&scenario.name),
            xml_escape(&tally.name)
        );
        if tally.unmet() || tally.violations > 0 {
            let line = xml_escape(&tally.line());
            let _ = writeln!(
                out,
                ">\n      <failure type=\"property\" message=\"{line}\">{line}</failure>\n    </testcase>"
            );
        } else {
            let _ = writeln!(
                out,
                "><system-out>{}</system-out></testcase>",
                xml_escape(&tally.line())
            );
        }
    }
    out.push_str("  </testsuite>\n");
}

/// Escapes text for XML content and attribute values (HTML too); control characters XML
/// 1.0 cannot hold become U+FFFD.
pub(crate) fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => {
                let _ = write!(out, "&#{};", u32::from(c));
            }
            c if u32::from(c) < 0x20 => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Renders the summary for people: per scenario the counts, pass@k and pass^k, failures by
/// reason, and the failing seeds with their replay commands; `reported` says whether a
/// report goes out beside it (which lists every failing seed the summary leaves out).
pub fn summary_text(report: &SweepReport, reported: bool) -> String {
    let mut out = String::new();
    let shard = report
        .shard
        .map(|s| format!(" (shard {s})"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "sweep: seeds {}{shard}, {} scenario(s), {} run(s){}",
        report.seeds,
        report.scenarios.len(),
        report.runs(),
        if report.partial {
            ", PARTIAL: stopped before every seed ran"
        } else {
            ""
        }
    );
    for scenario in &report.scenarios {
        scenario_text(&mut out, scenario, reported);
    }
    out.push_str(&super::agents::text(report));
    for (scenario, tally) in report.unmet_properties() {
        let _ = writeln!(
            out,
            "FAIL: {scenario}: {} property {:?} was never hit in {} run(s): the sweep never \
             reached the state it names",
            tally.kind, tally.name, tally.runs
        );
    }
    out
}

fn scenario_text(out: &mut String, scenario: &ScenarioResults, reported: bool) {
    let summary = &scenario.summary;
    let rate = match (&summary.pass_rate, summary.pass_rate_value) {
        (Some(exact), Some(value)) => format!("pass rate {exact} = {value:.4}"),
        _ => "no runs".to_string(),
    };
    let _ = writeln!(
        out,
        "scenario {} ({}): {} run(s), {} passed, {rate}",
        scenario.name, scenario.path, summary.runs, summary.passed
    );
    if !summary.k.is_empty() {
        let _ = writeln!(out, "  {:>6}  {:<28}  pass^k", "k", "pass@k");
        for row in &summary.k {
            let (at, hat) = row.cells();
            let _ = writeln!(out, "  {:>6}  {at:<28}  {hat}", row.k);
        }
    }
    if let Some(retries) = summary.retries {
        let _ = writeln!(
            out,
            "  agent retries (faults met and survived): {} in {} of {} run(s), at most {} in one",
            retries.total, retries.runs, summary.runs, retries.max
        );
    }
    if let Some(harness) = &summary.harness {
        harness_text(out, harness, summary.runs);
    }
    if !summary.properties.is_empty() {
        let _ = writeln!(out, "  properties:");
        for tally in &summary.properties {
            let _ = writeln!(out, "    {}", tally.line());
        }
    }
    if summary.failures.is_empty() {
        return;
    }
    let _ = writeln!(out, "  failures by reason:");
    for group in &summary.failures {
        let _ = writeln!(
            out,
            "    {} seed(s): {}: {}",
            group.count, group.kind, group.message
        );
    }
    let failing: Vec<&SeedResult> = scenario
        .results
        .iter()
        .filter(|r| r.verdict != VerdictKind::Pass)
        .collect();
    let _ = writeln!(out, "  failing seeds:");
    for result in failing.iter().take(FAILING_SEEDS_SHOWN_MAX) {
        let kind = result.reason.as_ref().map_or("", |r| r.kind.as_str());
        let replay = result.replay.as_deref().unwrap_or("");
        let _ = write!(out, "    seed {} ({kind}): {replay}", result.seed);
        if let Some(tape) = &result.tape {
            let _ = write!(out, "  [tape {tape}]");
        }
        out.push('\n');
    }
    if failing.len() > FAILING_SEEDS_SHOWN_MAX {
        let whole = match reported {
            true => "the report lists them all",
            false => "--report-out FILE writes a report that lists them all",
        };
        let _ = writeln!(
            out,
            "    … and {} more ({whole})",
            failing.len() - FAILING_SEEDS_SHOWN_MAX
        );
    }
}

/// The harness numbers of a scenario's runs: done, sessions to done, per feature, waste,
/// broken invariants.
fn harness_text(out: &mut String, harness: &crate::harness::HarnessSummary, runs: u64) {
    let _ = writeln!(out, "  harness: done in {}/{runs} run(s)", harness.done);
    if !harness.sessions_to_done.is_empty() {
        let counts: Vec<String> = harness
            .sessions_to_done
            .iter()
            .map(|(sessions, count)| format!("{sessions}: {count}"))
            .collect();
        let _ = writeln!(out, "    sessions to done: {}", counts.join(", "));
    }
    let features: Vec<String> = harness
        .feature_pass_rates
        .iter()
        .map(|(feature, rate)| format!("{feature} {rate}"))
        .collect();
    let _ = writeln!(out, "    features passing: {}", features.join(", "));
    let _ = writeln!(
        out,
        "    wasted sessions: {} ({} crashed)",
        harness.wasted_sessions, harness.crashed_sessions
    );
    for (invariant, seeds) in &harness.broken {
        let _ = writeln!(out, "    broken on {} seed(s): {invariant}", seeds.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_and_csv_escape_what_they_must() {
        // Goal: markup, quotes, line breaks and control characters cannot break the XML or
        // the CSV row.
        assert_eq!(
            xml_escape("a<b>&\"c\"'\n\u{1}"),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;&#10;\u{fffd}"
        );
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
    }
}
