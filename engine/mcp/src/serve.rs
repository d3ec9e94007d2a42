//! The stdio loop of `simtape mcp replay`: read capped lines, let the pure
//! [`ReplayServer`] answer, write one message per line, flush after each line's answers.

use std::io::{self, BufRead, Write};

use serde_json::Value;

use crate::limits::LINE_BYTES_MAX;
use crate::lines::{read_line_bounded, LineRead};
use crate::replay::ReplayServer;

/// Serves until the input ends. Only I/O errors stop it; every bad message gets an answer.
pub fn serve<R: BufRead, W: Write>(
    server: &mut ReplayServer,
    mut input: R,
    mut output: W,
) -> io::Result<()> {
    while let Some(read) = read_line_bounded(&mut input, LINE_BYTES_MAX)? {
        let answers = match read {
            LineRead::Line(line) => server.handle_line(&line),
            LineRead::TooLong(length) => vec![ReplayServer::line_too_long(length)],
        };
        write_messages(&mut output, &answers)?;
    }
    Ok(())
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
    use crate::{Cassette, Redactor};

    #[test]
    fn serves_lines_until_eof_and_survives_garbage() {
        // Goal: each input line gets its answers on its own output line; garbage does not
        // stop the loop.
        let mut server = ReplayServer::new(&Cassette::new(vec![]), Redactor::default());
        let input: &[u8] = b"garbage\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        let mut output = Vec::new();
        serve(&mut server, input, &mut output).unwrap();
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
