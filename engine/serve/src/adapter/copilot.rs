//! GitHub Copilot CLI: `copilot -p TASK --output-format json --allow-all-tools
//! --no-auto-update`.
//!
//! It is pointed at the endpoint as a custom ("bring your own key") provider:
//! `COPILOT_PROVIDER_BASE_URL` (the Chat Completions endpoint's `/v1`),
//! `COPILOT_PROVIDER_TYPE=openai` and `COPILOT_MODEL`; `COPILOT_OFFLINE=true` turns off all it
//! does past the provider (GitHub sign-in, telemetry, its GitHub MCP server, web tools, updates),
//! so it runs with no GitHub account. Its state (sessions, logs, the package it unpacks at start)
//! goes under the scratch HOME. The scenario's MCP servers are named by
//! `--additional-mcp-config`, each at its Streamable HTTP endpoint.
//!
//! Its JSON lines are session events, each `{"type", "data", "id", "timestamp", "parentId"}`:
//! `session.tools_updated` (the model), `assistant.message` (the text and the tool requests of
//! one model answer), `tool.execution_start` / `tool.execution_complete` (`success`, the
//! result's `content`), `model.call_failure` (a failed call it retries), `session.error`, and
//! `result` (the exit code) last; the rest (deltas, turn marks, notices) are skipped. The
//! adapter reads only contents, never the ids, timestamps or durations each line carries, so
//! the events are the same every run.

use serde_json::{json, Value};
use simtape_agent::CommandAgentSpec;

use super::{cut, may_write, mcp_urls, text_of, EventKind, Launch, Parser, Places};

/// Copilot CLI's per-run text in its requests: the wall-clock instant it puts before the task.
pub(super) const PATTERNS: [(&str, &str); 1] = [(
    r"<current_datetime>[^<]*</current_datetime>",
    "<current_datetime><time></current_datetime>",
)];

/// The tools a read-only session on the host is refused: its shell and its file writes.
const WRITE_TOOLS: [&str; 2] = ["shell", "write"];

pub(super) fn launch(spec: &CommandAgentSpec, model: &str, places: &Places<'_>) -> Launch {
    let mut args: Vec<String> = [
        "-p",
        &spec.task,
        "--output-format",
        "json",
        // Required in its non-interactive mode; read-only refuses the writing tools below.
        "--allow-all-tools",
        "--no-auto-update",
        // Nobody answers a question: it works alone.
        "--no-ask-user",
    ]
    .map(String::from)
    .to_vec();
    // In simtape's sandbox a read-only project is a read-only mount; on the host, read-only
    // refuses its shell and its file writes.
    if !places.sandboxed && !may_write(spec.permission) {
        for tool in WRITE_TOOLS {
            args.extend(["--deny-tool".to_string(), tool.to_string()]);
        }
    }
    let servers: serde_json::Map<String, Value> = mcp_urls(places)
        .map(|(server, url)| {
            let server_config = json!({"type": "http", "url": url, "tools": ["*"]});
            (server, server_config)
        })
        .collect();
    if !servers.is_empty() {
        let config = json!({ "mcpServers": servers });
        args.extend(["--additional-mcp-config".to_string(), config.to_string()]);
    }
    let env = [
        (
            "COPILOT_PROVIDER_BASE_URL",
            format!("{}/v1", places.base_url),
        ),
        ("COPILOT_PROVIDER_TYPE", "openai".into()),
        ("COPILOT_MODEL", model.to_string()),
        ("COPILOT_OFFLINE", "true".into()),
        ("COPILOT_AUTO_UPDATE", "false".into()),
    ];
    Launch {
        args,
        env: env.map(|(name, value)| (name.to_string(), value)).to_vec(),
        files: Vec::new(),
    }
}

/// The `--output-format json` reader.
#[derive(Debug, Default)]
pub(super) struct Events {
    /// Whether the session's start was reported.
    started: bool,
    /// The last text the model said: the answer.
    last_message: Option<String>,
    /// Whether the result line was read.
    ended: bool,
}

impl Events {
    /// One model answer: its text, then each tool it asks for.
    fn message(&mut self, data: &Value) -> Vec<EventKind> {
        let mut events = Vec::new();
        let content = data.get("content").and_then(Value::as_str).unwrap_or("");
        if !content.trim().is_empty() {
            let text = cut(content);
            self.last_message = Some(text.clone());
            events.push(EventKind::Message { text });
        }
        let requests = data.get("toolRequests").and_then(Value::as_array);
        for request in requests.into_iter().flatten() {
            events.push(EventKind::ToolStart {
                id: text_of(request, "toolCallId").unwrap_or_default(),
                name: text_of(request, "name").unwrap_or_else(|| "tool".into()),
                input: request.get("arguments").cloned().unwrap_or(Value::Null),
            });
        }
        events
    }

    /// A tool's end: its result's content, or its error's message.
    fn tool_end(data: &Value) -> EventKind {
        let success = data.get("success").and_then(Value::as_bool) == Some(true);
        let result = data.get("result").unwrap_or(&Value::Null);
        let error = data.get("error").unwrap_or(&Value::Null);
        let output = text_of(result, "content")
            .or_else(|| text_of(error, "message"))
            .unwrap_or_default();
        EventKind::ToolEnd {
            id: text_of(data, "toolCallId").unwrap_or_default(),
            output: cut(&output),
            is_error: !success,
        }
    }
}

impl Parser for Events {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let data = value.get("data").unwrap_or(&Value::Null);
        match value.get("type").and_then(Value::as_str) {
            Some("session.tools_updated") if !self.started => {
                self.started = true;
                vec![EventKind::SessionStart {
                    model: text_of(data, "model"),
                }]
            }
            Some("assistant.message") => self.message(data),
            Some("tool.execution_complete") => vec![Events::tool_end(data)],
            // A failed model call it retries: its status and the error's kind (its message
            // and timings are left out: the status says what happened).
            Some("model.call_failure") => {
                let status = text_of(data, "statusCode").unwrap_or_else(|| "no status".into());
                let kind = text_of(data, "errorType").unwrap_or_else(|| "error".into());
                vec![EventKind::Error {
                    message: format!("model call failed: {status} {kind}"),
                }]
            }
            Some("session.error") => {
                let message = text_of(data, "message").unwrap_or_else(|| "unknown error".into());
                vec![EventKind::Error {
                    message: cut(&message),
                }]
            }
            Some("result") => {
                self.ended = true;
                let code = value.get("exitCode").and_then(Value::as_i64);
                vec![EventKind::Result {
                    text: self.last_message.clone().unwrap_or_default(),
                    is_error: code != Some(0),
                }]
            }
            _ => Vec::new(),
        }
    }

    /// Without a result line the session did not finish: its last text, as an error.
    fn finish(&mut self) -> Vec<EventKind> {
        super::unfinished(self.ended, &mut self.last_message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as Copilot CLI 1.0.102 printed them under simtape (a 529, its retry, a `create`
    /// call and the answer), shortened to the fields that matter and the volatile ones.
    const SESSION: [&str; 9] = [
        r#"{"type":"session.tools_updated","data":{"model":"gpt-4.1"},"ephemeral":true,"id":"550663db-21f1-4f3b-97f8-424901a4bdf0","timestamp":"2026-11-27T13:28:06.919Z"}"#,
        r#"{"type":"user.message","data":{"content":"Create hello.txt saying hello.","transformedContent":"<current_datetime>2026-11-27T13:28:06.921+00:00</current_datetime>\n\nCreate hello.txt"},"id":"25662394-9514-4908-a124-06dbe2d49335","timestamp":"2026-11-27T13:28:06.921Z"}"#,
        r#"{"type":"model.call_failure","data":{"model":"gpt-4.1","statusCode":529,"durationMs":314,"errorMessage":"{\"message\":\"Overloaded\"}","errorType":"server_error"},"ephemeral":true,"id":"d5d73c27-83aa-4b4f-9f42-085a7b6227ea","timestamp":"2026-11-27T13:28:07.919Z"}"#,
        r#"{"type":"assistant.message_delta","data":{"messageId":"b8a24b4e","deltaContent":"I'll"},"ephemeral":true}"#,
        r#"{"type":"assistant.message","data":{"messageId":"b8a24b4e","content":"I'll create the file.","toolRequests":[{"toolCallId":"call_1_0","name":"create","arguments":{"path":"<cwd>/hello.txt","file_text":"hello\n"},"type":"function"}]},"timestamp":"2026-11-27T13:28:09.245Z"}"#,
        r#"{"type":"tool.execution_start","data":{"toolCallId":"call_1_0","toolName":"create","arguments":{"path":"<cwd>/hello.txt"}},"timestamp":"2026-11-27T13:28:09.250Z"}"#,
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"call_1_0","success":true,"result":{"content":"Created file <cwd>/hello.txt with 6 characters"}},"timestamp":"2026-11-27T13:28:09.260Z"}"#,
        r#"{"type":"assistant.message","data":{"messageId":"2bdb73f8","content":"Created hello.txt.","toolRequests":[]},"timestamp":"2026-11-27T13:28:09.483Z"}"#,
        r#"{"type":"result","timestamp":"2026-11-27T13:28:09.576Z","sessionId":"fcc0a4c9-54a3-4a88-a65d-22b42f087969","exitCode":0,"usage":{"premiumRequests":0,"sessionDurationMs":3627}}"#,
    ];

    #[test]
    fn a_session_reads_as_a_retry_a_tool_call_and_the_answer() {
        // Goal: the model, the failed call it retried, the answer's text and tool request,
        // the tool's result and the final answer; deltas, ids and timestamps are left out.
        let mut parser = Events::default();
        let mut events: Vec<EventKind> = SESSION.iter().flat_map(|l| parser.line(l)).collect();
        events.extend(parser.finish());
        assert_eq!(
            events,
            vec![
                EventKind::SessionStart {
                    model: Some("gpt-4.1".into())
                },
                EventKind::Error {
                    message: "model call failed: 529 server_error".into()
                },
                EventKind::Message {
                    text: "I'll create the file.".into()
                },
                EventKind::ToolStart {
                    id: "call_1_0".into(),
                    name: "create".into(),
                    input: json!({"path": "<cwd>/hello.txt", "file_text": "hello\n"}),
                },
                EventKind::ToolEnd {
                    id: "call_1_0".into(),
                    output: "Created file <cwd>/hello.txt with 6 characters".into(),
                    is_error: false,
                },
                EventKind::Message {
                    text: "Created hello.txt.".into()
                },
                EventKind::Result {
                    text: "Created hello.txt.".into(),
                    is_error: false
                },
            ]
        );
    }

    #[test]
    fn a_failed_tool_and_a_session_cut_short_are_errors() {
        let mut parser = Events::default();
        let failed = r#"{"type":"tool.execution_complete","data":{"toolCallId":"c","success":false,"error":{"message":"denied"}}}"#;
        assert_eq!(
            parser.line(failed),
            vec![EventKind::ToolEnd {
                id: "c".into(),
                output: "denied".into(),
                is_error: true
            }]
        );
        assert_eq!(
            parser.finish(),
            vec![EventKind::Result {
                text: String::new(),
                is_error: true
            }]
        );
    }

    #[test]
    fn its_datetime_is_normalized() {
        let body = json!({"messages": [{"role": "user", "content":
            "<current_datetime>2026-11-27T13:28:06.921+00:00</current_datetime>\n\nGo."}]})
        .to_string();
        let normalized = super::super::rules(simtape_agent::AdapterKind::Copilot).apply(&body);
        assert!(
            normalized.contains("<current_datetime><time></current_datetime>"),
            "{normalized}"
        );
    }
}
