//! Reading newline-delimited messages with a hard length cap: an over-long line is skipped as
//! it streams past (never held whole in memory) and reported by its length.

use std::io::{self, BufRead};

/// One line read from a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineRead {
    /// A line within the cap, without its newline.
    Line(Vec<u8>),
    /// A line longer than the cap; its bytes were discarded. Holds its length in bytes.
    TooLong(usize),
}

/// Reads the next line, capped at `max_bytes`. Returns `None` at end of input. A final line
/// without a newline still counts as a line.
///
/// ```
/// use simtape_mcp::lines::{read_line_bounded, LineRead};
/// let mut input: &[u8] = b"ok\n0123456789\n";
/// assert_eq!(read_line_bounded(&mut input, 5).unwrap(), Some(LineRead::Line(b"ok".to_vec())));
/// assert_eq!(read_line_bounded(&mut input, 5).unwrap(), Some(LineRead::TooLong(10)));
/// assert_eq!(read_line_bounded(&mut input, 5).unwrap(), None);
/// ```
pub fn read_line_bounded<R: BufRead>(
    reader: &mut R,
    max_bytes: usize,
) -> io::Result<Option<LineRead>> {
    let mut line = Vec::new();
    let mut length = 0usize;
    let mut started = false;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buffer.is_empty() {
            return Ok(started.then(|| finish(line, length, max_bytes)));
        }
        started = true;
        let newline = buffer.iter().position(|&b| b == b'\n');
        let chunk = &buffer[..newline.unwrap_or(buffer.len())];
        length += chunk.len();
        if length <= max_bytes {
            line.extend_from_slice(chunk);
        } else {
            // Past the cap: drop what we kept so memory stays bounded.
            line = Vec::new();
        }
        let consumed = chunk.len() + usize::from(newline.is_some());
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(Some(finish(line, length, max_bytes)));
        }
    }
}

fn finish(line: Vec<u8>, length: usize, max_bytes: usize) -> LineRead {
    if length > max_bytes {
        LineRead::TooLong(length)
    } else {
        LineRead::Line(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_skipped_across_buffer_refills() {
        // Goal: the cap holds even when a line spans many small buffer fills.
        let data = [b"a".repeat(100), b"\nshort\nlast".to_vec()].concat();
        let mut reader = io::BufReader::with_capacity(7, &data[..]);
        assert_eq!(
            read_line_bounded(&mut reader, 10).unwrap(),
            Some(LineRead::TooLong(100))
        );
        assert_eq!(
            read_line_bounded(&mut reader, 10).unwrap(),
            Some(LineRead::Line(b"short".to_vec()))
        );
        assert_eq!(
            read_line_bounded(&mut reader, 10).unwrap(),
            Some(LineRead::Line(b"last".to_vec()))
        );
        assert_eq!(read_line_bounded(&mut reader, 10).unwrap(), None);
    }
}
