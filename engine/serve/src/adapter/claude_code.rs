//! Claude Code: `claude -p TASK --output-format stream-json --verbose`.
//!
//! Its lines: `system` (subtype `init` opens the session; others are notices, kept as
//! errors when they say one), `assistant` (a model message: text, thinking and `tool_use`
//! blocks), `user` (the `tool_result` blocks going back to the model), `stream_event`
//! (partial deltas, with `--include-partial-messages`: the whole message follows, so they
//! are skipped) and `result` (the answer, the session's usage).

use serde_json::Value;
use simtape_agent::CommandAgentSpec;

use super::{content_text, count, cut, may_write, EventKind, Launch, Parser, Places};

/// Claude Code's per-process request fields: the session id in `metadata.user_id` (a JSON
/// string of device, account and session ids).
pub(super) const POINTERS: &[&str] = &["/metadata/user_id"];
/// Claude Code's per-run text: the date line and the kernel's version in its environment
/// section.
pub(super) const PATTERNS: [(&str, &str); 2] = [
    (
        r"Today's date is \d{4}-\d{2}-\d{2}",
        "Today's date is <date>",
    ),
    (r#"OS Version: [^"\\\n]*"#, "OS Version: <os>"),
];

/// The tools a full-access session may use without asking (root cannot use
/// `bypassPermissions`; `acceptEdits` plus this list works for any user).
const FULL_TOOLS: &str = "Read,Write,Edit,MultiEdit,Bash,Glob,Grep,LS,TodoWrite";
/// The tools of a read-only session.
const READ_TOOLS: &str = "Read,Glob,Grep,LS";
/// The tools a read-only session is refused.
const WRITE_TOOLS: &str = "Write,Edit,MultiEdit,Bash,NotebookEdit";

pub(super) fn launch(spec: &CommandAgentSpec, model: Option<&str>, places: &Places<'_>) -> Launch {
    let mut args: Vec<String> = [
        "-p",
        &spec.task,
        "--output-format",
        "stream-json",
        "--verbose",
    ]
    .iter()
    .map(|arg| arg.to_string())
    .collect();
    // Without a model from the registry it names none: its own default.
    if let Some(model) = model {
        args.extend(["--model".to_string(), model.to_string()]);
    }
    // The scenario's MCP servers: their config, and their tools allowed (`mcp__NAME` allows
    // every tool of a server).
    let mut allowed = match may_write(spec.permission) {
        true => FULL_TOOLS.to_string(),
        false => READ_TOOLS.to_string(),
    };
    if let Some((servers, config)) = places.mcp {
        args.extend(["--mcp-config".to_string(), config.display().to_string()]);
        for server in servers {
            allowed.push_str(&format!(",mcp__{server}"));
        }
    }
    // In simtape's sandbox it runs as an unprivileged user with its own full-access mode (a
    // read-only project is a read-only mount there); on the host, as root may be, the tool
    // lists stand in (root cannot use bypassPermissions).
    let permissions = match (places.sandboxed, may_write(spec.permission)) {
        (true, _) => vec!["--permission-mode", "bypassPermissions"],
        (false, true) => vec![
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            &allowed,
        ],
        (false, false) => vec!["--allowedTools", &allowed, "--disallowedTools", WRITE_TOOLS],
    };
    args.extend(permissions.into_iter().map(String::from));
    let env = [
        // No update checks, telemetry or other calls past the endpoints.
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
    ];
    Launch {
        args,
        env: env.map(|(k, v)| (k.to_string(), v.to_string())).to_vec(),
        files: Vec::new(),
    }
}

/// The stream-json reader.
#[derive(Debug, Default)]
pub(super) struct StreamJson;

impl Parser for StreamJson {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let text = |key: &str| value.get(key).and_then(Value::as_str);
        match text("type") {
            Some("system") => system(&value),
            Some("assistant") => assistant(&value),
            Some("user") => user(&value),
            Some("result") => result(&value),
            _ => Vec::new(),
        }
    }
}

fn system(value: &Value) -> Vec<EventKind> {
    match value.get("subtype").and_then(Value::as_str) {
        Some("init") => vec![EventKind::SessionStart {
            model: value.get("model").and_then(Value::as_str).map(String::from),
        }],
        Some(subtype) if subtype.contains("error") || subtype.contains("retry") => {
            // The status and error name only: `retry_delay_ms` is wall-clock jitter.
            let detail = value
                .get("error")
                .or_else(|| value.get("message"))
                .map(content_text)
                .unwrap_or_default();
            let message = match value.get("error_status").and_then(Value::as_u64) {
                Some(status) => format!("{subtype}: {status} {detail}"),
                None => format!("{subtype}: {detail}"),
            };
            vec![EventKind::Error {
                message: cut(&message),
            }]
        }
        _ => Vec::new(),
    }
}

fn blocks(value: &Value) -> &[Value] {
    let content = value.pointer("/message/content").and_then(Value::as_array);
    content.map_or(&[], Vec::as_slice)
}

fn assistant(value: &Value) -> Vec<EventKind> {
    let mut events = Vec::new();
    for block in blocks(value) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                if !text.is_empty() {
                    events.push(EventKind::Message { text: cut(text) });
                }
            }
            Some("tool_use") => events.push(EventKind::ToolStart {
                id: block.get("id").and_then(Value::as_str).unwrap_or("").into(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .into(),
                input: block.get("input").cloned().unwrap_or(Value::Null),
            }),
            _ => {}
        }
    }
    events
}

fn user(value: &Value) -> Vec<EventKind> {
    let results = blocks(value)
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"));
    results
        .map(|block| EventKind::ToolEnd {
            id: block
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            output: cut(&content_text(block.get("content").unwrap_or(&Value::Null))),
            is_error: block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
        .collect()
}

fn result(value: &Value) -> Vec<EventKind> {
    let mut events = Vec::new();
    if let Some(usage) = value.get("usage") {
        events.push(EventKind::Usage {
            input_tokens: count(usage, "input_tokens"),
            output_tokens: count(usage, "output_tokens"),
        });
    }
    let is_error = value
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let text = match value.get("result").and_then(Value::as_str) {
        Some(text) => text.to_string(),
        // An error result names its subtype (`error_max_turns`, `error_during_execution`).
        None => value
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    };
    events.push(EventKind::Result {
        text: cut(&text),
        is_error,
    });
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Vec<EventKind> {
        let mut parser = StreamJson;
        lines.iter().flat_map(|line| parser.line(line)).collect()
    }

    #[test]
    fn a_session_reads_as_start_tool_calls_and_result() {
        let events = read(&[
            r#"{"type":"system","subtype":"init","session_id":"s-1","model":"claude-x","tools":["Read"]}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/w/a.py"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"x = 1"}]}]}}"#,
            r#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.","usage":{"input_tokens":12,"output_tokens":5},"duration_ms":4031}"#,
        ]);
        assert_eq!(
            events,
            vec![
                EventKind::SessionStart {
                    model: Some("claude-x".into())
                },
                EventKind::Message {
                    text: "Looking.".into()
                },
                EventKind::ToolStart {
                    id: "toolu_1".into(),
                    name: "Read".into(),
                    input: serde_json::json!({"file_path": "/w/a.py"}),
                },
                EventKind::ToolEnd {
                    id: "toolu_1".into(),
                    output: "x = 1".into(),
                    is_error: false
                },
                EventKind::Usage {
                    input_tokens: 12,
                    output_tokens: 5
                },
                EventKind::Result {
                    text: "Done.".into(),
                    is_error: false
                },
            ]
        );
    }

    #[test]
    fn an_error_result_and_a_retry_notice_are_kept_and_noise_is_skipped() {
        let events = read(&[
            "not json at all",
            r#"{"type":"system","subtype":"api_retry","attempt":1,"retry_delay_ms":1149,"error_status":529,"error":"overloaded"}"#,
            r#"{"type":"result","subtype":"error_max_turns","is_error":true}"#,
        ]);
        assert_eq!(
            events,
            vec![
                EventKind::Error {
                    message: "api_retry: 529 overloaded".into()
                },
                EventKind::Result {
                    text: "error_max_turns".into(),
                    is_error: true
                },
            ]
        );
    }
}
