//! The stdio loop of `simtape mcp replay`: take capped lines from the [`ServeInbox`], let the pure
//! [`ReplayServer`] answer, write one message per line, flush after each line's answers.

use std::io::{self, Write};

use serde_json::Value;

use crate::mcp_stdio::stdio::{serve_lines, Ending, ServeInbox};
use simtape_mcp::lines::LineRead;
use simtape_mcp::replay::ReplayServer;

/// Serves until the session ends (EOF, a signal, a client that went away) and says why. What
/// the recorded server sent before the client spoke goes first; every bad message gets an
/// answer; each replay miss is also named on stderr.
pub fn serve<W: Write>(server: &mut ReplayServer, inbox: &ServeInbox, mut output: W) -> Ending {
    if write_messages(&mut output, &server.opening()).is_err() {
        return Ending::ClientGone;
    }
    serve_lines(inbox, output, |read| {
        let answers = match read {
            LineRead::Line(line) => server.handle_line(&line),
            LineRead::TooLong(length) => vec![ReplayServer::line_too_long(length)],
        };
        for miss in server.take_misses() {
            eprintln!("simtape mcp replay: replay miss: {miss}");
        }
        answers
    })
}

/// Writes messages, one JSON document per line, and flushes.
pub fn write_messages<W: Write>(output: &mut W, messages: &[Value]) -> io::Result<()> {
    for message in messages {
        // serde_json escapes newlines inside strings, so one message is always one line.
        serde_json::to_writer(&mut *output, message)?;
        output.write_all(b"\n")?;
    }
    output.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use simtape_mcp::{Cassette, Redactor};

    #[test]
    fn serves_lines_until_eof_and_survives_garbage() {
        // Goal: each input line gets its answers on its own output line; garbage does not
        // stop the loop.
        let mut server = ReplayServer::new(&Cassette::new(vec![]), Redactor::default());
        let inbox = ServeInbox::from_bytes(
            b"garbage\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
        );
        let mut output = Vec::new();
        assert_eq!(serve(&mut server, &inbox, &mut output), Ending::Eof);
        let lines: Vec<Value> = output
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["error"]["code"], -32700);
        assert_eq!(lines[1]["result"], serde_json::json!({}));
    }
}
