//! Any program: each non-empty line it prints is a message, and its last one is the answer.
//! The task reaches it in `SIMTAPE_TASK` (every adapter sets it).

use super::{cut, EventKind, Parser};

/// The line reader.
#[derive(Debug, Default)]
pub(super) struct Lines {
    last: Option<String>,
}

impl Parser for Lines {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        let text = line.trim_end();
        if text.is_empty() {
            return Vec::new();
        }
        self.last = Some(cut(text));
        vec![EventKind::Message { text: cut(text) }]
    }

    fn finish(&mut self) -> Vec<EventKind> {
        vec![EventKind::Result {
            text: self.last.take().unwrap_or_default(),
            is_error: false,
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_messages_and_the_last_is_the_answer() {
        let mut parser = Lines::default();
        let mut events = parser.line("working\n");
        events.extend(parser.line(""));
        events.extend(parser.line("done: 3 files"));
        events.extend(parser.finish());
        assert_eq!(events.len(), 3);
        assert_eq!(
            events[2],
            EventKind::Result {
                text: "done: 3 files".into(),
                is_error: false
            }
        );
    }
}
