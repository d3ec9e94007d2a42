//! Sweep progress on standard error: one line rewritten with `\r` on a terminal (count, pass
//! rate so far, runs per second, ETA), plain lines at every tenth elsewhere. Wall time is read
//! here only, for the display; it never reaches a run or a report.

use std::io::{IsTerminal, Write};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use simtape_serve::sweep::{pool, Plan, Ran, Tasks};

use crate::exit::CliError;

/// Runs `tasks` of `plan` on the gateway's pool of `jobs` threads, drawing the progress of
/// `total` runs as they end.
pub(crate) fn run_pool(
    plan: Plan<'_>,
    tasks: Tasks<'_>,
    jobs: usize,
    stop: &AtomicBool,
    total: u64,
) -> Result<Ran, CliError> {
    let mut progress = Progress::new(total);
    let ran = pool::run(plan, tasks, jobs, stop, &mut |passed| {
        progress.record(passed)
    });
    progress.finish();
    Ok(ran?)
}

/// How often the terminal line is redrawn at most.
const REDRAW_INTERVAL: Duration = Duration::from_millis(100);

/// Counts finished runs and draws the progress.
#[derive(Debug)]
pub(crate) struct Progress {
    total: u64,
    done: u64,
    passed: u64,
    started: Instant,
    terminal: bool,
    last_drawn: Option<Instant>,
    /// The next tenth (1..=10) a plain line is printed at.
    next_tenth: u64,
}

impl Progress {
    /// Starts counting `total` runs.
    pub(crate) fn new(total: u64) -> Progress {
        Progress {
            total,
            done: 0,
            passed: 0,
            started: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            last_drawn: None,
            next_tenth: 1,
        }
    }

    /// Counts one finished run.
    pub(crate) fn record(&mut self, passed: bool) {
        self.done += 1;
        self.passed += u64::from(passed);
        if self.terminal {
            let now = Instant::now();
            let due = self
                .last_drawn
                .is_none_or(|last| now - last >= REDRAW_INTERVAL);
            if due || self.done == self.total {
                self.last_drawn = Some(now);
                eprint!("\r{}\x1b[K", self.line());
                let _ = std::io::stderr().flush();
            }
            return;
        }
        if self.next_tenth <= 10 && self.done * 10 >= self.next_tenth * self.total {
            while self.next_tenth <= 10 && self.done * 10 >= self.next_tenth * self.total {
                self.next_tenth += 1;
            }
            eprintln!("{}", self.line());
        }
    }

    /// Ends the terminal line.
    pub(crate) fn finish(&mut self) {
        if self.terminal && self.last_drawn.is_some() {
            eprintln!();
        }
    }

    fn line(&self) -> String {
        let seconds = self.started.elapsed().as_secs_f64();
        let rate = if seconds > 0.0 {
            self.done as f64 / seconds
        } else {
            0.0
        };
        let eta = if rate > 0.0 {
            format!("{:.0}s", (self.total - self.done) as f64 / rate)
        } else {
            "?".to_string()
        };
        let pass = 100.0 * self.passed as f64 / self.done.max(1) as f64;
        format!(
            "sweep: {}/{} runs, {pass:.1}% passed, {rate:.0} runs/s, ETA {eta}",
            self.done, self.total
        )
    }
}
