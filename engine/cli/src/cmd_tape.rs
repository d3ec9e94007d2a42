//! `simtape tape show | export | report | verify | unpack`.

use std::io::Write;
use std::path::Path;

use simtape::tape::{payload_to_json, verify_path, RawRecord, TapeError, TapeReader};
use simtape::time::{format_instant, format_ns};
use simtape_eval::view::html::tape::{TapeView, Window};
use simtape_eval::view::tree::{walk_tree, Style};
use simtape_eval::view::ViewError;

use crate::args::{ColorWhen, ExportFormat, TapeArgs, TapeCommand};
use crate::common::inputs;
use crate::exit::{CliError, CliResult, Outcome};
use simtape_eval::reproduce::command_line;

pub(crate) fn run(args: &TapeArgs) -> CliResult {
    match &args.command {
        TapeCommand::Show {
            tape,
            tree: true,
            color,
            ..
        } => show_tree(tape, *color),
        TapeCommand::Show { tape, limit, .. } => show(tape, *limit),
        TapeCommand::Report {
            tape,
            output,
            from,
            to,
        } => report(tape, output, *from, *to),
        TapeCommand::Export {
            tape,
            output,
            format,
            ..
        } => match format.unwrap_or(ExportFormat::Jsonl) {
            ExportFormat::Jsonl => export(tape, output.as_deref()),
            ExportFormat::ChromeTrace => export_trace(tape, output.as_deref()),
        },
        TapeCommand::Verify { tape } => verify(tape),
        TapeCommand::Unpack { tape, dir } => unpack(tape, dir),
    }
}

/// Opens a tape for a view. A truncated tape (a killed run's) is shown up to its cut, and
/// [`ended`] then says where it is cut.
fn open(path: &Path) -> Result<TapeReader<std::fs::File>, CliError> {
    TapeReader::open(path)
        .map(|r| r.keep_blobs(true).up_to_truncation())
        .map_err(|error| CliError::Tape {
            path: Some(path.to_path_buf()),
            error,
        })
}

/// What a view that read every record returns: success, or for a truncated tape a finding
/// (exit 1, as `tape verify` gives it), named on standard error after what was shown.
fn ended(path: &Path, reader: &TapeReader<std::fs::File>) -> CliResult {
    match reader.truncation() {
        None => Ok(Outcome::Success),
        Some(cut) => {
            eprintln!(
                "{}: {cut}; shown up to the last whole record",
                path.display()
            );
            Ok(Outcome::Finding)
        }
    }
}

fn record_json(reader: &TapeReader<std::fs::File>, record: &RawRecord) -> serde_json::Value {
    let payload = reader
        .resolve(record)
        .map_err(|e| e.to_string())
        .and_then(|bytes| payload_to_json(&bytes).map_err(|e| e.to_string()));
    let mut json = serde_json::json!({
        "seq": record.seq,
        "t_ns": record.t_ns,
        "actor": reader.actor_name(record.actor),
        "task": record.task,
        "kind": record.kind.name(),
    });
    match payload {
        Ok(value) => json["payload"] = value,
        Err(error) => json["payload_error"] = serde_json::Value::String(error),
    }
    if record.blob_ref {
        json["blob"] = serde_json::Value::String(simtape::tape::hex_encode(&record.payload));
    }
    json
}

fn show(path: &Path, limit: Option<u64>) -> CliResult {
    let mut reader = open(path)?;
    let header = reader.header().clone();
    println!(
        "tape {} (format v{}, engine {})",
        path.display(),
        header.format_version,
        header.engine_version
    );
    println!(
        "scenario {} (sha256 {})",
        header.scenario.name, header.scenario.digest
    );
    println!(
        "seed {}  start {}",
        header.seed,
        format_instant(header.start_unix_ns)
    );
    if let Some(stamp) = &header.decisions {
        println!(
            "decisions {} override(s) (file sha256 {})",
            stamp.overrides.len(),
            stamp.digest
        );
        if let Some(branch) = &stamp.branch {
            println!(
                "forked from sha256 {} at record {} (its seed {})",
                branch.parent, branch.record, branch.parent_seed
            );
        }
    }
    println!("actors {}", header.actors.join(", "));
    let mut shown = 0u64;
    loop {
        let record = match reader.next_record() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(error) => return Err(CliError::Tape { path: None, error }),
        };
        if limit.is_some_and(|l| shown >= l) {
            continue;
        }
        shown += 1;
        let json = record_json(&reader, &record);
        let payload = json
            .get("payload")
            .map(|p| p.to_string())
            .unwrap_or_default();
        println!(
            "{:>8} t={:<12} {:<8} task#{:<4} {:<10} {}",
            record.seq,
            format_ns(record.t_ns),
            reader.actor_name(record.actor),
            record.task,
            record.kind.name(),
            payload
        );
    }
    ended(path, &reader)
}

/// Opens the export's destination: the file, or standard output.
fn destination(output: Option<&Path>) -> Result<Box<dyn Write>, CliError> {
    Ok(match output {
        Some(file) => Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(file).map_err(CliError::io(file))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    })
}

fn export_trace(path: &Path, output: Option<&Path>) -> CliResult {
    let mut reader = open(path)?;
    let mut out = destination(output)?;
    simtape_eval::view::chrome_trace::write(&mut reader, &mut out)
        .map_err(|error| view_error(path, error))?;
    ended(path, &reader)
}

/// A view that failed: the tape (named) or the writing.
fn view_error(path: &Path, error: ViewError) -> CliError {
    match error {
        ViewError::Tape(error) => CliError::Tape {
            path: Some(path.to_path_buf()),
            error,
        },
        ViewError::Io(error) => CliError::write("writing the view")(error),
        other => CliError::Input(format!("{}: {other}", path.display())),
    }
}

fn show_tree(path: &Path, color: ColorWhen) -> CliResult {
    use std::io::IsTerminal as _;
    let color = match color {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => std::io::stdout().is_terminal(),
    };
    let mut reader = open(path)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let verdict_line = {
        let header = reader.header();
        format!(
            "tape {} · scenario {} · seed {}",
            path.display(),
            header.scenario.name,
            header.seed
        )
    };
    writeln!(out, "{verdict_line}").map_err(CliError::write("standard output"))?;
    walk_tree(&mut reader, |line| {
        let text = line.plain();
        if !color {
            return writeln!(out, "{text}");
        }
        // ANSI SGR: bold turns, cyan calls, green for what held, red for what failed.
        let code = match line.style {
            Style::Turn => "1",
            Style::Call => "36",
            Style::Good => "32",
            Style::Bad => "31",
            Style::Plain => "0",
        };
        writeln!(out, "\x1b[{code}m{text}\x1b[0m")
    })
    .map_err(|error| view_error(path, error))?;
    out.flush().map_err(CliError::write("standard output"))?;
    ended(path, &reader)
}

fn report(path: &Path, output: &Path, from: Option<u64>, to: Option<u64>) -> CliResult {
    let window = (from.is_some() || to.is_some()).then(|| Window {
        from_ns: from.unwrap_or(0),
        to_ns: to.unwrap_or(u64::MAX),
    });
    if window.is_some_and(|w| w.from_ns > w.to_ns) {
        return Err(CliError::Usage("--from is after --to".into()));
    }
    let mut reader = open(path)?;
    let view = TapeView::read(&mut reader, window).map_err(|error| view_error(path, error))?;
    let page = simtape_eval::view::html::tape::render(&view, &path.display().to_string());
    std::fs::write(output, page).map_err(CliError::io(output))?;
    println!("report: {}", output.display());
    ended(path, &reader)
}

fn export(path: &Path, output: Option<&Path>) -> CliResult {
    let mut reader = open(path)?;
    let mut out = destination(output)?;
    let io = CliError::write("writing the export");
    let header = serde_json::json!({ "header": reader.header() });
    writeln!(out, "{header}").map_err(io)?;
    loop {
        match reader.next_record() {
            Ok(Some(record)) => writeln!(out, "{}", record_json(&reader, &record)).map_err(io)?,
            Ok(None) => break,
            Err(error) => {
                out.flush().map_err(io)?;
                return Err(CliError::Tape { path: None, error });
            }
        }
    }
    out.flush().map_err(io)?;
    ended(path, &reader)
}

fn verify(path: &Path) -> CliResult {
    match verify_path(path) {
        Ok(report) => {
            println!(
                "ok: {} records, {} bytes, final hash {:016x}, verdict: {}",
                report.records, report.bytes, report.footer.final_hash, report.footer.verdict
            );
            if let Some(section) = &report.inputs {
                let (files, bytes) = section.inputs.stored();
                let store = section
                    .cas
                    .as_ref()
                    .map_or_else(|| "embedded".to_string(), |dir| format!("in {dir}/"));
                println!(
                    "inputs: {} entr(ies), {files} distinct file(s), {bytes} bytes, {store}",
                    section.inputs.entries().count()
                );
            }
            Ok(Outcome::Success)
        }
        Err(error @ TapeError::Truncated { .. }) => {
            println!("truncated: {}: {error}", path.display());
            Ok(Outcome::Finding)
        }
        Err(error) => Err(CliError::Tape {
            path: Some(path.to_path_buf()),
            error,
        }),
    }
}

fn unpack(path: &Path, dir: &Path) -> CliResult {
    let tape = inputs::read(path)?;
    let unpacked = inputs::unpack_into(&tape, dir)?;
    let scenario = &unpacked.scenario;
    match &tape.section {
        Some(section) => {
            let (files, bytes) = section.inputs.stored();
            println!(
                "unpacked {} and {} input entr(ies) ({files} distinct file(s), {bytes} bytes) into {}",
                scenario.display(),
                section.inputs.entries().count(),
                dir.display()
            );
        }
        None => println!(
            "unpacked {} (the tape carries no inputs: a scenario that names files needs them \
             beside it)",
            scenario.display()
        ),
    }
    let mut command = vec![
        "simtape".to_string(),
        "run".to_string(),
        scenario.display().to_string(),
        "--seed".to_string(),
        tape.header.seed.to_string(),
    ];
    if let Some(wasi) = &unpacked.process_wasi {
        command.push("--process-wasi".into());
        command.push(wasi.display().to_string());
    }
    println!("run: {}", command_line(&command));
    Ok(Outcome::Success)
}
