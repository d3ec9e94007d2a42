//! A sweep report as a page: per scenario the pass rate, pass@k and pass^k plotted against k,
//! the failure clusters with their seeds, histograms of virtual run durations, of timer
//! events and (with an agent) of model calls per run, and each failing seed's reproduce
//! command.

use std::fmt::Write as _;

use serde::Serialize;

use super::{escape, page, Scripts};
use crate::estimate::KRow;
use crate::sweep::{ScenarioResults, SweepReport};
use crate::VerdictKind;

/// At most this many seeds are listed under a failure cluster (the count is exact).
const CLUSTER_SEEDS_SHOWN_MAX: usize = 200;
/// At most this many failing seeds get their reproduce commands on the page.
const REPRODUCE_SHOWN_MAX: usize = 500;

/// One scenario as the page's script reads it.
#[derive(Debug, Serialize)]
struct ScenarioData<'a> {
    name: &'a str,
    k: &'a [KRow],
    /// Virtual durations of the runs, nanoseconds, in seed order.
    end_ns: Vec<u64>,
    /// Timer events of the runs, in seed order.
    events: Vec<u64>,
    /// Model calls of the runs (0 for a run without an agent), in seed order; `None` when no
    /// run had an agent.
    model_calls: Option<Vec<u64>>,
    /// One letter per run in seed order: `p`, `f` or `e`.
    verdicts: String,
}

/// The page's own script: per scenario, the k plot and the two histograms.
const MAIN: &str = r#"const data = simtapeData("data");
data.scenarios.forEach((scenario, i) => {
  const section = document.querySelectorAll("section.scenario")[i];
  simtapeKPlot(section.querySelector(".kplot"), scenario.k);
  simtapeHistogram(section.querySelector(".hist-duration"), scenario.end_ns, scenario.verdicts, simtapeDuration);
  simtapeHistogram(section.querySelector(".hist-events"), scenario.events, scenario.verdicts, (v) => String(Math.round(v)));
  if (scenario.model_calls) simtapeHistogram(section.querySelector(".hist-model"), scenario.model_calls, scenario.verdicts, (v) => String(Math.round(v)));
});
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const text = button.previousElementSibling.textContent;
  const done = () => { button.textContent = "copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => simtapeSelect(button.previousElementSibling));
  } else {
    simtapeSelect(button.previousElementSibling);
  }
});
"#;

/// Renders the sweep page.
pub fn render(report: &SweepReport) -> String {
    let runs: u64 = report.runs();
    let meta = format!(
        "{} · seeds {}..{}{} · {runs} run(s){}",
        escape(&report.format),
        report.seeds.start,
        report.seeds.end,
        report
            .shard
            .map(|s| format!(" · shard {}/{}", s.index, s.count))
            .unwrap_or_default(),
        if report.partial {
            " · partial (interrupted)"
        } else {
            ""
        },
    );
    let mut body = agents(report);
    let mut data = Vec::new();
    for scenario in &report.scenarios {
        body.push_str(&section(scenario));
        data.push(ScenarioData {
            name: &scenario.name,
            k: &scenario.summary.k,
            end_ns: scenario.results.iter().map(|r| r.end_ns).collect(),
            events: scenario.results.iter().map(|r| r.events).collect(),
            model_calls: has_agent(scenario).then(|| {
                scenario
                    .results
                    .iter()
                    .map(|r| r.model_calls.unwrap_or(0))
                    .collect()
            }),
            verdicts: scenario
                .results
                .iter()
                .map(|r| match r.verdict {
                    VerdictKind::Pass => 'p',
                    VerdictKind::Fail => 'f',
                    VerdictKind::Error => 'e',
                    VerdictKind::Blocked => 'b',
                })
                .collect(),
        });
    }
    let names: Vec<&str> = report.scenarios.iter().map(|s| s.name.as_str()).collect();
    page(
        &format!("sweep · {}", names.join(", ")),
        &meta,
        &body,
        &serde_json::json!({ "scenarios": data }),
        Scripts::Sweep,
        MAIN,
    )
}

/// The paired comparison of every two agents of a scenario run by several (each agent's own
/// pass rate and pass@k are its `S@AGENT` section below).
fn agents(report: &SweepReport) -> String {
    if report.agents.is_empty() {
        return String::new();
    }
    let mut out = String::from(concat!(
        r#"<section class="agents"><div class="panel"><h2>Agents compared seed by seed</h2>"#,
        r#"<p class="summary-note">Each agent ran the same seeds, which drew the same faults; "#,
        r#"the seeds one passed and the other did not decide the exact sign (McNemar) test.</p>"#,
        r#"<table><tr><th>scenario</th><th>a</th><th>b</th><th>seeds</th><th>only a passed</th>"#,
        r#"<th>only b passed</th><th>p</th><th>finding</th></tr>"#,
    ));
    let list = |seeds: &[u64]| {
        let shown: Vec<String> = seeds.iter().map(u64::to_string).collect();
        format!(
            "{} <span class=\"mono\">[{}]</span>",
            seeds.len(),
            shown.join(", ")
        )
    };
    for pair in &report.agents {
        let _ = write!(
            out,
            "<tr><td>{scenario}</td><td>{a}</td><td>{b}</td><td>{seeds}</td><td>{only_a}</td><td>{only_b}</td><td class=\"mono\">{p}</td><td>{finding}</td></tr>",
            scenario = escape(&pair.scenario),
            a = escape(&pair.a),
            b = escape(&pair.b),
            seeds = pair.seeds,
            only_a = list(&pair.only_a),
            only_b = list(&pair.only_b),
            p = escape(pair.test.p_value.as_deref().unwrap_or("—")),
            finding = escape(&pair.finding()),
        );
    }
    out.push_str("</table></div></section>\n");
    out
}

/// Whether any run of `scenario` had an agent (so counted model calls).
fn has_agent(scenario: &ScenarioResults) -> bool {
    scenario.results.iter().any(|r| r.model_calls.is_some())
}

fn section(scenario: &ScenarioResults) -> String {
    let summary = &scenario.summary;
    let rate = summary.pass_rate.as_deref().unwrap_or("no runs");
    let mut out = format!(
        "<section class=\"scenario\" data-scenario=\"{name}\"><h2>{name} <span class=\"summary-note\">{path}</span></h2>\n\
         <div class=\"panel\"><span class=\"big pass-rate\">{value}</span> pass rate · {passed} of {runs} run(s) passed <code>{rate}</code></div>\n\
         <div class=\"side-by-side\"><div class=\"panel\"><h2>pass@k and pass^k against k</h2><div class=\"kplot\"></div></div>\
         <div class=\"panel\"><h2>Failure clusters</h2>{clusters}</div></div>\n\
         <div class=\"side-by-side\"><div class=\"panel\"><h2>Virtual run duration</h2><div class=\"hist-duration\"></div></div>\
         <div class=\"panel\"><h2>Timer events per run</h2><div class=\"hist-events\"></div></div>{model}</div>\n",
        model = if has_agent(scenario) {
            "<div class=\"panel\"><h2>Model calls per run</h2><div class=\"hist-model\"></div></div>"
        } else {
            ""
        },
        name = escape(&scenario.name),
        path = escape(&scenario.path),
        value = summary
            .pass_rate_value
            .map_or("—".to_string(), |v| format!("{:.1}%", v * 100.0)),
        passed = summary.passed,
        runs = summary.runs,
        rate = escape(rate),
        clusters = clusters(scenario),
    );
    out.push_str(&properties(scenario));
    out.push_str(&reproduce(scenario));
    out.push_str("</section>\n");
    out
}

/// The scenario's properties over the sweep, one row each; a failed or never-hit one marked.
fn properties(scenario: &ScenarioResults) -> String {
    let tallies = &scenario.summary.properties;
    if tallies.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<div class=\"panel properties\"><h2>Properties</h2><table><tr><th>kind</th><th>property</th><th>hit</th><th>failed</th><th>seeds</th></tr>",
    );
    for tally in tallies {
        let seeds: Vec<String> = tally.seeds.iter().map(u64::to_string).collect();
        let class = if tally.unmet() || tally.violations > 0 {
            "cluster"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr class=\"{class}\"><td>{kind}</td><td>{name}{never}</td><td>{hits} of {runs}</td><td>{violations}</td><td class=\"mono\">{seeds}</td></tr>",
            kind = tally.kind,
            name = escape(&tally.name),
            never = if tally.unmet() { " <b>never hit</b>" } else { "" },
            hits = tally.hits,
            runs = tally.runs,
            violations = tally.violations,
            seeds = seeds.join(", "),
        );
    }
    out.push_str("</table></div>\n");
    out
}

fn clusters(scenario: &ScenarioResults) -> String {
    let failures = &scenario.summary.failures;
    if failures.is_empty() {
        return "<p class=\"summary-note\">No failures.</p>".into();
    }
    let mut out = String::from("<table><tr><th>runs</th><th>reason</th></tr>");
    for group in failures {
        let seeds: Vec<String> = group
            .seeds
            .iter()
            .take(CLUSTER_SEEDS_SHOWN_MAX)
            .map(u64::to_string)
            .collect();
        let more = group.seeds.len().saturating_sub(CLUSTER_SEEDS_SHOWN_MAX);
        let _ = write!(
            out,
            "<tr class=\"cluster\"><td>{count}</td><td><b>{kind}</b>: <code>{message}</code><div class=\"seeds mono\">seeds {seeds}{more}</div></td></tr>",
            count = group.count,
            kind = escape(&group.kind),
            message = escape(&group.message),
            seeds = seeds.join(", "),
            more = if more > 0 { format!(" … and {more} more") } else { String::new() },
        );
    }
    out.push_str("</table>");
    out
}

fn reproduce(scenario: &ScenarioResults) -> String {
    let failing: Vec<_> = scenario
        .results
        .iter()
        .filter(|r| r.verdict != VerdictKind::Pass)
        .collect();
    if failing.is_empty() {
        return String::new();
    }
    let mut out = String::from("<div class=\"panel reproduce\"><h2>Reproduce a failing seed</h2><table><tr><th>seed</th><th>verdict</th><th>command</th></tr>");
    for result in failing.iter().take(REPRODUCE_SHOWN_MAX) {
        let command = result
            .replay
            .clone()
            .unwrap_or_else(|| format!("simtape run {} --seed {}", scenario.path, result.seed));
        let mut commands = vec![command];
        if let Some(tape) = &result.tape {
            commands.push(format!(
                "simtape tape report {tape} -o seed-{}.html",
                result.seed
            ));
        }
        let cells: String = commands
            .iter()
            .map(|c| {
                format!(
                    "<div><code>{}</code><button class=\"copy\">copy</button></div>",
                    escape(c)
                )
            })
            .collect();
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"{v}\">{v}</td><td>{cells}</td></tr>",
            result.seed,
            v = result.verdict.label(),
        );
    }
    let more = failing.len().saturating_sub(REPRODUCE_SHOWN_MAX);
    if more > 0 {
        let _ = write!(
            out,
            "<tr><td colspan=\"3\">… and {more} more (the JSON report has them all)</td></tr>"
        );
    }
    out.push_str("</table></div>\n");
    out
}
