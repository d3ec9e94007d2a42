//! The input side of every long-lived stdio command (`record`, `replay`, `world`) and the one
//! way such a session ends. A reader thread turns stdin into [`Event::Line`]s on a channel;
//! the end of input and anything else that ends the session (a signal watcher in the CLI, a
//! client that closed our stdout) arrive on the same channel as an [`Ending`]. The serving
//! loop therefore never waits in a blocking `read`: a signal ends it at once even while stdin
//! stays open, and the reader thread is simply left behind to die with the process.

use std::io::{self, BufReader, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use serde_json::Value;

use crate::mcp_stdio::serve::write_messages;
use simtape_mcp::limits::LINE_BYTES_MAX;
use simtape_mcp::lines::{read_line_bounded, LineRead};

/// Why a stdio session ended. Every ending runs the same shutdown: the owed files are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Stdin reached its end (the client closed it).
    Eof,
    /// A termination signal arrived (its number: SIGTERM, SIGINT or SIGHUP).
    Signal(i32),
    /// Writing to the client failed: it closed our stdout.
    ClientGone,
    /// Reading stdin failed with this error.
    InputFailed(String),
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Eof => f.write_str("stdin closed"),
            Ending::Signal(number) => write!(f, "{}", signal_name(*number)),
            Ending::ClientGone => f.write_str("the client closed stdout"),
            Ending::InputFailed(error) => write!(f, "reading stdin failed: {error}"),
        }
    }
}

/// Names the termination signals by their POSIX numbers (the same on every Unix).
pub fn signal_name(number: i32) -> String {
    match number {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

/// What the serving loop takes next.
#[derive(Debug)]
pub enum Event {
    /// One line of input.
    Line(LineRead),
    /// The session is over.
    End(Ending),
}

/// Ends a session from another thread (a signal watcher).
#[derive(Debug, Clone)]
pub struct Stopper(SyncSender<Event>);

impl Stopper {
    /// Ends the session with `ending`. Once the loop has ended nobody takes events any more and
    /// this may block for good, so it is called only from threads with nothing else to do.
    pub fn stop(&self, ending: Ending) {
        // The inbox keeps a sender, so the channel only closes when the inbox is dropped; then
        // nobody is listening and there is nothing left to stop.
        let _ = self.0.send(Event::End(ending));
    }
}

/// The channel a serving loop reads from.
#[derive(Debug)]
pub struct ServeInbox {
    events: Receiver<Event>,
    sender: SyncSender<Event>,
}

impl Default for ServeInbox {
    fn default() -> ServeInbox {
        ServeInbox::new()
    }
}

impl ServeInbox {
    /// Returns an empty inbox. The channel holds one event, so a reader never runs more than
    /// one line ahead of the loop (a line can be 16 MiB).
    pub fn new() -> ServeInbox {
        let (sender, events) = sync_channel(1);
        ServeInbox { events, sender }
    }

    /// Returns a handle that ends the session from another thread.
    pub fn stopper(&self) -> Stopper {
        Stopper(self.sender.clone())
    }

    /// Starts the thread that reads `input` line by line (capped at [`LINE_BYTES_MAX`]) and
    /// ends the session at its end. The thread is detached: it may stay blocked in `read`
    /// after the loop has ended, and goes away with the process.
    pub fn read_from<R: Read + Send + 'static>(&self, input: R) {
        let sender = self.sender.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(input);
            loop {
                let event = match read_line_bounded(&mut reader, LINE_BYTES_MAX) {
                    Ok(Some(line)) => Event::Line(line),
                    Ok(None) => Event::End(Ending::Eof),
                    Err(e) => Event::End(Ending::InputFailed(e.to_string())),
                };
                let last = matches!(event, Event::End(_));
                if sender.send(event).is_err() || last {
                    return;
                }
            }
        });
    }

    /// Returns an inbox fed from bytes: for tests and examples.
    pub fn from_bytes(input: &[u8]) -> ServeInbox {
        let inbox = ServeInbox::new();
        inbox.read_from(io::Cursor::new(input.to_vec()));
        inbox
    }

    /// Waits for the next event.
    pub fn next(&self) -> Event {
        self.events
            .recv()
            .expect("the inbox holds a sender, so the channel stays open")
    }
}

/// The loop of a server that answers each line before taking the next (`replay`, `world`):
/// `answer` turns a line into messages, which are written one per line and flushed. Returns
/// why the session ended; a failed write to the client ends it as [`Ending::ClientGone`].
pub fn serve_lines<W: Write>(
    inbox: &ServeInbox,
    mut output: W,
    mut answer: impl FnMut(LineRead) -> Vec<Value>,
) -> Ending {
    loop {
        match inbox.next() {
            Event::Line(line) => {
                let answers = answer(line);
                if write_messages(&mut output, &answers).is_err() {
                    return Ending::ClientGone;
                }
            }
            Event::End(ending) => return ending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_ends_the_loop_while_stdin_stays_open() {
        // Goal: a signal ends the session even though the reader is blocked on open input.
        let (read_end, _keep_open) = std::io::pipe().unwrap();
        let inbox = ServeInbox::new();
        inbox.read_from(read_end);
        let stopper = inbox.stopper();
        std::thread::spawn(move || stopper.stop(Ending::Signal(15)));
        let ending = serve_lines(&inbox, Vec::new(), |_| Vec::new());
        assert_eq!(ending, Ending::Signal(15));
        assert_eq!(ending.to_string(), "SIGTERM");
    }

    #[test]
    fn a_closed_stdout_ends_the_loop() {
        // Goal: a client that stopped reading ends the session instead of failing it.
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let inbox = ServeInbox::from_bytes(b"one\ntwo\n");
        let ending = serve_lines(&inbox, Closed, |_| vec![serde_json::json!(1)]);
        assert_eq!(ending, Ending::ClientGone);
    }
}
