//! `kill -9` at seeded instants during `run`, `serve` and `sweep`: every tape left behind is
//! whole or a prefix that `tape verify` names (exit 1, the last whole record), never empty
//! or unreadable, and `tape show` and `diff` read each prefix up to its cut.
//!
//! Each command is killed at 100 instants drawn from a seeded generator over about the
//! command's own wall time (measured once first, so a slow machine stretches the instants
//! with it): the test's wall time is about 100 times each command's.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{repo, scratch, simtape, text};

/// Kills per command.
const KILLS: u64 = 100;

/// SplitMix64: the kill instants, the same every run of the test.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What a kill left at a tape's path.
#[derive(Debug, Default)]
struct Left {
    /// No tape yet: the kill came before the run created it.
    absent: u64,
    whole: u64,
    prefix: u64,
}

impl Left {
    /// Checks the tape at `path` and counts it. A prefix must name its last whole record;
    /// every `check_views`-th prefix is also shown and diffed against `whole`.
    fn check(&mut self, path: &Path, whole: &Path, at: &str) {
        if !path.exists() {
            self.absent += 1;
            return;
        }
        let size = std::fs::metadata(path).unwrap().len();
        assert!(size > 0, "{at}: an empty tape at {}", path.display());
        let verify = simtape()
            .args(["tape", "verify"])
            .arg(path)
            .output()
            .unwrap();
        let shown = text(&verify);
        match verify.status.code() {
            Some(0) => self.whole += 1,
            Some(1) => {
                assert!(
                    shown.contains("truncated tape: ")
                        && (shown.contains("the last whole record is ")
                            || shown.contains("no record is whole; the header is")),
                    "{at}: {shown}"
                );
                self.prefix += 1;
                if self.prefix % 10 == 1 {
                    check_views(path, whole, at);
                }
            }
            _ => panic!("{at}: the tape is unreadable: {shown}"),
        }
    }

    /// Checks that at least `prefixes_min` kills landed while a tape was being written: the
    /// case under test, which a kill too early or too late would not show.
    fn assert_meaningful(&self, command: &str, prefixes_min: u64) {
        eprintln!("{command}: {self:?} of {KILLS} kills");
        assert_eq!(self.absent + self.whole + self.prefix, KILLS);
        assert!(self.prefix >= prefixes_min, "{command}: {self:?}");
    }
}

/// `tape show` prints a prefix's records and names the cut (exit 1); `diff` against the
/// whole run compares them (exit 0 or 1, never 2).
fn check_views(prefix: &Path, whole: &Path, at: &str) {
    let show = simtape()
        .args(["tape", "show"])
        .arg(prefix)
        .output()
        .unwrap();
    assert_eq!(show.status.code(), Some(1), "{at}: {}", text(&show));
    assert!(
        String::from_utf8_lossy(&show.stderr).contains("shown up to the last whole record"),
        "{at}: {}",
        text(&show)
    );
    let diff = simtape()
        .arg("diff")
        .arg(prefix)
        .arg(whole)
        .output()
        .unwrap();
    assert!(
        matches!(diff.status.code(), Some(0 | 1)),
        "{at}: {}",
        text(&diff)
    );
    assert!(
        String::from_utf8_lossy(&diff.stdout).contains("tape A is a prefix"),
        "{at}: {}",
        text(&diff)
    );
}

/// Kills `child` with SIGKILL after `delay` and reaps it.
fn kill_after(mut child: Child, delay: Duration) {
    std::thread::sleep(delay);
    let _ = child.kill();
    child.wait().unwrap();
}

/// Runs `command` to its end and returns how long it took.
fn timed(command: &mut Command) -> Duration {
    let started = Instant::now();
    let output = command.output().unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&output)
    );
    started.elapsed()
}

/// A uniform instant in `0..span`.
fn instant(state: &mut u64, span: Duration) -> Duration {
    let micros = span.as_micros().max(1) as u64;
    Duration::from_micros(next(state) % micros)
}

/// A scenario that writes tens of thousands of records: long enough, in wall time, for kills
/// to land mid-tape. With `events_max`, every seed ends in ERROR at that limit (a sweep keeps
/// its tape).
fn long_scenario(dir: &Path, events_max: Option<u64>) -> PathBuf {
    let path = dir.join("long.toml");
    let limit = events_max.map_or(String::new(), |max| format!("events_max = {max}\n"));
    let text = format!(
        "[scenario]\nname = \"long\"\ndescription = \"Many timer wakes and events.\"\n\
         seeds = [0]\n\n[limits]\nvirtual_time_max_ns = \"10h\"\n{limit}\n\
         [[task]]\nname = \"worker\"\nrepeat = 10000\nsteps = [\n  \
         {{ sleep_random = {{ min = \"1ms\", max = \"9ms\" }} }},\n  \
         {{ event = \"tick\", fields = {{ n = 1 }} }},\n]\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn kill_9_during_run_leaves_a_whole_tape_or_a_named_prefix() {
    // Goal: 100 seeded kills of `simtape run` leave no empty and no unreadable tape.
    let dir = scratch("crash", "run");
    let scenario = long_scenario(&dir, None);
    let run = |tape: &Path| {
        let mut command = simtape();
        command
            .arg("run")
            .arg(&scenario)
            .args(["--seed", "0", "--tape"])
            .arg(tape)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    };
    let whole = dir.join("whole.tape");
    let span = timed(&mut run(&whole));
    let mut state = 32;
    let mut left = Left::default();
    for kill in 0..KILLS {
        let tape = dir.join("killed.tape");
        let _ = std::fs::remove_file(&tape);
        let delay = instant(&mut state, span);
        kill_after(run(&tape).spawn().unwrap(), delay);
        left.check(&tape, &whole, &format!("run, kill {kill} after {delay:?}"));
    }
    left.assert_meaningful("run", KILLS / 4);
}

#[test]
fn kill_9_during_sweep_leaves_whole_tapes_or_named_prefixes() {
    // Goal: 100 seeded kills of a sweep that keeps failing seeds' tapes leave every kept tape
    // whole or a named prefix.
    let dir = scratch("crash", "sweep");
    let scenario = long_scenario(&dir, Some(8000));
    let sweep = |out: &Path| {
        let mut command = simtape();
        command
            .arg("sweep")
            .arg(&scenario)
            .args(["--seeds", "0..6", "--jobs", "2", "--out"])
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    };
    let whole = dir.join("whole");
    let span = timed(&mut sweep(&whole));
    let whole_tape = whole.join("long/seed-0.tape");
    let mut state = 33;
    let mut left = Left::default();
    for kill in 0..KILLS {
        let out = dir.join("killed");
        let _ = std::fs::remove_dir_all(&out);
        let delay = instant(&mut state, span);
        kill_after(sweep(&out).spawn().unwrap(), delay);
        // Every tape the sweep had started, whole or cut; the newest decides the count.
        let tapes_dir = out.join("long");
        let mut tapes: Vec<PathBuf> = std::fs::read_dir(&tapes_dir)
            .map(|entries| {
                entries
                    .map(|entry| entry.unwrap().path())
                    .filter(|path| path.extension().is_some_and(|e| e == "tape"))
                    .filter(|path| !path.file_name().unwrap().to_string_lossy().starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
        tapes.sort();
        let at = format!("sweep, kill {kill} after {delay:?}");
        let mut this = Left::default();
        for tape in &tapes {
            this.check(tape, &whole_tape, &at);
        }
        match (this.prefix, this.whole) {
            (0, 0) => left.absent += 1,
            (0, _) => left.whole += 1,
            _ => left.prefix += 1,
        }
    }
    // A sweep writes a tape only for a failing seed's second run, so fewer kills land
    // mid-tape.
    left.assert_meaningful("sweep", KILLS / 10);
}

/// Starts `simtape serve` (no agent command: it serves until stopped) and returns it with
/// its port once it listens.
fn start_serve(tape: &Path) -> (Child, u16) {
    let mut child = simtape()
        .arg("serve")
        .arg(repo().join("examples/agents/python-sdk/scenario.toml"))
        .args(["--seed", "0", "--settle-ms", "0", "--tape"])
        .arg(tape)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(addr) = line.strip_prefix("serve: listening on http://") {
            let port = addr.rsplit(':').next().unwrap().parse().unwrap();
            // Read the rest, so that serve's next lines find a reader (a closed pipe would
            // end it by SIGPIPE, not by the kill under test).
            std::thread::spawn(move || lines.for_each(drop));
            return (child, port);
        }
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    panic!("serve did not say where it listens ({status})");
}

/// Sends one model request to the serve on `port` and reads the answer (each request is an
/// `input` record and the gateway's records, answered or not); false once serve is gone.
fn ask(port: u16) -> bool {
    let body = r#"{"model":"m","messages":[{"role":"user","content":"What is 6 times 7?"}]}"#;
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: \
         application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).is_ok()
        && std::io::Read::read_to_end(&mut stream, &mut Vec::new()).is_ok()
}

/// Keeps asking the serve on `port` until it goes away.
fn keep_asking(port: u16) {
    while ask(port) {}
}

#[test]
fn kill_9_during_serve_leaves_a_whole_tape_or_a_named_prefix() {
    // Goal: 100 seeded kills of a serve session that an agent keeps asking leave a tape that
    // is a named prefix: the header is there from the start, and every record up to the
    // last wait for input.
    let dir = scratch("crash", "serve");
    // The whole run to diff against: a session stopped cleanly (SIGINT) after some requests.
    let whole = dir.join("whole.tape");
    let (mut child, port) = start_serve(&whole);
    keep_asking_for(port, Duration::from_millis(200));
    let interrupt = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .output()
        .unwrap();
    assert!(interrupt.status.success());
    child.wait().unwrap();
    let mut state = 34;
    let mut left = Left::default();
    for kill in 0..KILLS {
        let tape = dir.join("killed.tape");
        let _ = std::fs::remove_file(&tape);
        let (child, port) = start_serve(&tape);
        let asker = std::thread::spawn(move || keep_asking(port));
        let delay = instant(&mut state, Duration::from_millis(300));
        kill_after(child, delay);
        asker.join().unwrap();
        left.check(
            &tape,
            &whole,
            &format!("serve, kill {kill} after {delay:?}"),
        );
    }
    left.assert_meaningful("serve", KILLS / 4);
}

/// Keeps asking the serve on `port` for `span` of wall time.
fn keep_asking_for(port: u16, span: Duration) {
    let until = Instant::now() + span;
    while Instant::now() < until && ask(port) {}
}
