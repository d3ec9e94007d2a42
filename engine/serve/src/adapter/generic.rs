//! Any program. Each non-empty line it prints is a message and its last one is the answer,
//! unless the line is one of the seven unified events as a JSON object (`{"type":
//! "tool_start", "id": …, "name": …, "input": …}`, docs/agents.md "Generic programs"), which
//! is taken as that event: a program that prints its own tool calls and answer is read as
//! exactly as a CLI adapter reads its CLI. The task reaches it in `SIMTAPE_TASK` (every
//! adapter sets it), and the scenario's model, when it names one, in `SIMTAPE_MODEL`.

use super::{cut, EventKind, Launch, Parser};

/// Returns how to start a program: its environment names `model`, the registry's id (the
/// scenario's name unless a layer maps it), when the scenario names one.
pub(super) fn launch(model: Option<&str>) -> Launch {
    let env = model.map(|model| ("SIMTAPE_MODEL".to_string(), model.to_string()));
    Launch {
        env: env.into_iter().collect(),
        ..Launch::default()
    }
}

/// The line reader.
#[derive(Debug, Default)]
pub(super) struct Lines {
    last: Option<String>,
    /// Whether the program printed its own `result` event: no answer is implied then.
    answered: bool,
}

impl Parser for Lines {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        let text = line.trim_end();
        if text.is_empty() {
            return Vec::new();
        }
        if let Some(event) = unified(text) {
            self.answered |= matches!(event, EventKind::Result { .. });
            return vec![event];
        }
        self.last = Some(cut(text));
        vec![EventKind::Message { text: cut(text) }]
    }

    fn finish(&mut self) -> Vec<EventKind> {
        if self.answered {
            return Vec::new();
        }
        vec![EventKind::Result {
            text: self.last.take().unwrap_or_default(),
            is_error: false,
        }]
    }
}

/// The line as a unified event, when it is one: a JSON object whose `type` is one of the
/// seven kinds and whose fields are that kind's. Texts are cut as every adapter cuts them.
fn unified(text: &str) -> Option<EventKind> {
    if !text.starts_with('{') {
        return None;
    }
    let event = serde_json::from_str::<EventKind>(text).ok()?;
    Some(match event {
        EventKind::Message { text } => EventKind::Message { text: cut(&text) },
        EventKind::ToolEnd {
            id,
            output,
            is_error,
        } => EventKind::ToolEnd {
            id,
            output: cut(&output),
            is_error,
        },
        EventKind::Result { text, is_error } => EventKind::Result {
            text: cut(&text),
            is_error,
        },
        other => other,
    })
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

    #[test]
    fn unified_events_are_taken_as_they_are() {
        // A program printing the unified events is read as those events; a JSON line of
        // another shape stays a message; its own result means no answer is implied.
        let mut parser = Lines::default();
        let mut events =
            parser.line(r#"{"type":"tool_start","id":"c1","name":"add","input":{"a":1}}"#);
        events
            .extend(parser.line(r#"{"type":"tool_end","id":"c1","output":"3","is_error":false}"#));
        events.extend(parser.line(r#"{"type":"progress","percent":50}"#));
        events.extend(parser.line(r#"{"type":"result","text":"3","is_error":false}"#));
        events.extend(parser.finish());
        assert_eq!(events.len(), 4, "{events:?}");
        assert_eq!(
            events[0],
            EventKind::ToolStart {
                id: "c1".into(),
                name: "add".into(),
                input: serde_json::json!({"a": 1})
            }
        );
        assert!(matches!(&events[2], EventKind::Message { text } if text.contains("progress")));
        assert_eq!(
            events[3],
            EventKind::Result {
                text: "3".into(),
                is_error: false
            }
        );
    }
}
