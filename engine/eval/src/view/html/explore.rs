//! An exploration's report as a page: the totals, the failure clusters by runs to first
//! failure (where each came from), and the coverage curve (things reached against runs) with
//! each cluster's first failure marked on it. Drawn as inline SVG here, so the page needs no
//! script of its own.

use std::fmt::Write as _;

use super::{escape, page, Scripts};
use crate::explore::ExploreReport;

/// The plot's drawing area, in SVG units.
const PLOT_WIDTH: u64 = 640;
const PLOT_HEIGHT: u64 = 200;
/// Room for the axis labels around the drawing area.
const MARGIN: u64 = 36;

/// Renders the exploration page of `report`, an exploration of the scenario `scenario`.
pub fn render(report: &ExploreReport, scenario: &str) -> String {
    let meta = format!(
        "strategy {} · exploration seed {} · {}",
        report.strategy.name(),
        report.seed,
        escape(&report.totals())
    );
    let mut body = String::from(
        "<section class=\"explore\"><div class=\"panel\"><h2>Failure clusters, by runs to first failure</h2>",
    );
    if report.clusters.is_empty() {
        body.push_str("<p class=\"summary-note\">No failure found.</p>");
    } else {
        body.push_str(
            "<table><tr><th>first failure at run</th><th>cluster</th><th>failing runs</th><th>first at seed</th><th>from</th></tr>",
        );
        for found in &report.clusters {
            let _ = write!(
                body,
                "<tr class=\"cluster\"><td>{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td><td>{}</td></tr>",
                found.first_run,
                escape(&found.cluster.to_string()),
                found.runs,
                found.seed,
                escape(&found.origin.to_string())
            );
        }
        body.push_str("</table>");
    }
    body.push_str("</div>\n<div class=\"panel\"><h2>Coverage: things reached against runs</h2>");
    body.push_str(&coverage_plot(report));
    body.push_str(
        "<p class=\"summary-note\">A point at each run that reached something new (a fault on a new target, a new count of faults, retries or model calls, a property hit, a failure cluster); a dashed line at each cluster's first failure. A curve that has flattened says more runs of this kind are unlikely to find more.</p></div></section>\n",
    );
    page(
        &format!("explore · {scenario}"),
        &meta,
        &body,
        &serde_json::json!({}),
        Scripts::Sweep,
        "",
    )
}

/// The coverage curve as a step line, integer coordinates only.
fn coverage_plot(report: &ExploreReport) -> String {
    let runs = report.runs.max(1);
    let most = report
        .coverage
        .iter()
        .map(|point| point.features)
        .max()
        .unwrap_or(0)
        .max(1);
    let x = |run: u64| MARGIN + run.min(runs) * PLOT_WIDTH / runs;
    let y = |features: u64| MARGIN + PLOT_HEIGHT - features.min(most) * PLOT_HEIGHT / most;
    let mut path = format!("M{} {}", x(0), y(0));
    let mut points = String::new();
    let mut last = 0;
    for point in &report.coverage {
        let _ = write!(path, " H{} V{}", x(point.run), y(point.features));
        let _ = write!(
            points,
            "<circle class=\"point at\" cx=\"{}\" cy=\"{}\" r=\"3\"><title>run {}: {} thing(s) reached</title></circle>",
            x(point.run),
            y(point.features),
            point.run,
            point.features
        );
        last = point.features;
    }
    let _ = write!(path, " H{}", x(runs));
    let mut marks = String::new();
    for found in &report.clusters {
        let _ = write!(
            marks,
            "<line class=\"divergence\" x1=\"{x}\" x2=\"{x}\" y1=\"{top}\" y2=\"{bottom}\"><title>run {run}: first failure of {cluster}</title></line>",
            x = x(found.first_run),
            top = MARGIN,
            bottom = MARGIN + PLOT_HEIGHT,
            run = found.first_run,
            cluster = escape(&found.cluster.to_string())
        );
    }
    format!(
        "<svg class=\"plot coverage\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"coverage curve: {last} things reached in {runs} runs\">\
         <line class=\"gridline\" x1=\"{m}\" x2=\"{right}\" y1=\"{top}\" y2=\"{top}\"/>\
         <line class=\"gridline\" x1=\"{m}\" x2=\"{right}\" y1=\"{bottom}\" y2=\"{bottom}\"/>\
         <text x=\"4\" y=\"{top_label}\">{most}</text><text x=\"4\" y=\"{bottom}\">0</text>\
         <text x=\"{m}\" y=\"{axis}\">run 0</text><text x=\"{right_label}\" y=\"{axis}\">run {runs}</text>\
         {marks}<path class=\"curve at\" d=\"{path}\"/>{points}</svg>",
        w = PLOT_WIDTH + 2 * MARGIN,
        h = PLOT_HEIGHT + 2 * MARGIN,
        m = MARGIN,
        right = MARGIN + PLOT_WIDTH,
        right_label = MARGIN + PLOT_WIDTH - 40,
        top = MARGIN,
        top_label = MARGIN + 4,
        bottom = MARGIN + PLOT_HEIGHT,
        axis = MARGIN + PLOT_HEIGHT + 20,
    )
}
