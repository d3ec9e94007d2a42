//! Whether a sandbox's programs are busy: every thread of every process under its init, by
//! the scheduler state `/proc` shows. A program blocked on a socket, a pipe, a timer or a
//! child is idle; one running, waiting for a CPU or in disk I/O is busy. The driver waits
//! for a busy agent before it closes a batch of requests, so a loaded machine (an agent
//! slow to reach its next request) batches them as an idle one does.

use std::path::Path;

use crate::limits::BUSY_PROCESSES_MAX;

/// Looks at the processes under one sandbox's init.
#[derive(Debug, Clone, Copy)]
pub struct BusyProbe {
    init: libc::pid_t,
}

impl BusyProbe {
    pub(super) fn new(init: libc::pid_t) -> BusyProbe {
        BusyProbe { init }
    }

    /// Whether a thread of a process under init (init itself left out: it is simtape's)
    /// is running, runnable or in uninterruptible sleep. A process gone meanwhile is idle.
    pub fn busy(&self) -> bool {
        let mut pending = children(self.init);
        let mut seen = 0;
        while let Some(pid) = pending.pop() {
            seen += 1;
            if seen > BUSY_PROCESSES_MAX {
                return false;
            }
            if threads_busy(pid) {
                return true;
            }
            pending.extend(children(pid));
        }
        false
    }
}

/// The children of every thread of `pid` (`/proc/PID/task/TID/children`).
fn children(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let mut found = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return found;
    };
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        found.extend(
            text.split_whitespace()
                .filter_map(|pid| pid.parse::<libc::pid_t>().ok()),
        );
    }
    found
}

/// Whether a thread of `pid` is in state R or D.
fn threads_busy(pid: libc::pid_t) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks
        .flatten()
        .any(|task| matches!(state(&task.path().join("stat")), Some('R' | 'D')))
}

/// The state letter of a `/proc/…/stat` file: the field after the command name, which
/// ends at the last `)` (a name may hold spaces and parentheses).
fn state(stat: &Path) -> Option<char> {
    let text = std::fs::read_to_string(stat).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    after.split_whitespace().next()?.chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_child_is_busy_and_a_sleeping_one_is_not() {
        // Goal: the probe tells a process using the CPU from one blocked in a sleep, looking
        // below the given parent as it does below a sandbox's init.
        let me = std::process::id() as libc::pid_t;
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let probe = BusyProbe::new(me);
        // This test's own threads may be running: look at the sleeper alone.
        assert!(!threads_busy(sleeper.id() as libc::pid_t));
        let mut spinner = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let spinning = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(5));
            threads_busy(spinner.id() as libc::pid_t)
        });
        assert!(spinning);
        assert!(children(me).contains(&(spinner.id() as libc::pid_t)));
        assert!(probe.busy());
        spinner.kill().unwrap();
        spinner.wait().unwrap();
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }
}
