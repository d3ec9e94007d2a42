//! Turns measurements into the report: a table, its JSON form, and the bars.
//!
//! Ratios compare events per second with tokio, and with nexosim, on the same workload. The
//! peers have no tape, so both simtape modes are compared with the one row of each peer.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::frameworks::Framework;
use crate::runner::Measurement;
use crate::workloads::Workload;

/// The least the taped run must reach against tokio, on every workload (issue 32: "every
/// workload with the tape on").
pub const TAPED_TOKIO_MIN: f64 = 1.5;

/// The least the taped run must reach against nexosim, on every workload.
pub const TAPED_NEXOSIM_MIN: f64 = 1.0;

/// The largest average tape record the bars accept, in bytes.
pub const TAPE_BYTES_PER_RECORD_MAX: f64 = 32.0;

/// One line of the report (and one object of the JSON array).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `W1`, `W1ms`, `W2`, `W3` or `W4`.
    pub workload: String,
    /// `simtape`, `tokio` or `nexosim`.
    pub framework: String,
    /// True when the run streamed a tape to a file.
    pub tape: bool,
    /// Events per second of host time, at the median over rounds.
    pub events_per_s: f64,
    /// `events_per_s` divided by tokio's on the same workload; `None` when tokio did not run.
    pub ratio_to_tokio: Option<f64>,
    /// Events per second of process CPU time, at the median over rounds (less sensitive to
    /// other load on the host than `events_per_s`).
    pub events_per_cpu_s: f64,
    /// `events_per_cpu_s` divided by tokio's on the same workload.
    pub ratio_to_tokio_cpu: Option<f64>,
    /// `events_per_s` divided by nexosim's on the same workload; `None` when nexosim did not
    /// run.
    pub ratio_to_nexosim: Option<f64>,
    /// `events_per_cpu_s` divided by nexosim's on the same workload.
    pub ratio_to_nexosim_cpu: Option<f64>,
    /// Virtual time at the end of the run, in µs.
    pub virtual_end_us: f64,
    /// Tape bytes per record, for a taped run.
    pub bytes_per_record: Option<f64>,
    /// Rounds the median is taken over.
    pub rounds: usize,
    /// simtape's run fingerprint in hex (a hash of every record), so a change of behaviour
    /// cannot pass for a speed-up; `None` for other frameworks.
    pub fingerprint: Option<String>,
}

/// Returns one row per measurement, in the same order.
pub fn rows(measurements: &[Measurement]) -> Vec<Row> {
    measurements
        .iter()
        .map(|m| {
            let peer = |framework: Framework| {
                measurements.iter().find(|other| {
                    other.case.workload == m.case.workload && other.case.framework == framework
                })
            };
            let (tokio, nexosim) = (peer(Framework::Tokio), peer(Framework::Nexosim));
            Row {
                workload: m.case.workload.name().to_string(),
                framework: m.case.framework.name().to_string(),
                tape: m.case.framework.tape(),
                events_per_s: m.events_per_s(),
                ratio_to_tokio: tokio.map(|t| m.events_per_s() / t.events_per_s()),
                events_per_cpu_s: m.events_per_cpu_s(),
                ratio_to_tokio_cpu: tokio.map(|t| m.events_per_cpu_s() / t.events_per_cpu_s()),
                ratio_to_nexosim: nexosim.map(|n| m.events_per_s() / n.events_per_s()),
                ratio_to_nexosim_cpu: nexosim.map(|n| m.events_per_cpu_s() / n.events_per_cpu_s()),
                virtual_end_us: m.outcome.end_ns as f64 / 1_000.0,
                bytes_per_record: m.outcome.tape.map(|t| t.bytes_per_record()),
                rounds: m.host_times.len(),
                fingerprint: m.outcome.fingerprint.map(|f| format!("{f:016x}")),
            }
        })
        .collect()
}

/// Formats events per second for people: `6.29 M/s`, `456 k/s`.
pub fn format_rate(events_per_s: f64) -> String {
    if events_per_s >= 1e6 {
        format!("{:.2} M/s", events_per_s / 1e6)
    } else if events_per_s >= 1e3 {
        format!("{:.0} k/s", events_per_s / 1e3)
    } else {
        format!("{events_per_s:.0} /s")
    }
}

/// Renders `rows` as a Markdown table (readable in a terminal and pasteable in a README).
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(concat!(
        "| workload | framework | tape | events/s (median) | × tokio | × nexosim | events/CPU-s ",
        "| × tokio (CPU) | × nexosim (CPU) | virtual end µs | B/record | fingerprint |\n",
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    ));
    for row in rows {
        let ratio = format_ratio(row.ratio_to_tokio);
        let ratio_cpu = format_ratio(row.ratio_to_tokio_cpu);
        let nexosim = format_ratio(row.ratio_to_nexosim);
        let nexosim_cpu = format_ratio(row.ratio_to_nexosim_cpu);
        let bytes = row
            .bytes_per_record
            .map_or("–".to_string(), |b| format!("{b:.1}"));
        let fingerprint = row.fingerprint.as_deref().unwrap_or("–");
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.workload,
            row.framework,
            if row.tape { "on" } else { "off" },
            format_rate(row.events_per_s),
            ratio,
            nexosim,
            format_rate(row.events_per_cpu_s),
            ratio_cpu,
            nexosim_cpu,
            format_thousands(row.virtual_end_us),
            bytes,
            fingerprint,
        );
    }
    out
}

fn format_ratio(ratio: Option<f64>) -> String {
    ratio.map_or("–".to_string(), |r| format!("{r:.2}×"))
}

fn format_thousands(value: f64) -> String {
    let whole = format!("{:.0}", value.trunc());
    let grouped = whole
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|chunk| std::str::from_utf8(chunk).expect("digits are ASCII"))
        .collect::<Vec<_>>()
        .join(",");
    let fraction = value.fract();
    if fraction == 0.0 {
        grouped
    } else {
        format!("{grouped}{}", &format!("{fraction:.3}")[1..])
    }
}

/// A performance bar from the issue and whether this run clears it.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// What the bar demands, for people.
    pub label: String,
    /// The measured value; `None` when the cases it needs did not run.
    pub measured: Option<f64>,
    /// The same measure on CPU time, for ratio bars (shown, not judged).
    pub measured_cpu: Option<f64>,
    /// True when the measured value clears the bar.
    pub pass: bool,
}

/// The bars: simtape untaped W1ms ≥ 1.3×, W2 ≥ 4×, W3 ≥ 1.6× tokio and W3 and W4 ahead of
/// both tokio and nexosim (issue 16); taped, every workload at ≥ 1.5× tokio and ≥ 1× nexosim
/// (issue 32, "the tape's price"); and at most 32 tape bytes per record on the timer
/// workloads (W1, W1ms, W2, where nearly every record is a timer wake).
pub fn bars(rows: &[Row]) -> Vec<Bar> {
    let simtape = |workload: Workload, tape: bool| {
        rows.iter()
            .find(|r| r.workload == workload.name() && r.framework == "simtape" && r.tape == tape)
    };
    let ratio_bar = |workload: Workload, tape: bool, minimum: f64, peer: Framework| {
        let row = simtape(workload, tape);
        let (measured, measured_cpu) = match peer {
            Framework::Nexosim => (
                row.and_then(|r| r.ratio_to_nexosim),
                row.and_then(|r| r.ratio_to_nexosim_cpu),
            ),
            _ => (
                row.and_then(|r| r.ratio_to_tokio),
                row.and_then(|r| r.ratio_to_tokio_cpu),
            ),
        };
        Bar {
            label: format!(
                "simtape tape {} {workload} ≥ {minimum:.1}× {}",
                if tape { "on " } else { "off" },
                peer.name()
            ),
            measured,
            measured_cpu,
            pass: measured.is_some_and(|m| m >= minimum),
        }
    };
    let (tokio, nexosim) = (Framework::Tokio, Framework::Nexosim);
    let timer_workloads = [Workload::W1, Workload::W1ms, Workload::W2];
    let worst_bytes = rows
        .iter()
        .filter(|r| r.tape && timer_workloads.iter().any(|w| w.name() == r.workload))
        .filter_map(|r| r.bytes_per_record)
        .reduce(f64::max);
    let taped = Workload::ALL.into_iter().flat_map(|workload| {
        [
            ratio_bar(workload, true, TAPED_TOKIO_MIN, tokio),
            ratio_bar(workload, true, TAPED_NEXOSIM_MIN, nexosim),
        ]
    });
    let untaped = [
        ratio_bar(Workload::W1ms, false, 1.3, tokio),
        ratio_bar(Workload::W2, false, 4.0, tokio),
        ratio_bar(Workload::W3, false, 1.6, tokio),
        ratio_bar(Workload::W3, false, 1.0, nexosim),
        ratio_bar(Workload::W4, false, 1.0, tokio),
        ratio_bar(Workload::W4, false, 1.0, nexosim),
    ];
    let bytes = [Bar {
        label: format!(
            "tape ≤ {TAPE_BYTES_PER_RECORD_MAX:.0} B per timer record (worst of W1, W1ms, W2)"
        ),
        measured: worst_bytes,
        measured_cpu: None,
        pass: worst_bytes.is_some_and(|b| b <= TAPE_BYTES_PER_RECORD_MAX),
    }];
    untaped.into_iter().chain(taped).chain(bytes).collect()
}

/// Renders the bars, one per line, with PASS, MISS or "not run"; ratio bars also show the
/// CPU-time ratio in brackets.
pub fn render_bars(bars: &[Bar]) -> String {
    let mut out = String::new();
    for bar in bars {
        let verdict = match (bar.measured, bar.measured_cpu) {
            (None, _) => "not run".to_string(),
            (Some(value), cpu) => {
                let cpu = cpu.map_or(String::new(), |c| format!(" [CPU {c:.2}]"));
                format!(
                    "{} ({value:.2}){cpu}",
                    if bar.pass { "PASS" } else { "MISS" }
                )
            }
        };
        let _ = writeln!(out, "{:<64} {verdict}", bar.label);
    }
    out
}
