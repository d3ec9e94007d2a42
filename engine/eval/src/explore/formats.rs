//! An exploration's report in the sweep report's formats ([`ReportFormat`]): JSON (the whole
//! report), JSON lines and CSV (one line per failure cluster, with its runs to first failure),
//! JUnit XML (one test case per cluster, so a CI shows what explore found as failed tests)
//! and a page (`view::html::explore`: the clusters and the coverage curve). The text for a
//! terminal is the CLI's.

use std::fmt::Write as _;

use serde::Serialize;

use super::{ClusterFound, ExploreReport};
use crate::sweep::formats::{csv_field, xml_escape};
use crate::sweep::ReportFormat;

/// Renders `report`, an exploration of the scenario named `scenario`, in `format`.
pub fn render(report: &ExploreReport, scenario: &str, format: ReportFormat) -> String {
    match format {
        ReportFormat::Json => {
            let mut text = serde_json::to_string_pretty(report).expect("a report serializes");
            text.push('\n');
            text
        }
        ReportFormat::Jsonl => jsonl(report, scenario),
        ReportFormat::Junit => junit(report, scenario),
        ReportFormat::Csv => csv(report, scenario),
        ReportFormat::Html => crate::view::html::explore::render(report, scenario),
    }
}

fn jsonl(report: &ExploreReport, scenario: &str) -> String {
    #[derive(Serialize)]
    struct Line<'a> {
        scenario: &'a str,
        #[serde(flatten)]
        found: &'a ClusterFound,
    }
    let mut out = String::new();
    for found in &report.clusters {
        let line = Line { scenario, found };
        out.push_str(&serde_json::to_string(&line).expect("a cluster serializes"));
        out.push('\n');
    }
    out
}

fn csv(report: &ExploreReport, scenario: &str) -> String {
    let mut out = String::from("scenario,cluster,verdict,reason,first_run,runs,seed,origin\n");
    for found in &report.clusters {
        let reason = format!("{}: {}", found.cluster.kind, found.cluster.reason);
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{}",
            csv_field(scenario),
            found.cluster.id(),
            found.cluster.verdict.label(),
            csv_field(&reason),
            found.first_run,
            found.runs,
            found.seed,
            csv_field(&found.origin.to_string())
        );
    }
    out
}

fn junit(report: &ExploreReport, scenario: &str) -> String {
    let failures = report.clusters.len();
    let tests = failures.max(1);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"simtape explore {} (strategy {}, seed {})\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">",
        xml_escape(scenario),
        report.strategy.name(),
        report.seed
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">",
        xml_escape(scenario)
    );
    let totals = report.totals();
    if report.clusters.is_empty() {
        let _ = writeln!(
            out,
            "    <testcase classname=\"{}\" name=\"no failure found\"><system-out>{}</system-out></testcase>",
            xml_escape(scenario),
            xml_escape(&totals)
        );
    }
    for found in &report.clusters {
        let body = format!(
            "{}\nruns to first failure: {}\nfailing runs: {}\nfirst at seed {}, {}\n{totals}",
            found.cluster, found.first_run, found.runs, found.seed, found.origin
        );
        // A cluster is a failure the search found, whatever its verdict: one <failure> each,
        // typed by the reason's kind.
        let _ = writeln!(
            out,
            "    <testcase classname=\"{}\" name=\"cluster {}\">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>",
            xml_escape(scenario),
            found.cluster.id(),
            xml_escape(&found.cluster.kind),
            xml_escape(&found.cluster.to_string()),
            xml_escape(&body)
        );
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
