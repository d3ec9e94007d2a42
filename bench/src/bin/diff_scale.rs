//! `diff_scale`: the oracle's scale bar. Writes two tapes of wake-like records that differ in
//! one inserted record, diffs them, and checks one divergence in under 2 s and 64 MiB.
//!
//! ```text
//! cargo run --release -p simtape-bench --bin diff_scale            # 1,000,000 records
//! cargo run --release -p simtape-bench --bin diff_scale -- 20000   # a quick smoke run
//! ```
//!
//! Prints the tapes' final hashes (so a faster run can be seen to diff the same tapes), the
//! elapsed seconds, the peak resident memory, the divergence count, and PASS or MISS for each
//! bar. Exits 0 after a complete run (a missed bar is reported, not fatal), 1 when the diff
//! did not find exactly the inserted record, 2 on a usage or I/O error.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use simtape_bench::scale::{peak_rss_kib, reset_peak_rss, verdict};

use simtape::oracle::{diff_paths, HunkOp, IndexRange, Mode};
use simtape::tape::{
    BlobMode, RecordKind, ScenarioStamp, TapeError, TapeHeader, TapeSink, TapeSummary, TapeWriter,
    CHECKPOINT_INTERVAL_RECORDS, FORMAT_VERSION,
};

/// Records per tape unless the first argument says otherwise.
const RECORDS_DEFAULT: u64 = 1_000_000;
/// The time bar for the diff, in seconds.
const ELAPSED_SECONDS_MAX: f64 = 2.0;
/// The memory bar for the whole process, in MiB.
const PEAK_MIB_MAX: f64 = 64.0;
/// The actor that writes the records (index into the header's actor table).
const CLOCK_ACTOR: u16 = 1;

fn main() -> ExitCode {
    simtape_bench::scale::main("diff_scale", RECORDS_DEFAULT, 2, run)
}

fn run(dir: &Path, records: u64) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (a, b) = (dir.join("a.tape"), dir.join("b.tape"));
    let insert_at = records / 2;
    let summary_a = write_tape(&a, records, None)?;
    let summary_b = write_tape(&b, records, Some(insert_at))?;
    println!(
        "records: A {records}, B {} (one inserted before record {insert_at})",
        records + 1
    );
    println!(
        "tape A: {} bytes, final hash {:016x}",
        summary_a.bytes, summary_a.final_hash
    );
    println!(
        "tape B: {} bytes, final hash {:016x}",
        summary_b.bytes, summary_b.final_hash
    );

    // Measure the diff's own peak where the kernel allows resetting the high-water mark;
    // otherwise the peak covers the whole process (writing the tapes needs little memory).
    let peak_scope = if reset_peak_rss() {
        "the diff"
    } else {
        "the whole process"
    };
    let started = Instant::now();
    let report = diff_paths(&a, &b, Mode::Exact)?;
    let elapsed_seconds = started.elapsed().as_secs_f64();
    let peak_mib = peak_rss_kib()? as f64 / 1024.0;

    let found = report.hunks.first().map(|hunk| (hunk.op, hunk.b));
    let expected_index = expected_index(insert_at);
    let expected = (
        HunkOp::Inserted,
        IndexRange {
            start: expected_index,
            end: expected_index + 1,
        },
    );
    let exact = report.divergences == 1 && found == Some(expected);
    println!("divergences: {} (first hunk {found:?})", report.divergences);
    println!("elapsed: {elapsed_seconds:.3} s");
    println!("peak RSS ({peak_scope}): {peak_mib:.1} MiB");
    println!(
        "bar one divergence at index {expected_index}: {}",
        verdict(exact)
    );
    println!(
        "bar elapsed < {ELAPSED_SECONDS_MAX} s: {}",
        verdict(elapsed_seconds < ELAPSED_SECONDS_MAX)
    );
    println!(
        "bar peak RSS < {PEAK_MIB_MAX} MiB: {}",
        verdict(peak_mib < PEAK_MIB_MAX)
    );
    if !exact {
        print!("{}", report.render_text());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `records` wake records (varying time and task), with one request record inserted
/// before record `insert_at` when given.
fn write_tape(path: &Path, records: u64, insert_at: Option<u64>) -> Result<TapeSummary, TapeError> {
    let header = TapeHeader {
        format_version: FORMAT_VERSION,
        engine_version: env!("CARGO_PKG_VERSION").to_string(),
        seed: 1,
        start_unix_ns: 0,
        scenario: ScenarioStamp::default(),
        actors: vec!["engine".into(), "clock".into()],
        blob_mode: "embedded".into(),
        blob_threshold_bytes: 4096,
        checkpoint_interval_records: CHECKPOINT_INTERVAL_RECORDS,
        sandbox: None,
        decisions: None,
    };
    let mut writer = TapeWriter::new(
        TapeSink::create(path)?,
        &header,
        BlobMode::Embedded,
        u64::MAX,
    )?;
    for i in 0..records {
        // Times advance about 1 µs a record with a deterministic jitter; tasks cycle, so
        // neighbouring records differ and the alignment cannot pair them by luck.
        let t_ns = 1_000 * i + (i * 7_919) % 1_000;
        let task = (i % 61) as u32 + 1;
        if insert_at == Some(i) {
            writer.write_value(t_ns, CLOCK_ACTOR, task, RecordKind::Request, &("now", i))?;
        }
        writer.write_empty(t_ns, CLOCK_ACTOR, task, RecordKind::Wake)?;
    }
    writer.finish(1_000 * records, "ok")
}

/// Returns the tape index of the record inserted before record `insert_at`: checkpoints count
/// as records. The writer puts one before every record whose index is a multiple of the
/// interval, so the first block holds `interval` records and every later one `interval - 1`.
fn expected_index(insert_at: u64) -> u64 {
    let interval = CHECKPOINT_INTERVAL_RECORDS;
    match insert_at.checked_sub(interval) {
        None => insert_at,
        Some(past_first_block) => insert_at + 1 + past_first_block / (interval - 1),
    }
}
