//! Two sweeps compared, as a page (`simtape report diff OLD NEW --html OUT`): per scenario
//! the paired test, the pass rate and pass^k of each side with their intervals, and the
//! failure clusters that are new, resolved or ongoing with their seeds.

use std::fmt::Write as _;

use super::{escape, page, Scripts};
use crate::sweep::diff::{ClusterStatus, ScenarioDiff, SweepDiff, SweepSide};

/// At most this many seeds are listed per cluster and side (the counts are exact).
const SEEDS_SHOWN_MAX: usize = 50;

/// Renders the diff page; `old` and `new` name the two reports.
pub fn render(diff: &SweepDiff, old: &str, new: &str) -> String {
    let meta = format!(
        "{} · old {} · new {}",
        escape(&diff.format),
        escape(old),
        escape(new)
    );
    let mut body = String::new();
    for name in &diff.only_old {
        let _ = write!(
            body,
            "<p class=\"summary-note\">scenario {} is only in the old report</p>",
            escape(name)
        );
    }
    for name in &diff.only_new {
        let _ = write!(
            body,
            "<p class=\"summary-note\">scenario {} is only in the new report</p>",
            escape(name)
        );
    }
    for scenario in &diff.scenarios {
        body.push_str(&section(scenario));
    }
    page(
        "sweep diff",
        &meta,
        &body,
        &serde_json::json!({ "diff": diff }),
        Scripts::Sweep,
        "",
    )
}

fn section(scenario: &ScenarioDiff) -> String {
    let paired = &scenario.paired;
    let p = paired
        .p_value
        .as_deref()
        .unwrap_or("not computed (too many discordant seeds)");
    let mut out = format!(
        "<section class=\"scenario\" data-scenario=\"{name}\"><h2>{name}</h2>\n\
         <div class=\"panel paired\"><span class=\"big\">{direction}</span> · exact paired sign test on {common} common seed(s): \
         <b>b = {b}</b> passed before and not after, <b>c = {c}</b> the reverse, <b>p = {p}</b>{left_out}</div>\n",
        name = escape(&scenario.name),
        direction = paired.direction.label(),
        common = scenario.common_seeds,
        b = paired.b,
        c = paired.c,
        p = escape(p),
        left_out = left_out(scenario),
    );
    out.push_str("<div class=\"side-by-side\">");
    out.push_str(&side_panel("old", &scenario.old));
    out.push_str(&side_panel("new", &scenario.new));
    out.push_str("</div>\n<div class=\"panel\"><h2>Failure clusters</h2>");
    if scenario.clusters.is_empty() {
        out.push_str("<p class=\"summary-note\">No failures on either side.</p>");
    } else {
        out.push_str(
            "<table><tr><th>status</th><th>cluster</th><th>old seeds</th><th>new seeds</th></tr>",
        );
        for change in &scenario.clusters {
            let _ = write!(
                out,
                "<tr class=\"cluster {status}\"><td>{status}</td><td><b>{kind}</b> ({verdict}): <code>{reason}</code></td><td class=\"mono\">{old}</td><td class=\"mono\">{new}</td></tr>",
                status = change.status.label(),
                kind = escape(&change.cluster.kind),
                verdict = change.cluster.verdict.label(),
                reason = escape(&change.cluster.reason),
                old = seeds(&change.old_seeds),
                new = seeds(&change.new_seeds),
            );
        }
        out.push_str("</table>");
    }
    let counts = [
        ClusterStatus::New,
        ClusterStatus::Resolved,
        ClusterStatus::Ongoing,
    ]
    .map(|status| {
        let n = scenario
            .clusters
            .iter()
            .filter(|c| c.status == status)
            .count();
        format!("{n} {}", status.label())
    });
    let _ = write!(
        out,
        "<p class=\"summary-note\">{}</p></div>\n</section>\n",
        counts.join(" · ")
    );
    out
}

fn left_out(scenario: &ScenarioDiff) -> String {
    if scenario.only_old_seeds == 0 && scenario.only_new_seeds == 0 {
        return String::new();
    }
    format!(
        "<div class=\"summary-note\">the seed sets differ: only the common seeds are compared \
         ({} only in old, {} only in new, left out)</div>",
        scenario.only_old_seeds, scenario.only_new_seeds
    )
}

fn side_panel(label: &str, side: &SweepSide) -> String {
    let mut out = format!(
        "<div class=\"panel\"><h2>{label}: {} of {} passed</h2><table><tr><th>k</th><th>pass^k</th><th>95 % interval</th></tr>",
        side.passed, side.runs
    );
    for row in &side.k {
        let _ = write!(
            out,
            "<tr><td>{}</td><td><code>{} = {:.4}</code></td><td><code>{}</code></td></tr>",
            row.k,
            escape(&row.pass_hat_k),
            row.pass_hat_k_value,
            row.interval
        );
    }
    out.push_str("</table></div>");
    out
}

fn seeds(list: &[u64]) -> String {
    let shown: Vec<String> = list
        .iter()
        .take(SEEDS_SHOWN_MAX)
        .map(u64::to_string)
        .collect();
    let more = list.len().saturating_sub(SEEDS_SHOWN_MAX);
    match more {
        0 => shown.join(", "),
        _ => format!("{} … and {more} more", shown.join(", ")),
    }
}
