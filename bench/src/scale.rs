//! What the scale bars (`--bin diff_scale`, `--bin trace_scale`) share: the command line
//! and scratch directory, the process's peak memory, and the PASS/MISS word of a bar.

use std::path::Path;
use std::process::ExitCode;

/// Returns `PASS` or `MISS`.
pub fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "MISS"
    }
}

/// Resets the kernel's peak-RSS counter for this process (Linux `clear_refs` value 5), so a
/// bar measures only what follows; returns whether the kernel allowed it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Returns the peak resident set size (`VmHWM`), in KiB.
pub fn peak_rss_kib() -> Result<u64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .ok_or("no VmHWM line in /proc/self/status")?;
    Ok(line.trim().trim_end_matches("kB").trim().parse()?)
}

/// Runs a scale bar named `name`: reads `[RECORDS]` (at least `records_min`, default
/// `records_default`), hands `run` a fresh scratch directory, removes it afterwards; exits 2
/// on a usage error or on the error `run` returns.
pub fn main(
    name: &str,
    records_default: u64,
    records_min: u64,
    run: impl FnOnce(&Path, u64) -> Result<ExitCode, Box<dyn std::error::Error>>,
) -> ExitCode {
    let records = match std::env::args().nth(1).map(|arg| arg.parse::<u64>()) {
        None => records_default,
        Some(Ok(records)) if records >= records_min => records,
        Some(_) => {
            eprintln!(
                "usage: {name} [RECORDS]  (RECORDS >= {records_min}, default {records_default})"
            );
            return ExitCode::from(2);
        }
    };
    let dir = std::env::temp_dir().join(format!("simtape-{name}-{}", std::process::id()));
    let outcome = std::fs::create_dir_all(&dir)
        .map_err(Into::into)
        .and_then(|()| run(&dir, records));
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{name}: {error}");
            ExitCode::from(2)
        }
    }
}
