//! Two tapes as a page: both timelines on one time axis, the oracle's first divergence marked
//! on each and scrolled into view, the two values side by side, and the divergence counts by
//! actor and kind.

use std::fmt::Write as _;

use serde_json::json;
use simtape::oracle::{DiffReport, FirstDivergence};

use super::tape::{payload_panel, verdict_class, TapeView};
use super::{duration, escape, page, Scripts};

/// The page's own script: two aligned timelines, the marker, one payload panel each.
const MAIN: &str = r#"const data = simtapeData("data");
const span = Math.max(data.a.end_ns, data.b.end_ns, 1);
const first = data.first;
function side(key, t_ns, index) {
  const panel = document.getElementById("payload-" + key);
  const timeline = data[key];
  const markers = first ? [{t_ns: t_ns, label: "first divergence"}] : [];
  const view = simtapeTimeline(document.getElementById("timeline-" + key), timeline, {
    span_ns: span, markers: markers,
    onSelect: (kind, i) => simtapeShowPayload(panel, timeline, kind, i),
  });
  if (first) {
    // The slice or instant that holds the divergent record, selected and shown.
    let slice = timeline.slice_records.findIndex(([b, e]) => b === index || e === index);
    let target = slice >= 0 ? view.scroller.querySelector('.slice[data-i="' + slice + '"]') : null;
    if (!target) {
      const instant = timeline.instant_records.indexOf(index);
      if (instant >= 0) target = view.scroller.querySelector('.instant[data-j="' + instant + '"]');
    }
    if (target) target.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  }
  return view;
}
const views = [side("a", first ? first.t_ns_a : 0, first ? first.index_a : -1),
               side("b", first ? first.t_ns_b : 0, first ? first.index_b : -1)];
simtapeToolbar(document.getElementById("toolbar"), views);
views.forEach((v, i) => v.scroller.addEventListener("scroll", () => {
  const other = views[1 - i].scroller;
  if (other.scrollLeft !== v.scroller.scrollLeft) other.scrollLeft = v.scroller.scrollLeft;
}));
if (first && views[0].markers.length) {
  views[0].markers[0].scrollIntoView({block: "center", inline: "center"});
}
"#;

/// Renders the diff page of tapes `a` and `b` (named by `source_a`, `source_b`).
pub fn render(
    report: &DiffReport,
    a: &TapeView,
    b: &TapeView,
    source_a: &str,
    source_b: &str,
) -> String {
    let title = format!(
        "diff · {} seed {} vs seed {}",
        a.header.scenario.name, a.header.seed, b.header.seed
    );
    let outcome = if report.equal { "equal" } else { "divergent" };
    let meta = format!(
        "A {} · B {} · mode {} · {outcome}, {} divergence(s) · {} vs {} records",
        escape(source_a),
        escape(source_b),
        report.mode.name(),
        report.divergences,
        report.records_a,
        report.records_b,
    );
    let mut body = String::new();
    body.push_str(&first_panel(report));
    body.push_str("<div class=\"toolbar\" id=\"toolbar\"></div>\n");
    for (key, view, source) in [("a", a, source_a), ("b", b, source_b)] {
        let class = verdict_class(&view.verdict);
        let _ = write!(
            body,
            "<h2>{} <code>{}</code> · seed {} · <span class=\"badge {class}\">{class}</span></h2>\n<div id=\"timeline-{key}\"></div>\n",
            key.to_uppercase(),
            escape(source),
            view.header.seed,
        );
    }
    body.push_str("<div class=\"side-by-side\">");
    body.push_str(&payload_panel("payload-a").replace("<h2>Record</h2>", "<h2>Record in A</h2>"));
    body.push_str(&payload_panel("payload-b").replace("<h2>Record</h2>", "<h2>Record in B</h2>"));
    body.push_str("</div>\n");
    body.push_str(&counts(report));
    let data = json!({ "a": &a.timeline, "b": &b.timeline, "first": &report.first });
    page(&title, &meta, &body, &data, Scripts::Timeline, MAIN)
}

fn first_panel(report: &DiffReport) -> String {
    let Some(first) = &report.first else {
        return "<div class=\"panel\" id=\"first\"><h2>No divergence</h2><p>The tapes agree in this mode.</p></div>\n".into();
    };
    let field = first.field.as_deref().unwrap_or("the whole record");
    let value =
        |v: &Option<String>| escape(v.as_deref().or(first.record.as_deref()).unwrap_or("—"));
    // The call in the user's words first; the record's place second.
    let title = match &first.call {
        Some(call) => format!("First divergence: {}", escape(&call.to_string())),
        None => format!(
            "First divergence: {:?} {} of {} (task {}), field <code>{}</code>",
            first.op,
            escape(&first.kind),
            escape(&first.actor),
            first.task,
            escape(field)
        ),
    };
    // Changed fields by pointer when the oracle listed them (never a whole body), else the
    // first differing field's two values.
    let values = if first.changes.is_empty() {
        format!(
            "<div class=\"side-by-side\"><div><b>A</b><pre class=\"value-a\">{}</pre></div><div><b>B</b><pre class=\"value-b\">{}</pre></div></div>",
            value(&first.value_a),
            value(&first.value_b)
        )
    } else {
        changes_table(first)
    };
    format!(
        "<div class=\"panel\" id=\"first\"><h2>{title}</h2>\
         <p>{op:?} {kind} of {actor} (task {task}) · A record {ia} at {ta} · B record {ib} at {tb}</p>{values}</div>\n",
        op = first.op,
        kind = escape(&first.kind),
        actor = escape(&first.actor),
        task = first.task,
        ia = first.index_a,
        ta = duration(first.t_ns_a),
        ib = first.index_b,
        tb = duration(first.t_ns_b),
    )
}

/// The listed changed fields: pointer, value in A, value in B; then how many more differ.
fn changes_table(first: &FirstDivergence) -> String {
    let mut out =
        String::from("<table class=\"changes\"><tr><th>field</th><th>A</th><th>B</th></tr>");
    for change in &first.changes {
        let _ = write!(
            out,
            "<tr><td><code class=\"pointer\">{}</code></td><td><code class=\"value-a\">{}</code></td><td><code class=\"value-b\">{}</code></td></tr>",
            escape(&change.pointer),
            escape(&change.a),
            escape(&change.b),
        );
    }
    out.push_str("</table>");
    let more = first.changes_total - first.changes.len() as u64;
    if more > 0 {
        let _ = write!(out, "<p>and {more} more</p>");
    }
    out
}

fn counts(report: &DiffReport) -> String {
    let mut out = String::from("<div class=\"side-by-side\" id=\"counts\">");
    for (title, counts) in [
        ("Divergent records by actor", &report.content_by_actor),
        ("Divergent records by kind", &report.content_by_kind),
    ] {
        let _ = write!(out, "<div class=\"panel\"><h2>{title}</h2><table>");
        for (name, count) in counts {
            let _ = write!(out, "<tr><td>{}</td><td>{count}</td></tr>", escape(name));
        }
        out.push_str("</table></div>");
    }
    out.push_str("</div>\n");
    out
}
