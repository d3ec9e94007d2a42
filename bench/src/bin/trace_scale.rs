//! `trace_scale`: the trace export's scale bar. Writes a tape of tool-like traffic (tasks
//! that spawn, file operations as request/reply pairs, model calls, wakes), exports it as a
//! Chrome/Perfetto trace, and checks the bar: 1,000,000 records in under 5 s with memory that
//! does not grow with the tape. Then writes the same tape's HTML page and checks that it stays
//! within its size budget.
//!
//! ```text
//! cargo run --release -p simtape-bench --bin trace_scale            # 1,000,000 records
//! cargo run --release -p simtape-bench --bin trace_scale -- 20000   # a quick smoke run
//! cargo run --release -p simtape-bench --bin trace_scale -- 1000000 page.html   # keep the page
//! ```
//!
//! Prints the tape's size and final hash, the trace's size and event count, the elapsed
//! seconds, the export's peak resident memory, the page's size and time, and PASS or MISS for
//! each bar. Exits 0 after a complete run (a missed bar is reported, not fatal), 2 on a usage
//! or I/O error.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use simtape_bench::scale::{peak_rss_kib, reset_peak_rss, verdict};

/// The `simtape` binary's allocator, so the bar measures what `tape export` does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use simtape::tape::{
    BlobMode, RecordKind, ScenarioStamp, TapeHeader, TapeReader, TapeSink, TapeSummary, TapeWriter,
    CHECKPOINT_INTERVAL_RECORDS, FORMAT_VERSION,
};

/// Records in the tape unless the first argument says otherwise.
const RECORDS_DEFAULT: u64 = 1_000_000;
/// The time bar for the export, in seconds.
const ELAPSED_SECONDS_MAX: f64 = 5.0;
/// The memory bar for the export, in MiB: flat, whatever the tape's length.
const PEAK_MIB_MAX: f64 = 64.0;
/// The size bar for the tape's HTML page, in MiB (docs/viewing.md, "Size budget").
const PAGE_MIB_MAX: f64 = 25.0;
/// Tool tasks open at once.
const TASKS_CONCURRENT: u32 = 8;
/// The header's actor table: the engine's three, then the capabilities the traffic uses.
const ACTORS: [&str; 6] = ["engine", "clock", "events", "fs", "llm", "agent"];
const ENGINE: u16 = 0;
const CLOCK: u16 = 1;
const FS: u16 = 3;
const LLM: u16 = 4;

fn main() -> ExitCode {
    simtape_bench::scale::main("trace_scale", RECORDS_DEFAULT, 100, run)
}

fn run(dir: &Path, records: u64) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (tape, trace) = (dir.join("run.tape"), dir.join("run.json"));
    let summary = write_tape(&tape, records)?;
    println!(
        "tape: {} records, {} bytes, final hash {:016x}",
        summary.record_count, summary.bytes, summary.final_hash
    );
    let peak_scope = if reset_peak_rss() {
        "the export"
    } else {
        "the whole process"
    };
    let started = Instant::now();
    let mut reader = TapeReader::open(&tape)?.keep_blobs(true);
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&trace)?);
    let events = simtape_eval::view::chrome_trace::write(&mut reader, &mut out)?;
    drop(out);
    let elapsed_seconds = started.elapsed().as_secs_f64();
    let peak_mib = peak_rss_kib()? as f64 / 1024.0;
    println!(
        "trace: {events} events, {} bytes",
        std::fs::metadata(&trace)?.len()
    );
    println!("elapsed: {elapsed_seconds:.3} s");
    println!("peak RSS ({peak_scope}): {peak_mib:.1} MiB");
    println!(
        "bar elapsed < {ELAPSED_SECONDS_MAX} s: {}",
        verdict(elapsed_seconds < ELAPSED_SECONDS_MAX)
    );
    println!(
        "bar peak RSS < {PEAK_MIB_MAX} MiB: {}",
        verdict(peak_mib < PEAK_MIB_MAX)
    );
    page(&tape, std::env::args_os().nth(2).as_deref().map(Path::new))?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the tape's HTML page (kept at `keep` when given) and checks its size bar.
fn page(tape: &Path, keep: Option<&Path>) -> Result<(), Box<dyn std::error::Error>> {
    use simtape_eval::view::html::tape::{render, TapeView};
    let started = Instant::now();
    let mut reader = TapeReader::open(tape)?.keep_blobs(true);
    let view = TapeView::read(&mut reader, None)?;
    let html = render(&view, "run.tape");
    let elapsed_seconds = started.elapsed().as_secs_f64();
    let page_mib = html.len() as f64 / (1024.0 * 1024.0);
    println!(
        "page: {:.1} MiB, {} slices and instants drawn, {} lanes summarized, {elapsed_seconds:.3} s",
        page_mib,
        view.timeline.slices.len() + view.timeline.instants.len(),
        view.timeline.beyond.len()
    );
    println!(
        "bar page < {PAGE_MIB_MAX} MiB: {}",
        verdict(page_mib < PAGE_MIB_MAX)
    );
    if let Some(path) = keep {
        std::fs::write(path, html)?;
    }
    Ok(())
}

/// Writes about `records` records: rounds in which the main task asks the model, then
/// `TASKS_CONCURRENT` tool tasks each stat, read and write a file (request, wake, reply) and
/// exit.
fn write_tape(path: &Path, records: u64) -> Result<TapeSummary, Box<dyn std::error::Error>> {
    let header = TapeHeader {
        format_version: FORMAT_VERSION,
        engine_version: env!("CARGO_PKG_VERSION").to_string(),
        seed: 1,
        start_unix_ns: 0,
        scenario: ScenarioStamp::default(),
        actors: ACTORS.iter().map(|a| a.to_string()).collect(),
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
    let sha = "5ae2c821a550658c21a186aef5b22d264949fd039ae585e2a85efa1a08934665";
    let mut t_ns = 0u64;
    let mut next_task = 2u32;
    writer.write_value(0, ENGINE, 0, RecordKind::Spawn, &(1u32, "main"))?;
    while writer.records() < records {
        writer.write_value(
            t_ns,
            LLM,
            1,
            RecordKind::Request,
            &("complete", ("model", 2u32)),
        )?;
        t_ns += 400_000_000;
        let answer = ("digest", 3u32, 0u32, (359u32, 44u32));
        writer.write_value(t_ns, LLM, 1, RecordKind::Reply, &("complete", answer))?;
        let first = next_task;
        for _ in 0..TASKS_CONCURRENT {
            writer.write_value(
                t_ns,
                ENGINE,
                1,
                RecordKind::Spawn,
                &(next_task, "tool edit_file"),
            )?;
            next_task += 1;
        }
        for operation in ["stat", "read", "write"] {
            for task in first..next_task {
                let file = format!("src/file-{}.rs", task % 97);
                writer.write_value(
                    t_ns,
                    FS,
                    task,
                    RecordKind::Request,
                    &(operation, (&file, (47u32, sha))),
                )?;
            }
            for task in first..next_task {
                t_ns += 1_000_000 + u64::from(task % 7) * 13_000;
                writer.write_empty(t_ns, CLOCK, task, RecordKind::Wake)?;
                writer.write_value(
                    t_ns,
                    FS,
                    task,
                    RecordKind::Reply,
                    &(operation, ("Ok", 47u32)),
                )?;
            }
        }
        for task in first..next_task {
            writer.write_value(t_ns, ENGINE, task, RecordKind::Exit, &("ok",))?;
        }
    }
    writer.write_value(t_ns, ENGINE, 1, RecordKind::Exit, &("ok",))?;
    Ok(writer.finish(t_ns, "ok")?)
}
