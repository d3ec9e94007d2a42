//! The agent process: started in a process group of its own, so it and everything it starts
//! (a test run by its shell tool, a language server) end together: SIGTERM to the group,
//! then SIGKILL after [`KILL_GRACE`]; dropping a process kills its group. Its stdout is read
//! line by line (lines capped at [`LINE_BYTES_MAX`]); its stderr is kept up to
//! [`STDERR_BYTES_MAX`], the rest counted.

use std::path::Path;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use smol::io::AsyncReadExt;

use crate::limits::{
    KILL_GRACE, LINE_BYTES_MAX, STDERR_BYTES_MAX, STDERR_TAIL_BYTES, STDERR_TAIL_LINES,
    STDERR_TAIL_LINE_CHARS,
};

/// What to start.
#[derive(Debug, Clone)]
pub struct Spawn<'a> {
    /// The program.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [String],
    /// Its environment, on top of simtape's own.
    pub env: &'a [(String, String)],
    /// Its working directory.
    pub cwd: &'a Path,
}

/// A running agent process (the leader of its group).
#[derive(Debug)]
pub struct AgentProcess {
    child: smol::process::Child,
    group: Pid,
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Its exit status.
    Code(i32),
    /// A signal ended it.
    Signal,
}

impl AgentProcess {
    /// Starts `spawn` with stdin closed and stdout and stderr piped.
    pub fn start(spawn: &Spawn<'_>) -> std::io::Result<AgentProcess> {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new(spawn.program);
        command
            .args(spawn.args)
            .envs(spawn.env.iter().map(|(k, v)| (k, v)))
            .current_dir(spawn.cwd)
            .process_group(0);
        // The conversion keeps the program, arguments, environment, directory and group, not
        // the standard streams: those are set on the async command.
        let child = smol::process::Command::from(command)
            .stdin(smol::process::Stdio::null())
            .stdout(smol::process::Stdio::piped())
            .stderr(smol::process::Stdio::piped())
            .spawn()?;
        let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        Ok(AgentProcess { child, group })
    }

    /// Takes its stdout (once).
    pub fn stdout(&mut self) -> Option<smol::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// Takes its stderr (once).
    pub fn stderr(&mut self) -> Option<smol::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// Waits for the leader to exit.
    pub async fn wait(&mut self) -> Exit {
        match self.child.status().await {
            Ok(status) => status.code().map_or(Exit::Signal, Exit::Code),
            Err(_) => Exit::Signal,
        }
    }

    /// Ends the whole group: SIGTERM, then SIGKILL after [`KILL_GRACE`] if the leader is
    /// still there; the group's other members get SIGKILL either way. Returns how the leader
    /// ended.
    pub async fn stop(&mut self) -> Exit {
        let _ = killpg(self.group, Signal::SIGTERM);
        let exited = smol::future::or(async { Some(self.wait().await) }, async {
            smol::Timer::after(KILL_GRACE).await;
            None
        })
        .await;
        let _ = killpg(self.group, Signal::SIGKILL);
        match exited {
            Some(exit) => exit,
            None => self.wait().await,
        }
    }

    /// Kills what is left of the group once the leader has exited (background processes the
    /// agent started and did not end).
    pub fn sweep(&self) {
        let _ = killpg(self.group, Signal::SIGKILL);
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        // Nothing outlives the session, whatever path left it.
        let _ = killpg(self.group, Signal::SIGKILL);
        let _ = self.child.kill();
    }
}

/// Reads `stream` line by line into `line` (each without its newline; a line over
/// [`LINE_BYTES_MAX`] is cut there and the rest of it skipped) until the end.
pub async fn read_lines(mut stream: impl smol::io::AsyncRead + Unpin, mut line: impl FnMut(&str)) {
    let mut pending: Vec<u8> = Vec::new();
    let mut skipping = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &byte in &chunk[..n] {
            if byte == b'\n' {
                if !skipping || !pending.is_empty() {
                    line(&String::from_utf8_lossy(&pending));
                }
                pending.clear();
                skipping = false;
            } else if pending.len() < LINE_BYTES_MAX && !skipping {
                pending.push(byte);
            } else if !skipping {
                line(&String::from_utf8_lossy(&pending));
                pending.clear();
                skipping = true;
            }
        }
    }
    if !pending.is_empty() {
        line(&String::from_utf8_lossy(&pending));
    }
}

/// Reads `stream` to its end, keeping its first [`STDERR_BYTES_MAX`] bytes; returns them
/// and how many more there were.
pub async fn read_capped(stream: impl smol::io::AsyncRead + Unpin) -> (Vec<u8>, u64) {
    read_capped_to(stream, STDERR_BYTES_MAX).await
}

/// An agent's stderr as kept: its first bytes, how many more there were, and its last bytes
/// (the end of a crash's report is past the first bytes of a chatty program's).
#[derive(Debug, Default)]
pub(crate) struct Stderr {
    /// The first [`STDERR_BYTES_MAX`] bytes.
    pub(crate) head: Vec<u8>,
    /// Bytes beyond them.
    pub(crate) dropped: u64,
    /// The last [`STDERR_TAIL_BYTES`] bytes.
    pub(crate) tail: Vec<u8>,
}

/// Reads an agent's stderr to its end: its head, capped, and its tail.
pub(crate) async fn read_stderr(mut stream: impl smol::io::AsyncRead + Unpin) -> Stderr {
    let mut kept = Stderr::default();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let room = STDERR_BYTES_MAX.saturating_sub(kept.head.len()).min(n);
        kept.head.extend_from_slice(&chunk[..room]);
        kept.dropped += (n - room) as u64;
        kept.tail.extend_from_slice(&chunk[..n]);
        let over = kept.tail.len().saturating_sub(STDERR_TAIL_BYTES);
        kept.tail.drain(..over);
    }
    kept
}

/// The last lines of `tail` (an agent's stderr), for a FAIL reason: at most
/// [`STDERR_TAIL_LINES`], each cut to [`STDERR_TAIL_LINE_CHARS`] characters, blank lines and
/// terminal escapes left out, then `normalize`d (the agent's places, as in its requests).
pub(crate) fn tail_lines(tail: &[u8], normalize: impl Fn(&str) -> String) -> Vec<String> {
    let text = String::from_utf8_lossy(tail);
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let line: String = printable(line).take(STDERR_TAIL_LINE_CHARS).collect();
            normalize(line.trim_end())
        })
        .filter(|line| !line.trim().is_empty())
        .collect();
    let skip = lines.len().saturating_sub(STDERR_TAIL_LINES);
    lines.into_iter().skip(skip).collect()
}

/// The characters of `line` a reader sees: terminal escape sequences (`ESC [ … letter`) and
/// other control characters but tabs left out.
fn printable(line: &str) -> impl Iterator<Item = char> + '_ {
    let mut escape = false;
    line.chars().filter(move |&c| {
        if escape {
            escape = !(c.is_ascii_alphabetic() || c == '~');
            return false;
        }
        escape = c == '\x1b';
        !c.is_control() || c == '\t'
    })
}

/// Reads `stream` to its end, keeping its first `cap` bytes; returns them and how many more
/// there were.
pub async fn read_capped_to(
    mut stream: impl smol::io::AsyncRead + Unpin,
    cap: usize,
) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let room = cap.saturating_sub(kept.len()).min(n);
        kept.extend_from_slice(&chunk[..room]);
        dropped += (n - room) as u64;
    }
    (kept, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_tail_of_stderr_is_its_last_lines() {
        // A chatty program's crash report is at the end, past the kept head; the tail keeps
        // the last lines, without escapes, blank lines or over-long lines.
        let mut input = "noise\n".repeat(STDERR_BYTES_MAX / 3).into_bytes();
        input.extend(b"Traceback (most recent call last):\n\n\x1b[31mValueError: bad\x1b[0m\n");
        let kept = smol::block_on(read_stderr(&input[..]));
        assert_eq!(kept.head.len(), STDERR_BYTES_MAX);
        assert!(kept.dropped > 0);
        let lines = tail_lines(&kept.tail, |line| line.replace("bad", "<x>"));
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(
            lines[STDERR_TAIL_LINES - 2],
            "Traceback (most recent call last):"
        );
        assert_eq!(lines[STDERR_TAIL_LINES - 1], "ValueError: <x>");
        let long = "y".repeat(STDERR_TAIL_LINE_CHARS * 2);
        assert_eq!(
            tail_lines(long.as_bytes(), str::to_string)[0].len(),
            STDERR_TAIL_LINE_CHARS
        );
    }

    #[test]
    fn lines_are_split_and_a_long_line_is_cut() {
        let mut input = b"one\ntwo\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', LINE_BYTES_MAX + 10));
        input.extend(b"\nthree");
        let mut lines = Vec::new();
        smol::block_on(read_lines(&input[..], |line| lines.push(line.len())));
        assert_eq!(lines, vec![3, 3, LINE_BYTES_MAX, 5]);
    }

    #[test]
    fn stderr_is_capped_and_the_rest_counted() {
        let input = vec![b'e'; STDERR_BYTES_MAX + 100];
        let (kept, dropped) = smol::block_on(read_capped(&input[..]));
        assert_eq!((kept.len(), dropped), (STDERR_BYTES_MAX, 100));
    }

    #[test]
    fn stopping_ends_a_group_that_ignores_sigterm() {
        // A shell that ignores SIGTERM, with a child of its own: both must be gone.
        let script = "trap '' TERM; sleep 300 & echo $! > pid; wait";
        let dir = std::env::temp_dir().join(format!("simtape-stop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let args = vec!["-c".to_string(), script.to_string()];
        let spawn = Spawn {
            program: Path::new("sh"),
            args: &args,
            env: &[],
            cwd: &dir,
        };
        let mut process = AgentProcess::start(&spawn).unwrap();
        let pid_file = dir.join("pid");
        while !pid_file.exists() {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(50));
        let started = std::time::Instant::now();
        let exit = smol::block_on(process.stop());
        assert_eq!(exit, Exit::Signal);
        assert!(
            started.elapsed() >= KILL_GRACE,
            "SIGTERM was ignored: the grace ran out"
        );
        let sleeper: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let alive = nix::sys::signal::kill(Pid::from_raw(sleeper), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
                .map(|stat| stat.contains(") Z "))
                .unwrap_or(true);
        assert!(!alive, "the group's other member was killed too");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
