//! Running a real program: in its own process group, with a timeout, with captured and capped
//! output, and with no member of the group left alive afterwards.
//!
//! This is the gateway's side of the process capability's seam: [`Spawner`] is the
//! [`ProcessRunner`] the core's process actor hands `real` and `record` programs to (the
//! core itself starts no process). It blocks: it runs inside the actor's `handle`, so the
//! simulation is paused while the program runs (no virtual time passes, no other task runs).
//!
//! Output goes to unnamed-by-the-pipeline temporary files, not pipes: a grandchild that keeps
//! a pipe open (a background `sleep`) cannot then block the capture, and no reader thread is
//! needed.

use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use simtape::cap::process::{
    Command, ExitStatus, Output, ProcessError, ProcessRunner, RunBounds, Truncation,
};

/// Runs programs for real: in a new process group, with the actor's timeout and output cap,
/// and no member of the group left alive afterwards. Give it to a scenario with
/// `EvalScenario::set_process_runner`, or to an actor with `ProcessActor::with_runner`.
///
/// ```
/// use std::sync::Arc;
/// use simtape::cap::process::{Command, ProcessActor};
/// use simtape_serve::outside::Spawner;
/// let mut builder = simtape::Sim::builder();
/// builder.process(ProcessActor::real().with_runner(Arc::new(Spawner)));
/// let report = builder.build().unwrap().run(|host| async move {
///     host.process().run(Command::new("echo").arg("hi")).await.unwrap().stdout
/// }).unwrap();
/// assert_eq!(report.output, b"hi\n");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Spawner;

impl ProcessRunner for Spawner {
    fn run(&self, command: &Command, bounds: &RunBounds) -> Result<Output, ProcessError> {
        run_real(command, *bounds)
    }
}

/// Measures the observed duration of a real run.
struct Stopwatch(std::time::Instant);

impl Stopwatch {
    // The observed duration is what the process tape records and replay turns into virtual
    // time; it never reaches the simulation's clock directly.
    fn start() -> Stopwatch {
        Stopwatch(std::time::Instant::now())
    }

    fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
}

/// Runs `command` for real and waits for it (and its group) to finish.
fn run_real(command: &Command, bounds: RunBounds) -> Result<Output, ProcessError> {
    let io = |detail: std::io::Error| ProcessError::Io {
        program: command.program.clone(),
        detail: detail.to_string(),
    };
    let files = TempFiles::create().map_err(io)?;
    let [stdin, stdout, stderr] = files.open(&command.stdin).map_err(io)?;
    let mut real = std::process::Command::new(&command.program);
    real.args(&command.args)
        .envs(&command.env)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    if let Some(cwd) = &command.cwd {
        real.current_dir(cwd);
    }
    // A new group whose id is the child's pid: TERM and KILL can then reach every
    // descendant that did not leave the group on purpose.
    std::os::unix::process::CommandExt::process_group(&mut real, 0);
    let stopwatch = Stopwatch::start();
    let mut child = real.spawn().map_err(|e| ProcessError::Spawn {
        program: command.program.clone(),
        detail: e.to_string(),
    })?;
    // From here on, the guard cleans the group up on every path out, panics included.
    let group = GroupGuard {
        pgid: child.id(),
        grace_ms: bounds.grace_ms,
    };
    let timeout = Duration::from_millis(bounds.timeout_ms);
    let mut poll = Duration::from_micros(100);
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait().map_err(io)? {
            break (status, false);
        }
        if stopwatch.elapsed() >= timeout {
            signal_group(group.pgid, "TERM");
            let status = match wait_for(&mut child, bounds.grace_ms).map_err(io)? {
                Some(status) => status,
                None => {
                    signal_group(group.pgid, "KILL");
                    child.wait().map_err(io)?
                }
            };
            break (status, true);
        }
        std::thread::sleep(poll);
        poll = (poll * 2).min(Duration::from_millis(5));
    };
    let duration_ns = u64::try_from(stopwatch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    drop(group);
    let (stdout, stdout_dropped_bytes) =
        read_capped(&files.stdout, bounds.output_bytes_max).map_err(io)?;
    let (stderr, stderr_dropped_bytes) =
        read_capped(&files.stderr, bounds.output_bytes_max).map_err(io)?;
    Ok(Output {
        status: exit_status(status),
        stdout,
        stderr,
        duration_ns,
        truncated: Truncation {
            stdout_dropped_bytes,
            stderr_dropped_bytes,
        },
        timed_out,
        fuel_consumed: None,
    })
}

fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitStatus::Code(code),
        (None, Some(signal)) => ExitStatus::Signal(signal),
        // Neither a code nor a signal is impossible for a child that was waited for.
        (None, None) => unreachable!("a waited-for child has an exit code or a signal"),
    }
}

/// Waits up to `grace_ms` for `child`; `None` when it is still running.
fn wait_for(
    child: &mut std::process::Child,
    grace_ms: u64,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let stopwatch = Stopwatch::start();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if stopwatch.elapsed() >= Duration::from_millis(grace_ms) {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Reads at most `max` bytes of `path`; returns them and how many were dropped.
fn read_capped(path: &PathBuf, max: u64) -> std::io::Result<(Vec<u8>, u64)> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut kept = Vec::new();
    file.take(max).read_to_end(&mut kept)?;
    let dropped = size.saturating_sub(kept.len() as u64);
    Ok((kept, dropped))
}

/// Ends every live member of a process group when dropped: TERM, then KILL after the grace.
#[derive(Debug)]
struct GroupGuard {
    pgid: u32,
    grace_ms: u64,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !group_has_live_members(self.pgid) {
            return;
        }
        signal_group(self.pgid, "TERM");
        let stopwatch = Stopwatch::start();
        while group_has_live_members(self.pgid) {
            if stopwatch.elapsed() >= Duration::from_millis(self.grace_ms) {
                signal_group(self.pgid, "KILL");
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Sends `signal` to every process of the group, through the `kill` program (so no `unsafe`
/// is needed).
fn signal_group(pgid: u32, signal: &str) {
    // A failure means the group is already gone: nothing is left to signal.
    let _ = std::process::Command::new("kill")
        .args(["-s", signal, "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Returns whether any process of group `pgid` is alive (not a zombie), from `/proc`.
///
/// Zombies do not count: an orphan's zombie waits for its new parent to reap it (and a
/// container's init may never do so), yet it runs nothing and holds nothing.
fn group_has_live_members(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // Without /proc, assume the worst so the caller signals the group.
        return true;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let is_pid = name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        is_pid
            && std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|stat| stat_state_and_group(&stat))
                .is_some_and(|(state, group)| group == pgid && state != 'Z' && state != 'X')
    })
}

/// Returns the state and process group from the text of `/proc/PID/stat`.
fn stat_state_and_group(stat: &str) -> Option<(char, u32)> {
    // The command name may hold spaces and parentheses; the fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _parent = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, group))
}

/// The stdin, stdout and stderr files of one run, removed when dropped.
#[derive(Debug)]
struct TempFiles {
    stdin: PathBuf,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl TempFiles {
    /// Names three files no other run uses (this process's id and a counter).
    fn create() -> std::io::Result<TempFiles> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir();
        let stem = format!("simtape-process-{}-{n}", std::process::id());
        let files = TempFiles {
            stdin: dir.join(format!("{stem}.stdin")),
            stdout: dir.join(format!("{stem}.stdout")),
            stderr: dir.join(format!("{stem}.stderr")),
        };
        // Leftovers of a crashed run with the same pid would make `create_new` fail.
        for path in [&files.stdin, &files.stdout, &files.stderr] {
            match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(files)
    }

    /// Creates the files (never through an existing file or link) and returns the child's
    /// stdin (holding `stdin`), stdout and stderr.
    fn open(&self, stdin: &[u8]) -> std::io::Result<[File; 3]> {
        let create = |path: &PathBuf| File::options().write(true).create_new(true).open(path);
        create(&self.stdin)?.write_all(stdin)?;
        Ok([
            File::open(&self.stdin)?,
            create(&self.stdout)?,
            create(&self.stderr)?,
        ])
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        // Best effort: a leftover temp file is harmless.
        for path in [&self.stdin, &self.stdout, &self.stderr] {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stat_state_and_group;

    #[test]
    fn stat_fields_follow_the_last_parenthesis() {
        // Goal: a command name with spaces and parentheses does not shift the fields.
        let stat = "4242 (a (b) c) S 1 4240 4240 0 -1 4194560";
        assert_eq!(stat_state_and_group(stat), Some(('S', 4240)));
        assert_eq!(stat_state_and_group("4242 (x) Z 1"), None);
    }
}
