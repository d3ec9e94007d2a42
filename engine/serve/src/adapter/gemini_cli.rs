//! Gemini CLI: `gemini -m MODEL --output-format stream-json --approval-mode MODE -p TASK`.
//!
//! It is pointed at the endpoint by `GOOGLE_GEMINI_BASE_URL` (plain http on loopback), with
//! user settings simtape writes in its scratch HOME (`~/.gemini/settings.json`; a system
//! settings file it refuses unless its directory is root's): the base URL alone
//! makes it pick its `gateway` authentication, which its non-interactive mode refuses
//! ("Invalid auth method selected."), so the settings select the API key's; they also turn
//! off its usage statistics, telemetry and update checks (each dials its vendor's hosts) and
//! name the scenario's MCP servers. A model is named (`-m`): without one it asks a router
//! model which model to use before every turn.
//!
//! Its lines: `init` (session id, model), `message` (the user's prompt; the assistant's text
//! in deltas), `tool_use` (`tool_name`, `tool_id`, `parameters`), `tool_result` (`tool_id`,
//! `status`, `output` or `error`), `error`, and `result` (status, token counts).

use serde_json::{json, Value};
use simtape_agent::CommandAgentSpec;

use super::{count, cut, may_write, mcp_urls, text_of, EventKind, Launch, Parser, Places};

/// Gemini CLI's per-run text: the date of its session context.
pub(super) const PATTERNS: [(&str, &str); 1] = [(
    r"Today's date is [^\n(]+ \(formatted",
    "Today's date is <date> (formatted",
)];

/// Where Gemini CLI reads its user settings, under HOME.
const SETTINGS_FILE: &str = ".gemini/settings.json";

/// Returns the `--approval-mode` of a session (Gemini CLI's and Qwen Code's): in simtape's
/// sandbox a read-only project is a read-only mount, so every tool may run (`yolo`); on the
/// host, read-only is the plan mode (read-only tools only).
pub(super) fn approval_mode(spec: &CommandAgentSpec, places: &Places<'_>) -> &'static str {
    if places.sandboxed || may_write(spec.permission) {
        "yolo"
    } else {
        "plan"
    }
}

/// Returns the scenario's MCP servers as the settings' `mcpServers` (Gemini CLI's and Qwen
/// Code's shape): each at its Streamable HTTP endpoint, trusted.
pub(super) fn mcp_servers(places: &Places<'_>) -> serde_json::Map<String, Value> {
    mcp_urls(places)
        .map(|(server, url)| (server, json!({"httpUrl": url, "trust": true})))
        .collect()
}

/// Returns user settings in Gemini CLI's shape (Qwen Code's too) with `security` and
/// `general` as given: usage statistics, telemetry and the IDE link off (each dials its
/// vendor's hosts), and the scenario's MCP servers.
pub(super) fn settings(security: Value, general: Value, places: &Places<'_>) -> String {
    let settings = json!({
        "security": security,
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": general,
        "ide": {"enabled": false},
        "mcpServers": mcp_servers(places),
    });
    settings.to_string()
}

pub(super) fn launch(spec: &CommandAgentSpec, model: &str, places: &Places<'_>) -> Launch {
    let mode = approval_mode(spec, places);
    let settings = settings(
        json!({"auth": {"selectedType": "gemini-api-key"}}),
        json!({"enableAutoUpdate": false, "enableAutoUpdateNotification": false}),
        places,
    );
    let path = places.home.join(SETTINGS_FILE);
    Launch {
        args: [
            "-m",
            model,
            "--output-format",
            "stream-json",
            "--approval-mode",
            mode,
            "-p",
            &spec.task,
        ]
        .map(String::from)
        .to_vec(),
        env: vec![
            // The project is a scratch copy (or the sandbox's): trusted, as the headless
            // mode asks to be told.
            ("GEMINI_CLI_TRUST_WORKSPACE".into(), "true".into()),
        ],
        files: vec![(path, settings)],
    }
}

/// The `--output-format stream-json` reader.
#[derive(Debug, Default)]
pub(super) struct StreamJson {
    /// The assistant's text so far in this turn, as its deltas arrive.
    pending: String,
    /// The last message: the answer.
    last_message: Option<String>,
    /// Whether a result line was read.
    ended: bool,
}

impl StreamJson {
    /// Ends the assistant's text in progress as one message.
    fn flush(&mut self) -> Vec<EventKind> {
        if self.pending.is_empty() {
            return Vec::new();
        }
        let text = cut(&std::mem::take(&mut self.pending));
        self.last_message = Some(text.clone());
        vec![EventKind::Message { text }]
    }
}

impl Parser for StreamJson {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        match value.get("type").and_then(Value::as_str) {
            Some("init") => vec![EventKind::SessionStart {
                model: text_of(&value, "model"),
            }],
            Some("message") if value.get("role").and_then(Value::as_str) == Some("assistant") => {
                self.pending
                    .push_str(value.get("content").and_then(Value::as_str).unwrap_or(""));
                // A whole message (not a delta) ends at once.
                match value.get("delta").and_then(Value::as_bool) {
                    Some(true) => Vec::new(),
                    _ => self.flush(),
                }
            }
            Some("tool_use") => {
                let mut events = self.flush();
                events.push(EventKind::ToolStart {
                    id: text_of(&value, "tool_id").unwrap_or_default(),
                    name: text_of(&value, "tool_name").unwrap_or_else(|| "tool".into()),
                    input: value.get("parameters").cloned().unwrap_or(Value::Null),
                });
                events
            }
            Some("tool_result") => {
                let failed = value.get("status").and_then(Value::as_str) != Some("success");
                let output = text_of(&value, "output")
                    .or_else(|| value.get("error").and_then(|e| text_of(e, "message")))
                    .unwrap_or_default();
                vec![EventKind::ToolEnd {
                    id: text_of(&value, "tool_id").unwrap_or_default(),
                    output: cut(&output),
                    is_error: failed,
                }]
            }
            Some("error") => {
                let message = text_of(&value, "message").unwrap_or_else(|| "unknown error".into());
                vec![EventKind::Error {
                    message: cut(&message),
                }]
            }
            Some("result") => {
                let mut events = self.flush();
                self.ended = true;
                let stats = value.get("stats").unwrap_or(&Value::Null);
                events.push(EventKind::Usage {
                    input_tokens: count(stats, "input_tokens"),
                    output_tokens: count(stats, "output_tokens"),
                });
                let failed = value.get("status").and_then(Value::as_str) != Some("success");
                events.push(EventKind::Result {
                    text: self.last_message.clone().unwrap_or_default(),
                    is_error: failed,
                });
                events
            }
            _ => Vec::new(),
        }
    }

    /// Without a result line the session did not finish: its last text, as an error.
    fn finish(&mut self) -> Vec<EventKind> {
        let mut events = self.flush();
        if !self.ended {
            events.push(EventKind::Result {
                text: self.last_message.take().unwrap_or_default(),
                is_error: true,
            });
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_make_one_message_and_the_result_carries_it() {
        // Goal: the assistant's deltas join into one message, ended by the tool call after
        // them; the tool's result, the usage and the final answer follow.
        let mut parser = StreamJson::default();
        let lines = [
            r#"{"type":"init","session_id":"s","model":"gemini-2.5-flash"}"#,
            r#"{"type":"message","role":"user","content":"Create hello.txt"}"#,
            r#"{"type":"message","role":"assistant","content":"Writing ","delta":true}"#,
            r#"{"type":"message","role":"assistant","content":"it.","delta":true}"#,
            r#"{"type":"tool_use","tool_name":"write_file","tool_id":"c1","parameters":{"file_path":"hello.txt"}}"#,
            r#"{"type":"tool_result","tool_id":"c1","status":"error","error":{"type":"x","message":"denied"}}"#,
            r#"{"type":"message","role":"assistant","content":"Done.","delta":true}"#,
            r#"{"type":"result","status":"success","stats":{"input_tokens":9,"output_tokens":4}}"#,
        ];
        let mut events: Vec<EventKind> = lines.iter().flat_map(|l| parser.line(l)).collect();
        events.extend(parser.finish());
        assert_eq!(
            events,
            vec![
                EventKind::SessionStart {
                    model: Some("gemini-2.5-flash".into())
                },
                EventKind::Message {
                    text: "Writing it.".into()
                },
                EventKind::ToolStart {
                    id: "c1".into(),
                    name: "write_file".into(),
                    input: json!({"file_path": "hello.txt"}),
                },
                EventKind::ToolEnd {
                    id: "c1".into(),
                    output: "denied".into(),
                    is_error: true,
                },
                EventKind::Message {
                    text: "Done.".into()
                },
                EventKind::Usage {
                    input_tokens: 9,
                    output_tokens: 4
                },
                EventKind::Result {
                    text: "Done.".into(),
                    is_error: false
                },
            ]
        );
    }

    #[test]
    fn its_session_date_is_normalized() {
        // Goal: the date Gemini CLI writes in its session context leaves the tape.
        let body = json!({"contents": [{"parts": [{"text":
            "Today's date is Friday, November 27, 2026 (formatted according to the user's locale)."
        }]}]})
        .to_string();
        let normalized = super::super::rules(simtape_agent::AdapterKind::GeminiCli).apply(&body);
        assert!(
            normalized.contains("Today's date is <date> (formatted according"),
            "{normalized}"
        );
    }

    #[test]
    fn a_session_without_a_result_ends_in_error() {
        let mut parser = StreamJson::default();
        parser.line(r#"{"type":"message","role":"assistant","content":"Half","delta":true}"#);
        assert_eq!(
            parser.finish(),
            vec![
                EventKind::Message {
                    text: "Half".into()
                },
                EventKind::Result {
                    text: "Half".into(),
                    is_error: true
                },
            ]
        );
    }
}
