// simtape sweep page: the pass@k / pass^k plot and the histograms, drawn as SVG from the
// page's embedded data. Hand-written, no framework.
"use strict";

function simtapeEsc(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

function simtapeDuration(ns) {
  if (ns < 1e6) return (ns / 1e3).toFixed(1) + " µs";
  if (ns < 1e9) return (ns / 1e6).toFixed(1) + " ms";
  return (ns / 1e9).toFixed(2) + " s";
}

function simtapeSelect(element) {
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

const SIMTAPE_PLOT = {width: 460, height: 220, left: 44, right: 12, top: 12, bottom: 34};

// pass@k (blue) and pass^k (red) against k: one point per k on each curve.
function simtapeKPlot(root, rows) {
  const p = SIMTAPE_PLOT;
  const w = p.width - p.left - p.right, h = p.height - p.top - p.bottom;
  if (!rows.length) { root.textContent = "No runs."; return; }
  const kMax = rows[rows.length - 1].k, kMin = rows[0].k;
  // k on a log scale: a sweep's k run 1, 2, 5, 10, … up to the run count.
  const x = (k) => p.left + (kMax === kMin ? w / 2 : Math.log(k / kMin) / Math.log(kMax / kMin) * w);
  const y = (v) => p.top + (1 - v) * h;
  let svg = '<svg class="plot" width="' + p.width + '" height="' + p.height + '">';
  for (let v = 0; v <= 1.0001; v += 0.25) {
    svg += '<line class="gridline" x1="' + p.left + '" x2="' + (p.left + w) + '" y1="' + y(v) + '" y2="' + y(v) + '"/>';
    svg += '<text x="4" y="' + (y(v) + 4) + '">' + v.toFixed(2) + "</text>";
  }
  rows.forEach((row) => { svg += '<text x="' + (x(row.k) - 4) + '" y="' + (p.height - 18) + '">' + row.k + "</text>"; });
  svg += '<text x="' + (p.left + w / 2 - 20) + '" y="' + (p.height - 3) + '">k (log scale)</text>';
  [["at", "pass_at_k"], ["hat", "pass_hat_k"]].forEach(([cls, key]) => {
    svg += '<polyline class="curve ' + cls + '" points="' + rows.map((r) => x(r.k) + "," + y(r[key + "_value"])).join(" ") + '"/>';
    rows.forEach((r) => {
      svg += '<circle class="point ' + cls + '" data-k="' + r.k + '" cx="' + x(r.k) + '" cy="' + y(r[key + "_value"]) + '" r="4"><title>' +
        simtapeEsc((cls === "at" ? "pass@" : "pass^") + r.k + " = " + r[key] + " ≈ " + r[key + "_value"].toFixed(4)) + "</title></circle>";
    });
  });
  svg += '<text x="' + (p.left + w - 150) + '" y="' + (p.top + h / 2) + '" style="fill:#2457c5">● pass@k</text>';
  svg += '<text x="' + (p.left + w - 80) + '" y="' + (p.top + h / 2) + '" style="fill:#c4320a">● pass^k</text>';
  root.innerHTML = svg + "</svg>";
}

// A histogram of `values` in up to 30 bins; each bar's title counts passes and failures.
function simtapeHistogram(root, values, verdicts, label) {
  const p = SIMTAPE_PLOT;
  if (!values.length) { root.textContent = "No runs."; return; }
  let lo = Infinity, hi = -Infinity;
  for (const v of values) { if (v < lo) lo = v; if (v > hi) hi = v; }
  const bins = Math.max(1, Math.min(30, hi > lo ? 30 : 1));
  const width = (hi - lo) / bins || 1;
  const counts = new Array(bins).fill(0), fails = new Array(bins).fill(0);
  values.forEach((v, i) => {
    const b = Math.min(bins - 1, Math.floor((v - lo) / width));
    counts[b] += 1;
    if (verdicts[i] !== "p") fails[b] += 1;
  });
  const top = Math.max(...counts);
  const w = p.width - p.left - p.right, h = p.height - p.top - p.bottom;
  let svg = '<svg class="plot" width="' + p.width + '" height="' + p.height + '">';
  svg += '<text x="4" y="' + (p.top + 8) + '">' + top + "</text><text x='4' y='" + (p.top + h) + "'>0</text>";
  counts.forEach((c, b) => {
    const bh = c / top * h, bw = w / bins;
    svg += '<rect class="bar" x="' + (p.left + b * bw + 1) + '" y="' + (p.top + h - bh) + '" width="' + Math.max(bw - 2, 1) + '" height="' + bh + '"><title>' +
      simtapeEsc(label(lo + b * width) + " – " + label(lo + (b + 1) * width) + ": " + c + " run(s), " + fails[b] + " not passing") + "</title></rect>";
    if (fails[b]) {
      const fh = fails[b] / top * h;
      svg += '<rect class="bar failing" x="' + (p.left + b * bw + 1) + '" y="' + (p.top + h - fh) + '" width="' + Math.max(bw - 2, 1) + '" height="' + fh + '"/>';
    }
  });
  svg += '<text x="' + (p.left + w - 150) + '" y="' + (p.top + 8) + '" style="fill:#c4320a">■ not passing</text>';
  svg += '<text x="' + p.left + '" y="' + (p.height - 6) + '">' + simtapeEsc(label(lo)) + "</text>";
  svg += '<text x="' + (p.left + w - 60) + '" y="' + (p.height - 6) + '">' + simtapeEsc(label(hi)) + "</text>";
  root.innerHTML = svg + "</svg>";
}

function simtapeData(id) {
  return JSON.parse(document.getElementById(id).textContent);
}
