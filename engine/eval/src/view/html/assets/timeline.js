// simtape timeline: swimlanes of slices (request/reply pairs, task lifetimes) and instants,
// drawn as one SVG from the page's embedded data. Hand-written, no framework.
"use strict";

const SIMTAPE_ROW = 22;
const SIMTAPE_AXIS = 22;

function simtapeEsc(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

function simtapeTime(ns) {
  if (ns < 1e3) return ns + " ns";
  if (ns < 1e6) return (ns / 1e3).toFixed(1) + " µs";
  if (ns < 1e9) return (ns / 1e6).toFixed(3) + " ms";
  return (ns / 1e9).toFixed(3) + " s";
}

// Known actor kinds get their own colour; any other actor shares one.
function simtapeCategory(cat) {
  if (["task", "llm", "fs", "process", "net", "agent", "retry", "fault", "verdict", "run"].includes(cat)) return cat;
  if (cat.startsWith("mcp")) return "mcp";
  return "other";
}

// Draws `data` (tracks, slices, instants, end_ns) into `root`. `options.span_ns` fixes the
// time span (two aligned timelines share one), `options.markers` are [{t_ns, label}] drawn
// as dashed lines, `options.onSelect(kind, index)` hears clicks on a slice or an instant.
function simtapeTimeline(root, data, options) {
  options = options || {};
  const labels = document.createElement("div");
  labels.className = "labels";
  const scroller = document.createElement("div");
  scroller.className = "scroller";
  root.classList.add("timeline");
  root.append(labels, scroller);

  const rows = [];
  let lastGroup = null;
  data.tracks.forEach((track, index) => {
    if (track.group !== lastGroup) {
      rows.push({group: track.group});
      lastGroup = track.group;
    }
    rows.push({track: index, group: track.group, name: track.name});
  });
  const rowOf = new Map();
  rows.forEach((row, y) => { if (row.track !== undefined) rowOf.set(row.track, y); });
  labels.innerHTML = '<div class="label" style="height:' + SIMTAPE_AXIS + 'px"></div>' + rows.map((row) =>
    row.track === undefined
      ? '<div class="label group">' + simtapeEsc(row.group) + "</div>"
      : '<div class="label" title="' + simtapeEsc(row.name) + '">' + simtapeEsc(row.name) + "</div>").join("");

  const span = Math.max(options.span_ns || data.end_ns || 0, 1);
  let pxPerNs = Math.max(scroller.clientWidth - 20, 200) / span;
  let selected = null;
  const view = {scroller, markers: [], onZoom: null};

  function x(t) { return 10 + t * pxPerNs; }

  function axis(width, height) {
    const target = 120 / pxPerNs;
    const step = Math.pow(10, Math.ceil(Math.log10(Math.max(target, 1))));
    const nice = [step / 5, step / 2, step].find((s) => s >= target) || step;
    let out = '<g class="axis">';
    for (let t = 0; t <= span; t += nice) {
      out += '<line x1="' + x(t) + '" x2="' + x(t) + '" y1="' + (SIMTAPE_AXIS - 4) + '" y2="' + height + '"/>';
      out += '<text x="' + (x(t) + 2) + '" y="12">' + simtapeTime(Math.round(t)) + "</text>";
    }
    return out + "</g>";
  }

  function render() {
    const width = Math.ceil(x(span) + 10);
    const height = SIMTAPE_AXIS + rows.length * SIMTAPE_ROW;
    const lanes = rows.map((row, y) => {
      const top = SIMTAPE_AXIS + y * SIMTAPE_ROW;
      const bg = '<rect class="lane-bg' + (row.track === undefined ? " group" : "") + '" x="0" y="' + top + '" width="' + width + '" height="' + SIMTAPE_ROW + '"/>';
      if (row.track === undefined) return bg;
      return '<g class="lane" data-group="' + simtapeEsc(row.group) + '" data-track="' + row.track + '">' + bg;
    });
    const body = [];
    data.slices.forEach((s, i) => {
      const [track, start, end, name, cat, , failed] = s;
      const y = SIMTAPE_AXIS + rowOf.get(track) * SIMTAPE_ROW + 3;
      const w = Math.max(x(end) - x(start), 2);
      let out = '<rect class="slice cat-' + simtapeCategory(cat) + (failed ? " failed" : "") + '" data-i="' + i + '" x="' + x(start).toFixed(1) + '" y="' + y + '" width="' + w.toFixed(1) + '" height="' + (SIMTAPE_ROW - 6) + '"><title>' + simtapeEsc(name + " · " + simtapeTime(end - start)) + "</title></rect>";
      if (w > 50) out += '<text class="slice-text" x="' + (x(start) + 3).toFixed(1) + '" y="' + (y + 12) + '">' + simtapeEsc(name.slice(0, Math.floor(w / 6))) + "</text>";
      (body[track] = body[track] || []).push(out);
    });
    data.instants.forEach((p, j) => {
      const [track, t, name, cat] = p;
      const cx = x(t), cy = SIMTAPE_AXIS + rowOf.get(track) * SIMTAPE_ROW + SIMTAPE_ROW / 2;
      const out = '<path class="instant cat-' + simtapeCategory(cat) + '" data-j="' + j + '" d="M' + cx.toFixed(1) + " " + (cy - 6) + "l5 6l-5 6l-5 -6z" + '"><title>' + simtapeEsc(name + " @ " + simtapeTime(t)) + "</title></path>";
      (body[track] = body[track] || []).push(out);
    });
    const svgRows = rows.map((row, y) => row.track === undefined ? lanes[y] : lanes[y] + (body[row.track] || []).join("") + "</g>");
    const marks = (options.markers || []).map((m, k) =>
      '<line class="divergence" data-k="' + k + '" x1="' + x(m.t_ns) + '" x2="' + x(m.t_ns) + '" y1="0" y2="' + height + '"/>' +
      '<path class="divergence-flag" d="M' + x(m.t_ns) + ' 0h10l-3 5l3 5h-10z"><title>' + simtapeEsc(m.label) + "</title></path>").join("");
    scroller.innerHTML = '<svg class="lanes" width="' + width + '" height="' + height + '">' + axis(width, height) + svgRows.join("") + marks + "</svg>";
    view.markers = Array.from(scroller.querySelectorAll("line.divergence"));
    if (selected) {
      const el = scroller.querySelector(selected.kind === "slice" ? '.slice[data-i="' + selected.index + '"]' : '.instant[data-j="' + selected.index + '"]');
      if (el) el.classList.add("selected");
    }
  }

  scroller.addEventListener("click", (event) => {
    const el = event.target.closest(".slice, .instant");
    if (!el) return;
    scroller.querySelectorAll(".selected").forEach((s) => s.classList.remove("selected"));
    el.classList.add("selected");
    selected = el.classList.contains("slice") ? {kind: "slice", index: +el.dataset.i} : {kind: "instant", index: +el.dataset.j};
    if (options.onSelect) options.onSelect(selected.kind, selected.index);
  });

  view.zoom = function (factor, anchorPx) {
    const anchor = anchorPx === undefined ? scroller.clientWidth / 2 : anchorPx;
    const t = (scroller.scrollLeft + anchor - 10) / pxPerNs;
    pxPerNs = Math.min(Math.max(pxPerNs * factor, 1e-9), 50);
    render();
    scroller.scrollLeft = x(t) - anchor;
    if (view.onZoom) view.onZoom(factor, anchor);
  };
  view.fit = function () {
    pxPerNs = Math.max(scroller.clientWidth - 20, 200) / span;
    render();
  };
  view.x = x;
  scroller.addEventListener("wheel", (event) => {
    if (!event.ctrlKey && !event.metaKey) return;
    event.preventDefault();
    view.zoom(event.deltaY < 0 ? 1.25 : 0.8, event.clientX - scroller.getBoundingClientRect().left);
  }, {passive: false});
  render();
  return view;
}

// The zoom buttons of a toolbar drive every timeline in `views`.
function simtapeToolbar(toolbar, views) {
  toolbar.innerHTML = '<button data-z="in">zoom in</button><button data-z="out">zoom out</button><button data-z="fit">fit</button><span>ctrl + wheel zooms at the pointer; click a slice for its payload</span>';
  toolbar.addEventListener("click", (event) => {
    const z = event.target.dataset && event.target.dataset.z;
    if (!z) return;
    views.forEach((v) => z === "fit" ? v.fit() : v.zoom(z === "in" ? 2 : 0.5));
  });
}

// Fills the payload panel with what a click selected.
function simtapeShowPayload(panel, data, kind, index) {
  let title, payload;
  if (kind === "slice") {
    const [, start, end, name, , p] = data.slices[index];
    title = name + " · " + simtapeTime(start) + " → " + simtapeTime(end) + " (" + simtapeTime(end - start) + ")";
    payload = data.payloads[p];
  } else {
    const [, t, name, , p] = data.instants[index];
    title = name + " @ " + simtapeTime(t);
    payload = data.payloads[p];
  }
  panel.querySelector(".payload-title").textContent = title;
  panel.querySelector(".payload-body").textContent = JSON.stringify(payload, null, 2);
}

function simtapeData(id) {
  return JSON.parse(document.getElementById(id).textContent);
}
