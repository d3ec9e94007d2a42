//! The recording proxy of `simtape mcp record`: start the server, forward client lines to its
//! stdin and its stdout lines to the client unchanged, and journal every message with the
//! milliseconds since the start (beside the cassette, flushed per message, see
//! [`crate::mcp_stdio::journal`]). When the session ends (stdin EOF or a termination signal, see
//! [`crate::mcp_stdio::stdio`]), close the server's stdin, pass the signal on if there was one, wait for it
//! to exit (kill it after a grace period), and build the cassette from the journal. A journal
//! left by a killed recorder becomes a cassette through [`recover`].

use std::collections::BTreeMap;
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp_stdio::files::{absolute, recovered_path};
use crate::mcp_stdio::journal::{self, Journal};
use crate::mcp_stdio::stdio::{Ending, Event, ServeInbox};
use simtape_mcp::cassette::{Cassette, Party};
use simtape_mcp::error::McpError;
use simtape_mcp::limits::{LINE_BYTES_MAX, SHUTDOWN_GRACE_MS};
use simtape_mcp::lines::{read_line_bounded, LineRead};
use simtape_mcp::redact::Redactor;

/// The `kind` of a recording's journal.
pub const JOURNAL_KIND: &str = "record";

/// Sends a signal (by number) to a process (by id). Signals are OS calls, which this crate
/// leaves to its caller.
pub type SendSignal = fn(pid: u32, signal: i32) -> io::Result<()>;

/// What one recording needs.
#[derive(Debug)]
pub struct Recorder<'a> {
    /// The server command line.
    pub command: &'a [String],
    /// Scrubs secrets from every message before it is journaled.
    pub redactor: &'a Redactor,
    /// Where the cassette goes; its journal is [`journal::path_for`] it.
    pub cassette: &'a Path,
    /// Passes a termination signal on to the server.
    pub send_signal: SendSignal,
}

/// A cassette written from a journal.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// Where the cassette went.
    pub cassette: PathBuf,
    /// How many messages it holds.
    pub messages: usize,
    /// Journal lines that could not be used (a kill mid-write cuts the last one short).
    pub skipped: Vec<String>,
}

/// The message journal shared by the two forwarding directions.
struct Log {
    start: Instant,
    journal: Mutex<Journal>,
    redactor: Redactor,
}

impl Log {
    /// Journals a line if it is JSON, redacted, as a message of `session` (none for the one
    /// session of a stdio recording). The timestamp is taken under the lock, so journal order
    /// and time order agree.
    fn note(&self, from: Party, session: Option<u64>, line: &[u8]) {
        let Ok(mut message) = serde_json::from_slice::<Value>(line) else {
            eprintln!(
                "simtape mcp record: forwarding a non-JSON {from:?} line without recording it"
            );
            return;
        };
        self.redactor.redact_value(&mut message);
        let mut journal = self
            .journal
            .lock()
            .expect("no thread panics while holding the journal");
        let at_ms = self.start.elapsed().as_millis() as u64;
        let mut entry = json!({"from": from, "at_ms": at_ms, "message": message});
        if let Some(session) = session {
            entry["session"] = json!(session);
        }
        if let Err(e) = journal.append(&entry) {
            eprintln!("simtape mcp record: {e}; this message will be missing from the cassette");
        }
    }
}

/// Records one session: lines come from `inbox` (the client), answers go to `output` (the
/// client's stdout). Returns why the session ended and the cassette written.
pub fn record<W: Write + Send>(
    recorder: &Recorder<'_>,
    inbox: &ServeInbox,
    mut output: W,
) -> Result<(Ending, Written), McpError> {
    let redactor = recorder.redactor;
    let journal = open_journal(recorder)?;
    let journal_path = journal.path().to_path_buf();
    let mut child = match spawn(recorder.command) {
        Ok(child) => child,
        Err(e) => {
            // Nothing was recorded: leave no journal to recover.
            drop(journal);
            let _ = journal::remove(&journal_path);
            return Err(e);
        }
    };
    let child_stdout = child.stdout.take().expect("stdout is piped");
    let mut child_stdin = Some(child.stdin.take().expect("stdin is piped"));
    let log = Log {
        start: Instant::now(),
        journal: Mutex::new(journal),
        redactor: redactor.clone(),
    };
    let ending = std::thread::scope(|scope| -> Result<Ending, McpError> {
        let log = &log;
        let server_to_client = scope.spawn(move || -> Result<(), McpError> {
            let mut reader = BufReader::new(child_stdout);
            let mut client_open = true;
            while let Some(read) = read_line_bounded(&mut reader, LINE_BYTES_MAX)? {
                let LineRead::Line(line) = read else {
                    eprintln!(
                        "simtape mcp record: dropped a server line over {LINE_BYTES_MAX} bytes"
                    );
                    continue;
                };
                log.note(Party::Server, None, &line);
                // A client that went away still leaves the server's answers in the journal.
                client_open = client_open
                    && output
                        .write_all(&line)
                        .and_then(|()| output.write_all(b"\n"))
                        .and_then(|()| output.flush())
                        .is_ok();
            }
            Ok(())
        });
        let ending = loop {
            match inbox.next() {
                Event::Line(LineRead::Line(line)) => {
                    log.note(Party::Client, None, &line);
                    forward(&mut child_stdin, &line);
                }
                Event::Line(LineRead::TooLong(length)) => {
                    eprintln!("simtape mcp record: refused a client line of {length} bytes");
                }
                Event::End(ending) => break ending,
            }
        };
        // A signal we got is passed on first (so the server sees it, not just EOF); then
        // closing stdin, the stdio shutdown signal, reaches servers that ignore signals.
        if let Ending::Signal(signal) = ending {
            if let Err(e) = (recorder.send_signal)(child.id(), signal) {
                eprintln!("simtape mcp record: passing the signal to the server failed: {e}");
            }
        }
        drop(child_stdin.take());
        stop(&mut child)?;
        server_to_client
            .join()
            .expect("the forwarding thread does not panic")?;
        Ok(ending)
    })?;
    let journal = log
        .journal
        .into_inner()
        .expect("all threads joined without panicking");
    let written = recover(&journal.close(), Some(recorder.cassette))?;
    Ok((ending, written))
}

/// A recording of many sessions (`simtape mcp record --http`): each session is a server
/// process of its own, started when the session opens, and every message goes to one journal
/// with its session's number, so the cassette holds them all ([`simtape_mcp::cassette::CassetteEntry::session`]).
#[derive(Debug)]
pub struct SessionRecorder {
    command: Vec<String>,
    cassette: PathBuf,
    log: Arc<Log>,
    running: BTreeMap<u64, Running>,
}

/// One session's server process.
#[derive(Debug)]
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    reader: std::thread::JoinHandle<()>,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Log").finish_non_exhaustive()
    }
}

impl SessionRecorder {
    /// Starts the journal of a recording of `recorder.command`; no server runs yet.
    pub fn start(recorder: &Recorder<'_>) -> Result<SessionRecorder, McpError> {
        Ok(SessionRecorder {
            command: recorder.command.to_vec(),
            cassette: recorder.cassette.to_path_buf(),
            log: Arc::new(Log {
                start: Instant::now(),
                journal: Mutex::new(open_journal(recorder)?),
                redactor: recorder.redactor.clone(),
            }),
            running: BTreeMap::new(),
        })
    }

    /// Starts session `session`'s server; each message it writes is journaled and handed to
    /// `deliver` (on a thread of its own).
    pub fn open(
        &mut self,
        session: u64,
        deliver: impl Fn(Value) + Send + 'static,
    ) -> Result<(), McpError> {
        let mut child = spawn(&self.command)?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdin = child.stdin.take();
        let log = self.log.clone();
        let reader = std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Ok(Some(read)) = read_line_bounded(&mut reader, LINE_BYTES_MAX) {
                let LineRead::Line(line) = read else { continue };
                log.note(Party::Server, Some(session), &line);
                if let Ok(message) = serde_json::from_slice(&line) {
                    deliver(message);
                }
            }
        });
        let running = Running {
            child,
            stdin,
            reader,
        };
        self.running.insert(session, running);
        Ok(())
    }

    /// Journals one client line of `session` and passes it to that session's server; false
    /// when the session has no server (it could not be started).
    pub fn send(&mut self, session: u64, line: &[u8]) -> bool {
        self.log.note(Party::Client, Some(session), line);
        let Some(running) = self.running.get_mut(&session) else {
            return false;
        };
        forward(&mut running.stdin, line);
        true
    }

    /// Ends session `session`: closes its server's stdin and waits for it to exit (killing
    /// it after the grace period).
    pub fn close(&mut self, session: u64) -> Result<(), McpError> {
        let Some(mut running) = self.running.remove(&session) else {
            return Ok(());
        };
        drop(running.stdin.take());
        stop(&mut running.child)?;
        let _ = running.reader.join();
        Ok(())
    }

    /// Ends every session and writes the cassette from the journal.
    pub fn finish(mut self) -> Result<Written, McpError> {
        let sessions: Vec<u64> = self.running.keys().copied().collect();
        for session in sessions {
            self.close(session)?;
        }
        let log = Arc::into_inner(self.log).expect("every reader thread has been joined");
        let journal = log
            .journal
            .into_inner()
            .expect("no thread panicked while holding the journal");
        recover(&journal.close(), Some(&self.cassette))
    }
}

/// Creates the journal of a recording; its header holds the redacted command line.
fn open_journal(recorder: &Recorder<'_>) -> Result<Journal, McpError> {
    let server: Vec<String> = recorder
        .command
        .iter()
        .map(|a| recorder.redactor.redact_text(a))
        .collect();
    let header = json!({"server": server, "cassette": absolute(recorder.cassette)});
    Journal::create(&journal::path_for(recorder.cassette), JOURNAL_KIND, header)
}

/// Builds the cassette from a journal that no running process holds, writes it (atomically)
/// to `cassette` or else where the journal says, and deletes the journal.
pub fn recover(journal_path: &Path, cassette: Option<&Path>) -> Result<Written, McpError> {
    let contents = journal::read(journal_path, JOURNAL_KIND)?;
    let invalid = |reason: String| McpError::JournalInvalid {
        path: journal_path.into(),
        reason,
    };
    let server: Vec<String> = serde_json::from_value(contents.header["server"].clone())
        .map_err(|e| invalid(format!("header `server`: {e}")))?;
    let target = match (cassette, contents.header["cassette"].as_str()) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some(path)) => PathBuf::from(path),
        (None, None) => return Err(invalid("the header names no cassette".into())),
    };
    let mut built = Cassette::new(server);
    let mut skipped = contents.skipped;
    for (index, entry) in contents.entries.into_iter().enumerate() {
        let from = serde_json::from_value::<Party>(entry["from"].clone());
        let session = entry.get("session").and_then(Value::as_u64);
        match (from, entry["at_ms"].as_u64(), entry.get("message")) {
            (Ok(from), Some(at_ms), Some(message)) => {
                built.push(from, at_ms, message.clone());
                if let Some(last) = built.messages.last_mut() {
                    last.session = session;
                }
            }
            _ => skipped.push(format!("entry {}: not a recorded message", index + 1)),
        }
    }
    built.fill_latencies();
    crate::mcp_stdio::files::save_cassette(&built, &target)?;
    journal::remove(journal_path)?;
    Ok(Written {
        cassette: target,
        messages: built.messages.len(),
        skipped,
    })
}

/// At the start of a recording: when a killed recorder left a journal beside `cassette`,
/// turns it into a cassette beside it (`C.recovered.json`, see [`recovered_path`]) so the new
/// recording loses nothing of the old one.
pub fn recover_left(cassette: &Path) -> Result<Option<Written>, McpError> {
    let journal_path = journal::path_for(cassette);
    if !journal::is_left(&journal_path)? {
        return Ok(None);
    }
    recover(&journal_path, Some(&recovered_path(cassette))).map(Some)
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

/// Waits for a child whose stdin is closed (and that may have been sent a signal) to exit;
/// kills it after the grace period.
pub fn stop(child: &mut Child) -> Result<(), McpError> {
    let deadline = Instant::now() + Duration::from_millis(SHUTDOWN_GRACE_MS);
    while Instant::now() < deadline {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!(
        "simtape mcp: server did not exit {SHUTDOWN_GRACE_MS} ms after being told to stop; killing it"
    );
    child.kill()?;
    child.wait()?;
    Ok(())
}
