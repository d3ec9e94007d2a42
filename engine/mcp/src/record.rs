//! The recording proxy of `simtape mcp record`: start the server, forward client lines to its
//! stdin and its stdout lines to the client unchanged, and log every message with the
//! milliseconds since the start. When the client's input ends, close the server's stdin, wait
//! for it to exit (kill it after a grace period), and return the redacted cassette.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cassette::{Cassette, Direction};
use crate::error::McpError;
use crate::limits::{LINE_BYTES_MAX, SHUTDOWN_GRACE_MS};
use crate::lines::{read_line_bounded, LineRead};
use crate::redact::Redactor;

/// The message log shared by the two forwarding directions.
struct Log {
    start: Instant,
    messages: Mutex<Vec<(Direction, u64, Value)>>,
}

impl Log {
    /// Logs a line if it is JSON. The timestamp is taken under the lock, so log order and
    /// time order agree.
    fn note(&self, from: Direction, line: &[u8]) {
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            eprintln!(
                "simtape mcp record: forwarding a non-JSON {from:?} line without recording it"
            );
            return;
        };
        let mut messages = self
            .messages
            .lock()
            .expect("no thread panics while holding the log");
        let at_ms = self.start.elapsed().as_millis() as u64;
        messages.push((from, at_ms, message));
    }
}

/// Records one session: `input` is the client side (stdin), `output` the client's reply
/// channel (stdout). Returns the cassette, redacted with `redactor`.
pub fn record<R: BufRead, W: Write + Send>(
    command: &[String],
    redactor: &Redactor,
    mut input: R,
    mut output: W,
) -> Result<Cassette, McpError> {
    let mut child = spawn(command)?;
    let child_stdout = child.stdout.take().expect("stdout is piped");
    let mut child_stdin = Some(child.stdin.take().expect("stdin is piped"));
    let log = Log {
        start: Instant::now(),
        messages: Mutex::new(Vec::new()),
    };
    std::thread::scope(|scope| -> Result<(), McpError> {
        let log = &log;
        let server_to_client = scope.spawn(move || -> Result<(), McpError> {
            let mut reader = BufReader::new(child_stdout);
            while let Some(read) = read_line_bounded(&mut reader, LINE_BYTES_MAX)? {
                let LineRead::Line(line) = read else {
                    eprintln!(
                        "simtape mcp record: dropped a server line over {LINE_BYTES_MAX} bytes"
                    );
                    continue;
                };
                log.note(Direction::Server, &line);
                output.write_all(&line)?;
                output.write_all(b"\n")?;
                output.flush()?;
            }
            Ok(())
        });
        while let Some(read) = read_line_bounded(&mut input, LINE_BYTES_MAX)? {
            match read {
                LineRead::Line(line) => {
                    log.note(Direction::Client, &line);
                    forward(&mut child_stdin, &line);
                }
                LineRead::TooLong(length) => {
                    eprintln!("simtape mcp record: refused a client line of {length} bytes");
                }
            }
        }
        // Closing stdin is the stdio shutdown signal; servers exit on EOF.
        drop(child_stdin.take());
        stop(&mut child)?;
        server_to_client
            .join()
            .expect("the forwarding thread does not panic")
    })?;
    let mut cassette = Cassette::new(command.iter().map(|a| redactor.redact_text(a)).collect());
    let messages = log.messages.into_inner().expect("all threads joined");
    for (from, at_ms, mut message) in messages {
        redactor.redact_value(&mut message);
        cassette.push(from, at_ms, message);
    }
    cassette.fill_latencies();
    Ok(cassette)
}

/// Writes one line to the server; after the server has gone away, further lines are dropped
/// (the client still gets to finish, and the cassette shows what happened).
fn forward(stdin: &mut Option<ChildStdin>, line: &[u8]) {
    let Some(pipe) = stdin else {
        return;
    };
    let written = pipe
        .write_all(line)
        .and_then(|()| pipe.write_all(b"\n"))
        .and_then(|()| pipe.flush());
    if written.is_err() {
        eprintln!("simtape mcp record: the server closed its stdin; dropping further client lines");
        *stdin = None;
    }
}

/// Starts a server command with piped stdin and stdout; stderr is passed through.
pub fn spawn(command: &[String]) -> Result<Child, McpError> {
    let (program, args) = command.split_first().ok_or_else(|| McpError::Spawn {
        command: String::new(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty server command"),
    })?;
    Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| McpError::Spawn {
            command: program.clone(),
            source,
        })
}

/// Waits for a child whose stdin is closed to exit; kills it after the grace period.
pub fn stop(child: &mut Child) -> Result<(), McpError> {
    let deadline = Instant::now() + Duration::from_millis(SHUTDOWN_GRACE_MS);
    while Instant::now() < deadline {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!(
        "simtape mcp: server did not exit {SHUTDOWN_GRACE_MS} ms after stdin closed; killing it"
    );
    child.kill()?;
    child.wait()?;
    Ok(())
}
