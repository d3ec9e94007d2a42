//! The diff report: what the oracle found, for machines (serde, `--json`) and for people
//! ([`DiffReport::render_text`]).

use std::collections::BTreeMap;
use std::fmt::{self, Write};

use serde::Serialize;

use super::calls::CallRef;
use super::field::quote;
use super::Mode;

/// Hunks [`DiffReport::render_text`] prints; the rest are summed up in one line.
const HUNKS_PRINTED_MAX: usize = 10;

/// What the oracle found comparing tape A with tape B.
///
/// ```
/// use simtape::oracle::{diff_bytes, Mode};
/// let mut builder = simtape::Sim::builder();
/// builder.seed(1).tape_in_memory();
/// let tape = builder.build().unwrap().run(|host| async move { host.outcome("answer", &42) })
///     .unwrap().summary.tape.unwrap().memory.unwrap();
/// let report = diff_bytes(&tape, &tape, Mode::Exact).unwrap();
/// assert!(report.equal);
/// assert_eq!(report.exit_code(), 0);
/// assert!(report.render_text().starts_with("tapes equal (exact)"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffReport {
    /// The mode the tapes were compared in.
    pub mode: Mode,
    /// True when there are no divergences.
    pub equal: bool,
    /// Hunks, plus timing-only differences in exact mode, plus a differing verdict in outcome
    /// mode.
    pub divergences: u64,
    /// False when so many records differ (more than 16,384 inserted plus deleted) that the
    /// oracle did not align them: everything from the first to the last difference is then
    /// one changed hunk.
    pub aligned: bool,
    /// Records of A the mode compares (every record but checkpoints, blobs and the footer;
    /// only `outcome` records in outcome mode).
    pub records_a: u64,
    /// Records of B the mode compares.
    pub records_b: u64,
    /// Hunks found: maximal runs of inserted, deleted or changed records.
    pub hunks_total: u64,
    /// The hunks, in tape order; at most the first thousand.
    pub hunks: Vec<Hunk>,
    /// Content differences by actor name: one per inserted or deleted record, and one per
    /// changed record (counted under A's record).
    pub content_by_actor: BTreeMap<String, u64>,
    /// Content differences by record kind, counted as in `content_by_actor`.
    pub content_by_kind: BTreeMap<String, u64>,
    /// Paired records equal in content but at different virtual times. Divergences in exact
    /// mode; counted but ignored in semantic mode; not compared in outcome mode.
    pub timing_only: u64,
    /// The first divergence, with context.
    pub first: Option<FirstDivergence>,
    /// The footer verdict of A.
    pub verdict_a: String,
    /// The footer verdict of B.
    pub verdict_b: String,
    /// Header and footer differences that are not divergences in this mode (seed, scenario
    /// digest, engine version, verdict outside outcome mode, …).
    pub notes: Vec<String>,
}

/// A maximal run of records that differ between the tapes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// Inserted in B, deleted in B, or changed.
    pub op: HunkOp,
    /// The record indices of A it covers; empty (at the insertion point) for an insertion.
    pub a: IndexRange,
    /// The record indices of B it covers; empty (at the deletion point) for a deletion.
    pub b: IndexRange,
    /// Records involved: the larger of the two sides' compared records.
    pub count: u64,
}

/// What a hunk does to A to make B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HunkOp {
    /// Records only B has.
    Inserted,
    /// Records only A has.
    Deleted,
    /// Records of A replaced by other records in B.
    Changed,
}

/// A half-open range of record indices (as `simtape tape show` numbers records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IndexRange {
    /// The first index.
    pub start: u64,
    /// One past the last index.
    pub end: u64,
}

/// The kind of the first divergence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DivergenceOp {
    /// Records only B has.
    Inserted,
    /// Records only A has.
    Deleted,
    /// A record that differs in content.
    Changed,
    /// A record equal in content at another virtual time (exact mode).
    Timing,
    /// The footer verdicts differ (outcome mode).
    Verdict,
}

/// The first divergence and where it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FirstDivergence {
    /// What diverges.
    pub op: DivergenceOp,
    /// Records in the first hunk (1 for a timing or verdict difference).
    pub count: u64,
    /// The record index in A where the tapes part; for an insertion, where it would go in A.
    pub index_a: u64,
    /// The record index in B where the tapes part; for a deletion, where it would go in B.
    pub index_b: u64,
    /// Virtual time in A at that point, in nanoseconds.
    pub t_ns_a: u64,
    /// Virtual time in B at that point, in nanoseconds.
    pub t_ns_b: u64,
    /// The record's actor (A's record when A has one).
    pub actor: String,
    /// The record's kind (`wake`, `request`, `outcome`, …).
    pub kind: String,
    /// The task that caused the record.
    pub task: u32,
    /// The first differing field: `t_ns`, `actor`, `task`, `kind`, `verdict`, or a path in the
    /// payload such as `payload/1/fields/bytes`. None for inserted and deleted records.
    pub field: Option<String>,
    /// The field's value in A, as JSON text.
    pub value_a: Option<String>,
    /// The field's value in B, as JSON text.
    pub value_b: Option<String>,
    /// The whole record, as JSON text, for a record only one tape has.
    pub record: Option<String>,
    /// The model call, MCP call or process run the record belongs to (A's record when A has
    /// one), counted in each tape's order; `None` for a record of no call.
    pub call: Option<CallRef>,
    /// For a changed record: the first few fields of its payload that differ (a JSON body
    /// inside it compared field by field), in the order the oracle visits them (object keys
    /// sorted, array items by index).
    pub changes: Vec<FieldChange>,
    /// How many fields differ in all, listed or not.
    pub changes_total: u64,
}

/// One field in which a changed record differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    /// The field's JSON pointer: into the JSON body named by `body` (`/model`), or, when
    /// `body` is `None`, into the payload, written `payload/…` (`payload/1/0`).
    pub pointer: String,
    /// The payload field holding the JSON body the pointer is in (`payload/2/Request/3`, an
    /// HTTP request's body), if it is in one.
    pub body: Option<String>,
    /// The value in A, as JSON text (cut past 120 characters), or `(absent)`.
    pub a: String,
    /// The value in B, likewise.
    pub b: String,
}

impl DiffReport {
    /// Returns the process exit code for the report: 0 when the tapes are equal, 1 when they
    /// diverge (2, for errors, is the caller's).
    pub fn exit_code(&self) -> u8 {
        u8::from(!self.equal)
    }

    /// Renders the report for a terminal: a verdict line, the first divergence, hunks, counts
    /// and notes, one item a line. The text depends only on the report.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        self.write_summary(&mut out);
        if let Some(first) = &self.first {
            write_first(&mut out, first, self.mode);
        }
        if self.hunks_total > 0 {
            self.write_hunks(&mut out);
            let _ = writeln!(
                out,
                "content differences by actor: {}",
                counts(&self.content_by_actor)
            );
            let _ = writeln!(
                out,
                "content differences by kind: {}",
                counts(&self.content_by_kind)
            );
        }
        if self.mode != Mode::Outcome && !self.equal {
            let _ = writeln!(out, "timing-only differences: {}", self.timing_only);
        }
        let verdict_shown = self
            .first
            .as_ref()
            .is_some_and(|f| f.op == DivergenceOp::Verdict);
        if self.mode == Mode::Outcome && self.verdict_a != self.verdict_b && !verdict_shown {
            let (a, b) = (quote(&self.verdict_a), quote(&self.verdict_b));
            let _ = writeln!(out, "verdicts differ: A {a}, B {b}");
        }
        if !self.aligned {
            let _ = writeln!(
                out,
                "note: too many differences to align; the records from the first to the last \
                 difference are one changed hunk"
            );
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out
    }

    fn write_summary(&self, out: &mut String) {
        let mode = self.mode;
        let records = format!(
            "{} {} in A, {} in B",
            self.records_a,
            plural(self.records_a, "record", "records"),
            self.records_b
        );
        if self.equal {
            let _ = write!(out, "tapes equal ({mode}): {records}");
            if self.timing_only > 0 {
                let _ = write!(
                    out,
                    "; {} timing-only differences ignored",
                    self.timing_only
                );
            }
            out.push('\n');
        } else {
            let n = self.divergences;
            let divergences = plural(n, "divergence", "divergences");
            let _ = writeln!(out, "tapes diverge ({mode}): {n} {divergences} ({records})");
        }
    }

    fn write_hunks(&self, out: &mut String) {
        let _ = writeln!(out, "hunks: {}", self.hunks_total);
        for hunk in self.hunks.iter().take(HUNKS_PRINTED_MAX) {
            let op = match hunk.op {
                HunkOp::Inserted => "inserted",
                HunkOp::Deleted => "deleted",
                HunkOp::Changed => "changed",
            };
            let (a, b, n) = (hunk.a, hunk.b, hunk.count);
            let _ = writeln!(
                out,
                "  {op:<8} A {}..{} B {}..{} ({n} {})",
                a.start,
                a.end,
                b.start,
                b.end,
                plural(n, "record", "records")
            );
        }
        let shown = self.hunks_total.min(HUNKS_PRINTED_MAX as u64);
        if self.hunks_total > shown {
            let _ = writeln!(out, "  … {} more", self.hunks_total - shown);
        }
    }
}

impl fmt::Display for DiffReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render_text())
    }
}

fn write_first(out: &mut String, first: &FirstDivergence, mode: Mode) {
    let n = first.count;
    let records = plural(n, "record", "records");
    let (ia, ib) = (first.index_a, first.index_b);
    let context = |t: &str| {
        format!(
            "({t}, actor {}, kind {}, task {})",
            first.actor, first.kind, first.task
        )
    };
    let time = match (first.t_ns_a, first.t_ns_b) {
        (a, b) if a == b || first.op == DivergenceOp::Inserted => format!("t={}", t_text(b)),
        (a, _) if first.op == DivergenceOp::Deleted => format!("t={}", t_text(a)),
        (a, b) => format!("t={} in A, {} in B", t_text(a), t_text(b)),
    };
    if let Some(call) = &first.call {
        let _ = writeln!(out, "first divergence: {call}");
        write_changes(out, first);
        out.push_str("  where: ");
    } else {
        out.push_str("first divergence: ");
    }
    let _ = match first.op {
        DivergenceOp::Inserted => writeln!(
            out,
            "{n} {records} inserted in B at index {ib} {}",
            context(&time)
        ),
        DivergenceOp::Deleted => writeln!(
            out,
            "{n} {records} deleted in B, at index {ia} of A {}",
            context(&time)
        ),
        DivergenceOp::Changed => writeln!(
            out,
            "{n} {records} changed at index {ia} of A, {ib} of B {}",
            context(&time)
        ),
        DivergenceOp::Timing => writeln!(
            out,
            "record at another time at index {ia} of A, {ib} of B {}",
            context(&time)
        ),
        DivergenceOp::Verdict => writeln!(out, "the verdicts differ ({mode})"),
    };
    if first.call.is_some() {
        return;
    }
    if let Some(record) = &first.record {
        let side = if first.op == DivergenceOp::Inserted {
            "B"
        } else {
            "A"
        };
        let _ = writeln!(out, "  {side}: {record}");
    }
    if !first.changes.is_empty() {
        write_changes(out, first);
    } else if let (Some(field), Some(a), Some(b)) = (&first.field, &first.value_a, &first.value_b) {
        let _ = writeln!(out, "  {field}: A {a}, B {b}");
    }
}

/// One line per listed changed field, `  /model: "a" → "b"`, then how many more differ.
fn write_changes(out: &mut String, first: &FirstDivergence) {
    for change in &first.changes {
        let _ = writeln!(out, "  {}: {} → {}", change.pointer, change.a, change.b);
    }
    let more = first.changes_total - first.changes.len() as u64;
    if more > 0 {
        let _ = writeln!(out, "  and {more} more");
    }
}

fn counts(map: &BTreeMap<String, u64>) -> String {
    let items: Vec<String> = map.iter().map(|(key, n)| format!("{key} {n}")).collect();
    items.join(", ")
}

fn plural<'w>(n: u64, one: &'w str, many: &'w str) -> &'w str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// Renders virtual time exactly, in the largest unit that keeps it at least 1: `1.5ms`,
/// `2s`, `250ns`. Integer arithmetic only, so the text is the same on every machine.
pub(crate) fn t_text(t_ns: u64) -> String {
    const UNITS: [(u64, &str, usize); 3] = [
        (1_000_000_000, "s", 9),
        (1_000_000, "ms", 6),
        (1_000, "us", 3),
    ];
    for (unit_ns, name, digits) in UNITS {
        if t_ns >= unit_ns {
            let (whole, fraction) = (t_ns / unit_ns, t_ns % unit_ns);
            if fraction == 0 {
                return format!("{whole}{name}");
            }
            let fraction = format!("{fraction:0digits$}");
            return format!("{whole}.{}{name}", fraction.trim_end_matches('0'));
        }
    }
    format!("{t_ns}ns")
}

#[cfg(test)]
mod tests {
    use super::t_text;

    #[test]
    fn virtual_time_renders_exactly() {
        // Goal: times render in the largest unit, without rounding.
        assert_eq!(t_text(0), "0ns");
        assert_eq!(t_text(999), "999ns");
        assert_eq!(t_text(1_500_000), "1.5ms");
        assert_eq!(t_text(2_000_000_000), "2s");
        assert_eq!(t_text(1_000_000_001), "1.000000001s");
        assert_eq!(t_text(12_340), "12.34us");
    }
}
