//! A tape as a page: the timeline (swimlanes per actor and task, the same slices as the trace
//! export), a payload panel that a click fills, the agent's turns as a transcript, the
//! changes to the file tree, the verifiers and the verdict. `collect.rs` reads the tape; this
//! module writes the page.

mod collect;

use std::fmt::Write as _;

use serde_json::json;

pub use collect::{
    Beyond, FsChange, TapeView, TimelineData, TrackData, VerifierFinding, Window, ITEMS_MAX,
    PAYLOAD_BYTES_MAX,
};

use super::{duration, escape, page, Scripts};
use crate::view::describe::TranscriptMessage;

/// The page's own script: the timeline and the payload panel.
const MAIN: &str = r#"const data = simtapeData("data");
const panel = document.getElementById("payload");
const view = simtapeTimeline(document.getElementById("timeline"), data.timeline, {
  onSelect: (kind, index) => simtapeShowPayload(panel, data.timeline, kind, index),
});
simtapeToolbar(document.getElementById("toolbar"), [view]);
"#;

/// Renders the tape page; `source` names the tape (its path, as given).
pub fn render(view: &TapeView, source: &str) -> String {
    render_with(view, source, None)
}

/// Renders the tape page of a failing run with `simtape explain`'s curve drawn above its
/// timeline, on the same time axis: the share of forked futures that fail the same way at
/// each point, and the moment the failure became nearly certain.
pub fn render_explained(
    view: &TapeView,
    source: &str,
    explanation: &crate::explain::Explanation,
) -> String {
    render_with(view, source, Some(explanation))
}

fn render_with(
    view: &TapeView,
    source: &str,
    explanation: Option<&crate::explain::Explanation>,
) -> String {
    let header = &view.header;
    let verdict_class = verdict_class(&view.verdict);
    let meta = format!(
        "{} · scenario {} · seed {} · {} records · ends at {} virtual · <span class=\"badge {verdict_class}\">{}</span>",
        escape(source),
        escape(&header.scenario.name),
        header.seed,
        view.records,
        duration(view.timeline.end_ns),
        escape(verdict_class),
    );
    let mut body = String::new();
    body.push_str("<div class=\"layout\"><section>\n");
    if let Some(explanation) = explanation {
        body.push_str(&curve_panel(explanation, view.timeline.end_ns));
    }
    body.push_str("<h2>Timeline</h2>\n<div class=\"toolbar\" id=\"toolbar\"></div>\n<div id=\"timeline\"></div>\n");
    body.push_str(&beyond_note(view, source));
    body.push_str("</section>\n<aside>\n");
    body.push_str(&payload_panel("payload"));
    let _ = writeln!(
        body,
        "<div class=\"panel\" id=\"verdict\"><h2>Verdict</h2><p><span class=\"badge {verdict_class}\">{}</span> <code>{}</code></p>{}</div>",
        escape(verdict_class),
        escape(&view.verdict),
        findings_table(&view.findings)
    );
    body.push_str(&fs_table(&view.fs_changes));
    body.push_str("</aside></div>\n");
    body.push_str(&transcript(&view.transcript));
    let data = json!({ "timeline": &view.timeline });
    page(
        &format!("tape · {} · seed {}", header.scenario.name, header.seed),
        &meta,
        &body,
        &data,
        Scripts::Timeline,
        MAIN,
    )
}

/// The curve's drawing size, in SVG units.
const CURVE_WIDTH: u64 = 1000;
const CURVE_HEIGHT: u64 = 160;

/// The explain curve as an SVG on the run's time axis (0 to its end, as the timeline opens),
/// each point with its share as a tooltip, the point of no return marked, and the points as a
/// table below it.
fn curve_panel(explanation: &crate::explain::Explanation, end_ns: u64) -> String {
    let end = end_ns.max(1);
    let x = |t_ns: u64| u128::from(t_ns.min(end)) * u128::from(CURVE_WIDTH) / u128::from(end);
    let y = |same: u32, forks: u32| {
        CURVE_HEIGHT - u64::from(same) * CURVE_HEIGHT / u64::from(forks.max(1))
    };
    let mut svg = format!(
        "<svg id=\"explain-curve\" viewBox=\"-10 -10 {} {}\" width=\"100%\" role=\"img\" \
         aria-label=\"share of futures that fail the same way, along the run\">",
        CURVE_WIDTH + 20,
        CURVE_HEIGHT + 20
    );
    let _ = write!(
        svg,
        "<line x1=\"0\" y1=\"{CURVE_HEIGHT}\" x2=\"{CURVE_WIDTH}\" y2=\"{CURVE_HEIGHT}\" stroke=\"currentColor\" stroke-opacity=\"0.3\"/>\
         <line x1=\"0\" y1=\"0\" x2=\"{CURVE_WIDTH}\" y2=\"0\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/>"
    );
    if let Some(index) = explanation.inevitable {
        let at = x(explanation.curve[index].t_ns);
        let _ = write!(
            svg,
            "<line class=\"inevitable\" x1=\"{at}\" y1=\"0\" x2=\"{at}\" y2=\"{CURVE_HEIGHT}\" stroke=\"#c0392b\" stroke-dasharray=\"6 4\"/>"
        );
    }
    let points: Vec<String> = explanation
        .curve
        .iter()
        .map(|placed| {
            format!(
                "{},{}",
                x(placed.t_ns),
                y(placed.point.same, placed.point.forks)
            )
        })
        .collect();
    let _ = write!(
        svg,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#2c6fbb\" stroke-width=\"2\"/>",
        points.join(" ")
    );
    for placed in &explanation.curve {
        let point = placed.point;
        let _ = write!(
            svg,
            "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"#2c6fbb\"><title>record {} at {}: {}/{} fail the same way</title></circle>",
            x(placed.t_ns),
            y(point.same, point.forks),
            point.record,
            duration(placed.t_ns),
            point.same,
            point.forks
        );
    }
    svg.push_str("</svg>");
    let said = match explanation.inevitable {
        Some(0) => "nearly certain from the start".to_string(),
        Some(index) => format!(
            "nearly certain after record {} ({})",
            explanation.curve[index - 1].point.record,
            escape(&explanation.curve[index - 1].decided.join(", "))
        ),
        None => "never nearly certain".to_string(),
    };
    let mut rows = String::new();
    for placed in &explanation.curve {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td></tr>",
            placed.point.record,
            duration(placed.t_ns),
            placed.point.same,
            placed.point.forks,
            escape(&placed.decided.join(", "))
        );
    }
    format!(
        "<div class=\"panel\" id=\"explain\"><h2>When the failure became certain</h2>\
         <p class=\"summary-note\"><code>{}</code>: {said} (at least {}/{} of the forks).</p>{svg}\
         <table><tr><th>record</th><th>at</th><th>same failure</th><th>then decided</th></tr>{rows}</table></div>\n",
        escape(&explanation.failure),
        explanation.nearly.0,
        explanation.nearly.1
    )
}

/// Returns the CSS class of a verdict line: `pass`, `fail` or `error`.
pub(crate) fn verdict_class(verdict: &str) -> &'static str {
    if verdict.starts_with("fail") {
        "fail"
    } else if verdict == "ok" || verdict.starts_with("pass") {
        "pass"
    } else {
        "error"
    }
}

/// The empty panel a click fills.
pub(crate) fn payload_panel(id: &str) -> String {
    format!(
        "<div class=\"panel\" id=\"{id}\"><h2>Record</h2><div class=\"payload-title\">Click a slice or an instant.</div><pre class=\"payload-body\"></pre></div>\n"
    )
}

/// At most this many lanes are listed under "Not drawn".
const BEYOND_LANES_SHOWN_MAX: usize = 100;

fn beyond_note(view: &TapeView, source: &str) -> String {
    let beyond = &view.timeline.beyond;
    if beyond.is_empty() {
        return String::new();
    }
    let items: u64 = beyond.iter().map(|b| b.items).sum();
    let mut out = format!(
        "<div class=\"panel\" id=\"beyond\"><h2>Not drawn: {items} slices and instants on {} lanes</h2>\
         <p class=\"summary-note\">The page draws at most {ITEMS_MAX} slices and instants (and, with \
         <code>--from</code>/<code>--to</code>, only that window). Per lane, what it left out; open a \
         window of the run with <code>simtape tape report {} --from T --to T -o w.html</code>.</p>\
         <table><tr><th>lane</th><th>items</th><th>from</th><th>to</th></tr>",
        beyond.len(),
        escape(source)
    );
    for b in beyond.iter().take(BEYOND_LANES_SHOWN_MAX) {
        let _ = write!(
            out,
            "<tr><td>{} · {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&b.lane.group),
            escape(&b.lane.name),
            b.items,
            duration(b.from_ns),
            duration(b.to_ns)
        );
    }
    if beyond.len() > BEYOND_LANES_SHOWN_MAX {
        let more = beyond.len() - BEYOND_LANES_SHOWN_MAX;
        let _ = write!(
            out,
            "<tr><td colspan=\"4\">… and {more} more lanes</td></tr>"
        );
    }
    out.push_str("</table></div>\n");
    out
}

fn findings_table(findings: &[VerifierFinding]) -> String {
    if findings.is_empty() {
        return "<p class=\"summary-note\">No verifier ran.</p>".into();
    }
    let mut out = String::from("<table><tr><th>verifier</th><th></th><th>saw</th></tr>");
    for finding in findings {
        let (class, word) = if finding.held {
            ("pass", "held")
        } else {
            ("fail", "failed")
        };
        let _ = write!(
            out,
            "<tr class=\"verifier\"><td>{}</td><td class=\"{class}\">{word}</td><td><code>{}</code></td></tr>",
            escape(&finding.name),
            escape(&finding.saw)
        );
    }
    out.push_str("</table>");
    out
}

fn fs_table(changes: &[FsChange]) -> String {
    let mut out = String::from("<div class=\"panel\" id=\"fs\"><h2>File tree changes</h2>");
    if changes.is_empty() {
        out.push_str("<p class=\"summary-note\">None.</p></div>\n");
        return out;
    }
    out.push_str("<table><tr><th>at</th><th>operation</th><th>path</th><th></th></tr>");
    for change in changes {
        let result = match (change.answered, change.ok) {
            (false, _) => "unanswered",
            (true, Some(true)) => "<span class=\"pass\">ok</span>",
            (true, Some(false)) => "<span class=\"fail\">failed</span>",
            (true, None) => "answered",
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{result}</td></tr>",
            duration(change.t_ns),
            escape(&change.operation),
            escape(&change.path)
        );
    }
    out.push_str("</table></div>\n");
    out
}

fn transcript(messages: &[(u64, TranscriptMessage)]) -> String {
    let mut out =
        String::from("<section class=\"transcript\" id=\"transcript\"><h2>Transcript</h2>");
    if messages.is_empty() {
        out.push_str("<p class=\"summary-note\">No model calls.</p>");
    }
    for (t_ns, message) in messages {
        let _ = write!(
            out,
            "<div class=\"turn {role}\"><span class=\"role\">{role}</span> <span class=\"summary-note\">{}</span><pre>{}</pre>",
            duration(*t_ns),
            escape(&message.text),
            role = escape(&message.role),
        );
        for call in &message.calls {
            let _ = write!(out, "<pre class=\"mono\">→ {}</pre>", escape(call));
        }
        out.push_str("</div>");
    }
    out.push_str("</section>\n");
    out
}
