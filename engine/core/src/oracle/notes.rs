//! Header and footer differences that do not make two runs diverge but explain why they might:
//! another seed, another scenario, another engine.

use super::field::quote;
use super::fingerprint::Scan;
use super::Mode;

/// Returns one note per header field that differs, and for the verdict outside outcome mode
/// (where it is a divergence instead).
pub(crate) fn notes(mode: Mode, a: &Scan, b: &Scan) -> Vec<String> {
    let (ha, hb) = (&a.header, &b.header);
    let mut notes = Vec::new();
    for (side, scan) in [("A", a), ("B", b)] {
        if let Some(cut) = &scan.truncation {
            notes.push(format!(
                "tape {side} is a prefix: {cut}; its whole records are compared"
            ));
        }
    }
    let mut note = |what: &str, va: String, vb: String| {
        if va != vb {
            notes.push(format!("{what} differs: A {va}, B {vb}"));
        }
    };
    note("seed", ha.seed.to_string(), hb.seed.to_string());
    note(
        "format version",
        ha.format_version.to_string(),
        hb.format_version.to_string(),
    );
    note(
        "scenario",
        quote(&ha.scenario.name),
        quote(&hb.scenario.name),
    );
    note(
        "scenario digest",
        ha.scenario.digest.clone(),
        hb.scenario.digest.clone(),
    );
    note(
        "engine version",
        ha.engine_version.clone(),
        hb.engine_version.clone(),
    );
    note(
        "start instant (unix ns)",
        ha.start_unix_ns.to_string(),
        hb.start_unix_ns.to_string(),
    );
    note(
        "actor table (records are compared by actor name)",
        ha.actors.join(","),
        hb.actors.join(","),
    );
    note(
        "blob threshold (bytes)",
        ha.blob_threshold_bytes.to_string(),
        hb.blob_threshold_bytes.to_string(),
    );
    if mode != Mode::Outcome {
        note(
            "verdict",
            quote(&a.footer.verdict),
            quote(&b.footer.verdict),
        );
    }
    notes
}
