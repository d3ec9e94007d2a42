//! The oracle: alignment, first divergence, modes, reports.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use simtape::oracle::{
    diff_bytes, diff_paths, diff_sources, DiffReport, DivergenceOp, HunkOp, IndexRange, Mode,
    OracleError, Side, TapeSource,
};
use simtape::tape::{
    BlobMode, RawRecord, RecordKind, ScenarioStamp, TapeError, TapeHeader, TapeReader, TapeSink,
    TapeWriter, CHECKPOINT_INTERVAL_RECORDS, FORMAT_VERSION,
};
use simtape::{Host, Sim};

/// What one run of [`workload`] does differently.
#[derive(Debug, Clone, Copy)]
struct Variant {
    seed: u64,
    /// Virtual time of one sleep step.
    step_us: u64,
    /// Reads the wall clock once more before tick `i` (a request and a reply that change
    /// nothing else: an extra `event` would renumber every later event).
    extra_before: Option<u64>,
    /// The `bytes` field of tick 7.
    bytes_of_tick_7: u64,
    /// The declared outcome.
    answer: u64,
    /// The footer verdict.
    verdict: &'static str,
    /// Length of a large event's text (stored as a blob above 64 bytes).
    text: &'static str,
}

const BASE: Variant = Variant {
    seed: 7,
    step_us: 2,
    extra_before: None,
    bytes_of_tick_7: 100,
    answer: 42,
    verdict: "ok",
    text: "the quick brown fox jumps over the lazy dog, again and again and again",
};

/// A small pipeline: sleeps, a worker task, structured events, a large event, an outcome.
async fn workload(host: Host, variant: Variant) {
    let worker = host.spawn("worker", async move {
        simtape::time::sleep(Duration::from_micros(5 * variant.step_us)).await;
    });
    let mut rng = host.rng("jitter");
    for i in 0..12u64 {
        host.sleep(Duration::from_micros(variant.step_us * (1 + rng.below(3))))
            .await;
        if variant.extra_before == Some(i) {
            host.wall_clock().await;
        }
        let bytes = if i == 7 { variant.bytes_of_tick_7 } else { 100 };
        host.event("tick", json!({ "i": i, "bytes": bytes })).await;
    }
    host.event("big", json!({ "text": variant.text })).await;
    worker.await.unwrap();
    host.outcome("answer", &variant.answer);
}

/// Runs [`workload`] into a tape at `path` (embedded blobs above 64 bytes).
fn record(path: &Path, variant: Variant) -> PathBuf {
    let mut builder = Sim::builder();
    builder
        .seed(variant.seed)
        .tape(path)
        .blob_threshold_bytes(64);
    let verdict = variant.verdict;
    builder
        .build()
        .unwrap()
        .run_with_verdict(
            move |host| workload(host, variant),
            move |_| verdict.to_string(),
        )
        .unwrap();
    path.to_path_buf()
}

/// Records the base run and `variant` under `dir`, and diffs them in `mode`.
fn diff_variant(dir: &Path, variant: Variant, mode: Mode) -> DiffReport {
    let a = record(&dir.join("a.tape"), BASE);
    let b = record(&dir.join("b.tape"), variant);
    diff_paths(&a, &b, mode).unwrap()
}

/// Returns the records of the tape at `path`.
fn records(path: &Path) -> Vec<simtape::tape::RawRecord> {
    let mut reader = TapeReader::open(path).unwrap();
    std::iter::from_fn(|| reader.next_record().unwrap()).collect()
}

fn tempdir(name: &str) -> PathBuf {
    crate::tempdir("oracle-tests", name)
}

#[test]
fn a_tape_equals_itself_in_every_mode() {
    // Goal: a tape compared with itself is equal in every mode, with exit code 0.
    let dir = tempdir("itself");
    let a = record(&dir.join("a.tape"), BASE);
    for mode in Mode::ALL {
        let report = diff_paths(&a, &a, mode).unwrap();
        assert!(report.equal, "{mode}: {report}");
        assert_eq!(
            (report.divergences, report.hunks_total, report.timing_only),
            (0, 0, 0)
        );
        assert_eq!(report.records_a, report.records_b);
        assert_eq!(report.exit_code(), 0);
        assert_eq!(report.first, None);
        assert!(report.notes.is_empty());
    }
    let report = diff_paths(&a, &a, Mode::Exact).unwrap();
    let count = report.records_a;
    assert_eq!(
        report.render_text(),
        format!("tapes equal (exact): {count} records in A, {count} in B\n")
    );
}

#[test]
fn same_seed_runs_are_equal() {
    // Goal: two runs of one seed make equal tapes; another seed is a note, not a divergence.
    let dir = tempdir("same-seed");
    let a = record(&dir.join("a.tape"), BASE);
    let b = record(&dir.join("b.tape"), BASE);
    assert!(diff_paths(&a, &b, Mode::Exact).unwrap().equal);
    let other = record(&dir.join("c.tape"), Variant { seed: 8, ..BASE });
    let report = diff_paths(&a, &other, Mode::Outcome).unwrap();
    assert!(report.equal, "{report}");
    assert_eq!(report.notes, vec!["seed differs: A 7, B 8".to_string()]);
}

#[test]
fn an_inserted_call_is_one_hunk() {
    // Goal: one extra actor call (a request and its reply) is one hunk, not a cascade, and the
    // first divergence names the inserted request.
    let dir = tempdir("inserted-call");
    let report = diff_variant(
        &dir,
        Variant {
            extra_before: Some(5),
            ..BASE
        },
        Mode::Exact,
    );
    assert_eq!(
        (report.hunks_total, report.divergences, report.timing_only),
        (1, 1, 0)
    );
    let hunk = &report.hunks[0];
    assert_eq!((hunk.op, hunk.count), (HunkOp::Inserted, 2));
    // Before the insertion the tapes are the same record for record.
    let (a_records, b_records) = (records(&dir.join("a.tape")), records(&dir.join("b.tape")));
    let same = |(x, y): &(&RawRecord, &RawRecord)| {
        (x.kind, x.t_ns, &x.payload) == (y.kind, y.t_ns, &y.payload)
    };
    let at = a_records.iter().zip(&b_records).take_while(same).count();
    let request = &b_records[at];
    let at = at as u64;
    assert_eq!(hunk.a, IndexRange { start: at, end: at });
    assert_eq!(
        hunk.b,
        IndexRange {
            start: at,
            end: at + 2
        }
    );
    let first = report.first.as_ref().unwrap();
    assert_eq!(first.op, DivergenceOp::Inserted);
    assert_eq!((first.index_a, first.index_b), (at, at));
    assert_eq!(
        (first.t_ns_a, first.t_ns_b),
        (a_records[at as usize].t_ns, request.t_ns)
    );
    assert_eq!(
        (first.actor.as_str(), first.kind.as_str()),
        ("clock", "request")
    );
    assert!(first
        .record
        .as_ref()
        .unwrap()
        .contains(r#""actor":"clock","task":1,"kind":"request""#));
    assert_eq!(report.content_by_actor.get("clock"), Some(&2));
    assert_eq!(report.content_by_kind.get("request"), Some(&1));
    assert_eq!(report.content_by_kind.get("reply"), Some(&1));
    assert_eq!(report.exit_code(), 1);
    // The same insertion seen from the other side is a deletion.
    let back = diff_paths(&dir.join("b.tape"), &dir.join("a.tape"), Mode::Exact).unwrap();
    assert_eq!(back.hunks[0].op, HunkOp::Deleted);
    assert_eq!(back.first.unwrap().op, DivergenceOp::Deleted);
}

#[test]
fn a_changed_payload_field_is_named_with_both_values() {
    // Goal: a changed field deep in a payload is reported by its path, with both values.
    let dir = tempdir("changed-field");
    let report = diff_variant(
        &dir,
        Variant {
            bytes_of_tick_7: 101,
            ..BASE
        },
        Mode::Semantic,
    );
    assert_eq!(report.hunks_total, 1);
    assert_eq!(
        (report.hunks[0].op, report.hunks[0].count),
        (HunkOp::Changed, 1)
    );
    let first = report.first.unwrap();
    assert_eq!(first.op, DivergenceOp::Changed);
    // The request payload is [operation, [name, fields]].
    assert_eq!(first.field.as_deref(), Some("payload/1/1/bytes"));
    assert_eq!(
        (first.value_a.as_deref(), first.value_b.as_deref()),
        (Some("100"), Some("101"))
    );
    assert_eq!(first.index_a, first.index_b);
}

#[test]
fn a_changed_blob_payload_is_decoded() {
    // Goal: payloads stored in the content store (embedded or sidecar) are fetched to name
    // the changed field.
    for sidecar in [false, true] {
        let dir = tempdir(if sidecar {
            "blob-sidecar"
        } else {
            "blob-embedded"
        });
        let run = |path: &Path, text: &'static str| {
            let mut builder = Sim::builder();
            builder
                .seed(1)
                .tape(path)
                .blob_threshold_bytes(64)
                .sidecar_blobs(sidecar);
            let variant = Variant { text, ..BASE };
            builder
                .build()
                .unwrap()
                .run(move |host| workload(host, variant))
                .unwrap();
        };
        run(&dir.join("a.tape"), BASE.text);
        run(
            &dir.join("b.tape"),
            "the quick brown cat jumps over the lazy dog, again and again and again",
        );
        let report = diff_paths(&dir.join("a.tape"), &dir.join("b.tape"), Mode::Exact).unwrap();
        assert_eq!(report.hunks_total, 1, "sidecar {sidecar}");
        let first = report.first.unwrap();
        assert_eq!(first.field.as_deref(), Some("payload/1/1/text"));
        assert!(first.value_b.unwrap().contains("brown cat"));
    }
}

#[test]
fn timing_only_changes_diverge_in_exact_mode_only() {
    // Goal: the same events at other times are divergences in exact mode, and only counted
    // in semantic mode.
    let dir = tempdir("timing");
    let slower = Variant { step_us: 3, ..BASE };
    let exact = diff_variant(&dir, slower, Mode::Exact);
    assert!(!exact.equal);
    assert_eq!(exact.hunks_total, 0);
    assert!(exact.timing_only > 10, "{exact}");
    assert_eq!(exact.divergences, exact.timing_only);
    let first = exact.first.as_ref().unwrap();
    assert_eq!(
        (first.op, first.field.as_deref()),
        (DivergenceOp::Timing, Some("t_ns"))
    );
    assert_eq!(
        (first.kind.as_str(), first.actor.as_str()),
        ("wake", "clock")
    );
    assert_ne!(first.t_ns_a, first.t_ns_b);
    assert_eq!(first.value_a, Some(first.t_ns_a.to_string()));

    let semantic = diff_paths(&dir.join("a.tape"), &dir.join("b.tape"), Mode::Semantic).unwrap();
    assert!(semantic.equal, "{semantic}");
    assert_eq!(semantic.timing_only, exact.timing_only);
    assert_eq!(semantic.exit_code(), 0);
    assert!(semantic.render_text().contains(&format!(
        "; {} timing-only differences ignored",
        exact.timing_only
    )));
}

#[test]
fn outcome_mode_compares_only_outcomes_and_verdicts() {
    // Goal: outcome mode ignores every other record, and catches a changed outcome value or
    // verdict; exact mode notes a verdict difference without diverging on it.
    let dir = tempdir("outcome");
    let noisy = Variant {
        extra_before: Some(2),
        bytes_of_tick_7: 1,
        step_us: 5,
        ..BASE
    };
    let report = diff_variant(&dir, noisy, Mode::Outcome);
    assert!(report.equal, "{report}");
    assert_eq!((report.records_a, report.records_b), (1, 1));

    let report = diff_variant(&dir, Variant { answer: 43, ..BASE }, Mode::Outcome);
    assert_eq!(report.divergences, 1);
    let first = report.first.unwrap();
    assert_eq!(
        (first.op, first.kind.as_str()),
        (DivergenceOp::Changed, "outcome")
    );
    assert_eq!(first.field.as_deref(), Some("payload/1"));
    assert_eq!(
        (first.value_a.as_deref(), first.value_b.as_deref()),
        (Some("42"), Some("43"))
    );

    let report = diff_variant(
        &dir,
        Variant {
            verdict: "failed",
            ..BASE
        },
        Mode::Outcome,
    );
    assert_eq!((report.divergences, report.hunks_total), (1, 0));
    let first = report.first.as_ref().unwrap();
    assert_eq!(
        (first.op, first.field.as_deref()),
        (DivergenceOp::Verdict, Some("verdict"))
    );
    assert_eq!(first.value_b.as_deref(), Some(r#""failed""#));
    assert!(report
        .render_text()
        .contains("verdict: A \"ok\", B \"failed\""));

    let exact = diff_paths(&dir.join("a.tape"), &dir.join("b.tape"), Mode::Exact).unwrap();
    assert!(exact.equal);
    assert_eq!(
        exact.notes,
        vec![r#"verdict differs: A "ok", B "failed""#.to_string()]
    );
}

#[test]
fn unreadable_tapes_are_errors_naming_the_side() {
    // Goal: a corrupt, truncated or missing tape is an error that names its side and path,
    // never a report.
    let dir = tempdir("unreadable");
    let good = record(&dir.join("good.tape"), BASE);
    let bytes = std::fs::read(&good).unwrap();

    let corrupt = dir.join("corrupt.tape");
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x5a;
    std::fs::write(&corrupt, &flipped).unwrap();
    let error = diff_paths(&good, &corrupt, Mode::Exact).unwrap_err();
    assert_eq!(error.side(), Side::B);
    assert!(matches!(
        &error,
        OracleError::Tape {
            source: TapeError::Corrupt { .. } | TapeError::ChainBroken { .. },
            ..
        }
    ));
    assert!(
        error
            .to_string()
            .starts_with(&format!("tape B ({}): ", corrupt.display())),
        "{error}"
    );

    let truncated = dir.join("truncated.tape");
    std::fs::write(&truncated, &bytes[..bytes.len() - 3]).unwrap();
    // A truncated tape (a killed run's) is no error: its whole records are compared, and
    // it diverges from the whole tape at its cut (here only the footer is missing).
    for mode in Mode::ALL {
        let report = diff_paths(&truncated, &good, mode).unwrap();
        assert!(!report.equal, "{mode:?}");
        assert_eq!(report.exit_code(), 1);
        let first = report.first.as_ref().unwrap();
        assert_eq!(
            first.value_a.as_deref(),
            Some("\"(none: the tape is truncated)\"")
        );
        assert!(
            report.notes[0].starts_with("tape A is a prefix: truncated tape: "),
            "{:?}",
            report.notes
        );
        assert!(diff_paths(&truncated, &truncated, mode).unwrap().equal);
    }

    let error = diff_paths(&good, &dir.join("missing.tape"), Mode::Exact).unwrap_err();
    assert!(matches!(
        error,
        OracleError::Tape {
            side: Side::B,
            source: TapeError::Io { .. },
            ..
        }
    ));
    let error = diff_bytes(b"SIMTAPE", &bytes, Mode::Exact).unwrap_err();
    assert!(matches!(
        error,
        OracleError::Tape {
            side: Side::A,
            source: TapeError::NotATape { .. },
            ..
        }
    ));
}

/// A tape in memory whose bytes change after the first time it is opened.
struct Rewritten {
    before: Vec<u8>,
    after: Vec<u8>,
    opened: std::cell::Cell<u32>,
}

impl TapeSource for Rewritten {
    type Bytes<'s> = &'s [u8];

    fn open_tape(&self) -> Result<TapeReader<&[u8]>, TapeError> {
        self.opened.set(self.opened.get() + 1);
        let bytes = if self.opened.get() == 1 {
            &self.before
        } else {
            &self.after
        };
        TapeReader::new(bytes.as_slice())
    }

    fn describe(&self) -> String {
        "rewritten".into()
    }
}

#[test]
fn a_tape_rewritten_between_passes_is_an_error() {
    // Goal: a tape whose records change between the oracle's passes is reported, not diffed.
    let dir = tempdir("rewritten");
    let read = |variant| std::fs::read(record(&dir.join("t.tape"), variant)).unwrap();
    let a = Rewritten {
        before: read(BASE),
        after: read(Variant {
            bytes_of_tick_7: 5,
            ..BASE
        }),
        opened: Default::default(),
    };
    let b = read(Variant {
        extra_before: Some(9),
        ..BASE
    });
    let error = diff_sources(&a, b.as_slice(), Mode::Exact).unwrap_err();
    assert!(matches!(&error, OracleError::Changed { side: Side::A, path } if path == "rewritten"));
}

/// A tape of `records` wake records written directly, as the scale benchmark writes them, with
/// one extra record before record `insert_at` when given.
fn wake_tape(path: &Path, actors: &[&str], records: u64, insert_at: Option<u64>) {
    let header = TapeHeader {
        format_version: FORMAT_VERSION,
        engine_version: "oracle-test".into(),
        seed: 1,
        start_unix_ns: 0,
        scenario: ScenarioStamp::default(),
        actors: actors.iter().map(|name| name.to_string()).collect(),
        blob_mode: "embedded".into(),
        blob_threshold_bytes: 4096,
        checkpoint_interval_records: CHECKPOINT_INTERVAL_RECORDS,
        sandbox: None,
        decisions: None,
    };
    let clock = actors.iter().position(|name| *name == "clock").unwrap() as u16;
    let mut writer = TapeWriter::new(
        TapeSink::create(path).unwrap(),
        &header,
        BlobMode::Embedded,
        u64::MAX,
    )
    .unwrap();
    for i in 0..records {
        let t_ns = 1_000 * i + (i * 7919) % 1_000;
        if insert_at == Some(i) {
            writer
                .write_value(t_ns, clock, 99, RecordKind::Request, &("tick", i))
                .unwrap();
        }
        writer
            .write_empty(t_ns, clock, (i % 17) as u32 + 1, RecordKind::Wake)
            .unwrap();
    }
    writer.finish(records * 1_000, "ok").unwrap();
}

#[test]
fn one_inserted_record_among_twenty_thousand() {
    // Goal: the scale benchmark at small size: one inserted record among 20,000 is exactly one
    // divergence at its index, and the report text is stable.
    let dir = tempdir("scale-small");
    let (a, b) = (dir.join("a.tape"), dir.join("b.tape"));
    wake_tape(&a, &["engine", "clock"], 20_000, None);
    wake_tape(&b, &["engine", "clock"], 20_000, Some(12_345));
    let report = diff_paths(&a, &b, Mode::Exact).unwrap();
    assert_eq!(report.divergences, 1);
    assert_eq!(
        report.hunks[0].b,
        IndexRange {
            start: 12_345,
            end: 12_346
        }
    );
    let expected = "\
tapes diverge (exact): 1 divergence (20000 records in A, 20001 in B)
first divergence: 1 record inserted in B at index 12345 (t=12.345055ms, actor clock, kind request, task 99)
  B: {\"t_ns\":12345055,\"actor\":\"clock\",\"task\":99,\"kind\":\"request\",\"payload\":[\"tick\",12345]}
hunks: 1
  inserted A 12345..12345 B 12345..12346 (1 record)
content differences by actor: clock 1
content differences by kind: request 1
timing-only differences: 0
";
    assert_eq!(report.render_text(), expected);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["mode"], "exact");
    assert_eq!(json["hunks"][0]["op"], "inserted");
    assert_eq!(json["first"]["op"], "inserted");
    assert_eq!(json["first"]["index_a"], 12_345);
}

#[test]
fn indices_count_checkpoints_and_actors_compare_by_name() {
    // Goal: hunk indices are tape record indices (checkpoints included), and tapes with
    // different actor tables still align by actor name.
    let dir = tempdir("checkpoints");
    let (a, b) = (dir.join("a.tape"), dir.join("b.tape"));
    let records = CHECKPOINT_INTERVAL_RECORDS + 100;
    wake_tape(&a, &["engine", "clock"], records, None);
    wake_tape(
        &b,
        &["engine", "llm", "clock"],
        records,
        Some(CHECKPOINT_INTERVAL_RECORDS + 50),
    );
    let report = diff_paths(&a, &b, Mode::Semantic).unwrap();
    assert_eq!(report.hunks_total, 1);
    // One checkpoint precedes the insertion in both tapes.
    let at = CHECKPOINT_INTERVAL_RECORDS + 51;
    assert_eq!(report.hunks[0].a, IndexRange { start: at, end: at });
    assert_eq!(
        report.hunks[0].b,
        IndexRange {
            start: at,
            end: at + 1
        }
    );
    assert_eq!(
        report.notes,
        vec!["actor table (records are compared by actor name) differs: A engine,clock, B engine,llm,clock"]
    );
}
