//! mini-swe-agent: `mini --agent-class default -y --exit-immediately -m openai/MODEL -o
//! /dev/stdout -t TASK`.
//!
//! A Python CLI on litellm, pointed at the endpoint by `OPENAI_BASE_URL` (every program gets
//! it) with an `openai/` model. `MSWEA_CONFIGURED` skips its first-run questions,
//! `MSWEA_COST_TRACKING=ignore_errors` its refusal of a model without a price, and
//! `LITELLM_LOCAL_MODEL_COST_MAP` litellm's download of its price list at import. It has no
//! MCP client and no read-only mode: its only tool is `bash`, run in its working directory.
//!
//! Its console output is prose; what it did is its trajectory, a JSON document it writes whole
//! (indented, its braces alone at the start of a line) after every step. The adapter names
//! stdout as the trajectory's file and reads each document that comes: the messages it has not
//! read yet become events (the assistant's text and `bash` calls, the tool messages' outputs,
//! each reply's usage), and the `exit` message ends the session (`Submitted` is success).

use serde_json::Value;
use simtape_agent::CommandAgentSpec;

use super::{content_text, count, cut, EventKind, Launch, Parser, Places};

/// The per-machine text of its task prompt: the kernel's name, release, version and machine.
pub(super) const PATTERNS: [(&str, &str); 1] = [(
    r"<system_information>[^<]*</system_information>",
    "<system_information><os></system_information>",
)];

pub(super) fn launch(spec: &CommandAgentSpec, model: &str, _places: &Places<'_>) -> Launch {
    Launch {
        args: [
            // The non-interactive agent: it prints no steps of its own, so stdout holds the
            // trajectories and a few notices.
            "--agent-class",
            "default",
            "-y",
            "--exit-immediately",
            "-m",
            model,
            "-o",
            "/dev/stdout",
            "-t",
            &spec.task,
        ]
        .map(String::from)
        .to_vec(),
        env: [
            ("MSWEA_CONFIGURED", "true"),
            ("MSWEA_COST_TRACKING", "ignore_errors"),
            ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
            // Output as it happens, whole lines at a time.
            ("PYTHONUNBUFFERED", "1"),
        ]
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .to_vec(),
        files: Vec::new(),
    }
}

/// The trajectory reader.
#[derive(Debug, Default)]
pub(super) struct Trajectory {
    /// The lines of the document being read, from its opening brace.
    document: Option<String>,
    /// How many of the trajectory's messages have become events.
    read: usize,
    /// The assistant's last text: the answer.
    last_text: Option<String>,
    /// Whether the exit message was read.
    ended: bool,
}

impl Trajectory {
    /// The events of one whole trajectory's messages not read yet.
    fn messages(&mut self, trajectory: &Value) -> Vec<EventKind> {
        let Some(messages) = trajectory.get("messages").and_then(Value::as_array) else {
            return Vec::new();
        };
        let mut events = Vec::new();
        if self.read == 0 {
            let model = trajectory.pointer("/info/config/model/model_name");
            events.push(EventKind::SessionStart {
                model: model.and_then(Value::as_str).map(String::from),
            });
        }
        for message in messages.iter().skip(self.read) {
            events.extend(self.message(message));
        }
        self.read = self.read.max(messages.len());
        events
    }

    fn message(&mut self, message: &Value) -> Vec<EventKind> {
        let text = content_text(message.get("content").unwrap_or(&Value::Null));
        match message.get("role").and_then(Value::as_str) {
            Some("assistant") => self.assistant(message, text),
            Some("tool") => {
                // The observation is its template's JSON: the command's exit code in it.
                let observation: Option<Value> = serde_json::from_str(&text).ok();
                let code = observation.as_ref().and_then(|o| o.get("returncode"));
                vec![EventKind::ToolEnd {
                    id: str_at(message, "/tool_call_id"),
                    output: cut(&text),
                    is_error: code.and_then(Value::as_i64).is_some_and(|code| code != 0),
                }]
            }
            Some("exit") => {
                self.ended = true;
                let status = str_at(message, "/extra/exit_status");
                let mut events = Vec::new();
                if status != "Submitted" {
                    events.push(EventKind::Error {
                        message: cut(&format!("{status}: {text}")),
                    });
                }
                events.push(EventKind::Result {
                    text: self.last_text.clone().unwrap_or_default(),
                    is_error: status != "Submitted",
                });
                events
            }
            _ => Vec::new(),
        }
    }

    fn assistant(&mut self, message: &Value, text: String) -> Vec<EventKind> {
        let mut events = Vec::new();
        if !text.is_empty() {
            self.last_text = Some(cut(&text));
            events.push(EventKind::Message { text: cut(&text) });
        }
        let calls = message.get("tool_calls").and_then(Value::as_array);
        for call in calls.map_or(&[][..], Vec::as_slice) {
            let arguments = str_at(call, "/function/arguments");
            events.push(EventKind::ToolStart {
                id: str_at(call, "/id"),
                name: str_at(call, "/function/name"),
                input: serde_json::from_str(&arguments).unwrap_or(Value::String(arguments)),
            });
        }
        if let Some(usage) = message.pointer("/extra/response/usage") {
            events.push(EventKind::Usage {
                input_tokens: count(usage, "prompt_tokens"),
                output_tokens: count(usage, "completion_tokens"),
            });
        }
        events
    }
}

/// The string at `pointer` in `value`, empty when absent.
fn str_at(value: &Value, pointer: &str) -> String {
    let found = value.pointer(pointer).and_then(Value::as_str);
    found.unwrap_or_default().to_string()
}

impl Parser for Trajectory {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        // A document opens with a brace alone at the start of a line and closes with one at
        // the start of a line; every line inside it is indented. It ends with no newline, so
        // what is written next (the next document, a notice) follows its closing brace.
        if line == "{" {
            self.document = Some(String::from("{"));
            return Vec::new();
        }
        let Some(document) = self.document.as_mut() else {
            return Vec::new();
        };
        let Some(rest) = line.strip_prefix('}') else {
            document.push_str(line);
            return Vec::new();
        };
        document.push('}');
        let document = self.document.take().unwrap_or_default();
        let mut events = match serde_json::from_str::<Value>(&document) {
            Ok(trajectory) => self.messages(&trajectory),
            Err(_) => Vec::new(),
        };
        events.extend(self.line(rest));
        events
    }

    /// Without an exit message the session did not finish: its last text, as an error.
    fn finish(&mut self) -> Vec<EventKind> {
        if self.ended {
            return Vec::new();
        }
        vec![EventKind::Result {
            text: self.last_text.take().unwrap_or_default(),
            is_error: true,
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns `trajectories` as mini-swe-agent writes them to a pipe, one line at a time:
    /// each indented, with no newline at its end.
    fn lines(trajectories: &[&Value]) -> Vec<String> {
        let text: String = trajectories
            .iter()
            .map(|trajectory| serde_json::to_string_pretty(trajectory).unwrap())
            .collect();
        let text = format!("Building agent config from specs: ['mini.yaml']\n{text}\nSaved");
        text.lines().map(String::from).collect()
    }

    #[test]
    fn each_trajectory_gives_the_messages_not_read_yet() {
        // Goal: two dumps of a growing trajectory, with console lines around them, give each
        // message's events once; the exit message ends the session with the last text.
        let call = serde_json::json!({"id": "c1", "type": "function",
            "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}});
        let mut messages = vec![
            serde_json::json!({"role": "system", "content": "You are…"}),
            serde_json::json!({"role": "user", "content": "Create hello.txt"}),
            serde_json::json!({"role": "assistant", "content": "Listing.", "tool_calls": [call],
                "extra": {"response": {"usage": {"prompt_tokens": 9, "completion_tokens": 4}}}}),
            serde_json::json!({"role": "tool", "tool_call_id": "c1",
                "content": "{\n  \"returncode\": 2,\n  \"output\": \"no\"\n}"}),
        ];
        let info = serde_json::json!({"config": {"model": {"model_name": "openai/simtape"}}});
        let first = serde_json::json!({"info": info, "messages": messages});
        messages.push(serde_json::json!({"role": "assistant", "content": "Done."}));
        messages.push(serde_json::json!({"role": "exit", "content": "",
            "extra": {"exit_status": "Submitted"}}));
        let second = serde_json::json!({"info": info, "messages": messages});
        let mut parser = Trajectory::default();
        let mut events: Vec<EventKind> = lines(&[&first, &second])
            .iter()
            .flat_map(|line| parser.line(line))
            .collect();
        events.extend(parser.finish());
        assert_eq!(
            events,
            vec![
                EventKind::SessionStart {
                    model: Some("openai/simtape".into())
                },
                EventKind::Message {
                    text: "Listing.".into()
                },
                EventKind::ToolStart {
                    id: "c1".into(),
                    name: "bash".into(),
                    input: serde_json::json!({"command": "ls"}),
                },
                EventKind::Usage {
                    input_tokens: 9,
                    output_tokens: 4
                },
                EventKind::ToolEnd {
                    id: "c1".into(),
                    output: "{\n  \"returncode\": 2,\n  \"output\": \"no\"\n}".into(),
                    is_error: true,
                },
                EventKind::Message {
                    text: "Done.".into()
                },
                EventKind::Result {
                    text: "Done.".into(),
                    is_error: false
                },
            ]
        );
    }

    #[test]
    fn an_exit_other_than_submitted_is_an_error() {
        let trajectory = serde_json::json!({"messages": [{"role": "exit",
            "content": "boom", "extra": {"exit_status": "RuntimeError"}}]});
        let mut parser = Trajectory::default();
        let events: Vec<EventKind> = lines(&[&trajectory])
            .iter()
            .flat_map(|line| parser.line(line))
            .collect();
        assert_eq!(
            events[1..],
            [
                EventKind::Error {
                    message: "RuntimeError: boom".into()
                },
                EventKind::Result {
                    text: String::new(),
                    is_error: true
                },
            ]
        );
    }
}
