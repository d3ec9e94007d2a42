//! What a sweep shows as it runs: progress on standard error, one line rewritten with `\r`
//! on a terminal (count, pass rate so far, runs per second, ETA), plain lines at every tenth
//! elsewhere, and the lines on the known failures. Wall time is read here only, for the
//! display; it never reaches a run or a report.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use simtape_eval::failures::Replayed;
use simtape_serve::sweep::{Observer, ShrunkReplay};

use crate::sweep::known;

/// What a sweep (or `simtape ci`'s replay of known failures) shows as it runs: the progress
/// of each pool, and what became of the known failures, on standard output or, when the
/// report goes there, standard error.
#[derive(Debug)]
pub(crate) struct Shown {
    progress: Option<Progress>,
    summary_on_stderr: bool,
}

impl Shown {
    /// Shows a sweep; the known failures' lines go to standard error when
    /// `summary_on_stderr`.
    pub(crate) fn new(summary_on_stderr: bool) -> Shown {
        Shown {
            progress: None,
            summary_on_stderr,
        }
    }
}

impl Observer for Shown {
    fn known_first(&mut self, count: usize, dir: &Path) {
        eprintln!(
            "sweep: {count} known failure seed(s) first ({})",
            dir.display()
        );
    }

    fn known_judged(&mut self, dir: &Path, replayed: Option<&[Replayed]>, shrunk: &[ShrunkReplay]) {
        let mut text = replayed.map_or_else(String::new, |replayed| known::text(dir, replayed));
        text.push_str(&known::shrunk_text(shrunk));
        match self.summary_on_stderr {
            true => eprint!("{text}"),
            false => print!("{text}"),
        }
    }

    fn pool_started(&mut self, total: u64) {
        self.progress = Some(Progress::new(total));
    }

    fn run_ended(&mut self, passed: bool) {
        if let Some(progress) = &mut self.progress {
            progress.record(passed);
        }
    }

    fn pool_ended(&mut self) {
        if let Some(mut progress) = self.progress.take() {
            progress.finish();
        }
    }
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
