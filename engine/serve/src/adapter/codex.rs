//! Codex CLI: `codex exec --json TASK`.
//!
//! Its lines: `thread.started`, `turn.started`, `item.started` / `item.updated` /
//! `item.completed` (an item is an `agent_message`, `reasoning`, `command_execution`,
//! `file_change`, `mcp_tool_call`, `web_search` or `todo_list`), `turn.completed` (usage),
//! `turn.failed` and `error`. It prints no result line: the session's answer is its last
//! agent message.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use simtape_agent::CommandAgentSpec;

use super::{count, cut, may_write, EventKind, Launch, Parser, Places};

/// Codex's per-process request fields: `client_metadata` (session, thread, turn and
/// installation ids, the turn's wall-clock start) on model requests, and the turn's
/// wall-clock start in the metadata of its MCP tool calls.
pub(super) const POINTERS: &[&str] = &[
    "/client_metadata",
    "/params/_meta/x-codex-turn-metadata/turn_started_at_unix_ms",
];
/// Codex's per-run text: the date and time zone of its environment context, and the chunk id
/// and wall time of each command's output.
pub(super) const PATTERNS: [(&str, &str); 4] = [
    (
        r"<current_date>\d{4}-\d{2}-\d{2}</current_date>",
        "<current_date><date></current_date>",
    ),
    (r"<timezone>[^<]*</timezone>", "<timezone><zone></timezone>"),
    (r"Chunk ID: [0-9a-f]+", "Chunk ID: <chunk>"),
    (
        r"Wall time: [0-9.]+ seconds",
        "Wall time: <seconds> seconds",
    ),
];

/// The model provider simtape configures for Codex (its config keys name it).
const PROVIDER: &str = "simtape";

/// How Codex's notice about a model it has no metadata for begins (the adapter's default
/// `simtape`, or any id from the registry it does not know).
const UNKNOWN_MODEL_NOTICE: &str = "Model metadata for `";

pub(super) fn launch(spec: &CommandAgentSpec, model: &str, places: &Places<'_>) -> Launch {
    // In simtape's sandbox Codex needs no sandbox of its own (a read-only project is a
    // read-only mount there); on the host its own sandbox contains it.
    let sandbox: &[&str] = match (places.sandboxed, may_write(spec.permission)) {
        (true, _) => &["--dangerously-bypass-approvals-and-sandbox"],
        (false, true) => &["--sandbox", "workspace-write"],
        (false, false) => &["--sandbox", "read-only"],
    };
    // Codex ignores OPENAI_BASE_URL for its built-in provider (it dials the real host), so
    // a provider of our own names the endpoint; such a provider speaks Responses over HTTP
    // with server-sent events and tries no websocket. --skip-git-repo-check: the scratch
    // directory is no repository; --ephemeral: no session files under CODEX_HOME.
    let provider = format!(
        "model_providers.{PROVIDER}={{name=\"{PROVIDER}\", base_url=\"{}/v1\", wire_api=\"responses\", env_key=\"OPENAI_API_KEY\"}}",
        places.base_url
    );
    let mut args: Vec<String> = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--ephemeral",
        "-c",
        &format!("model_provider={PROVIDER}"),
        "-c",
        &provider,
        // Its usage metrics, its update check and its plugin marketplace's sync go to its
        // vendor's hosts, past the endpoints: off (the sandbox would refuse them and block
        // the run).
        "-c",
        "analytics.enabled=false",
        "-c",
        "check_for_update_on_startup=false",
        "-c",
        "features.plugins=false",
        "-m",
        model,
    ]
    .map(String::from)
    .to_vec();
    args.extend(sandbox.iter().map(|arg| arg.to_string()));
    // The scenario's MCP servers, each at its Streamable HTTP endpoint (Codex reads no MCP
    // config file of ours: its servers are config keys).
    for server in places.mcp.map(|(servers, _)| servers).unwrap_or_default() {
        args.push("-c".into());
        args.push(format!(
            "mcp_servers.{server}.url=\"{}{}{server}\"",
            places.base_url,
            crate::mcp_path::MCP_PATH_PREFIX
        ));
    }
    args.push(spec.task.clone());
    // Codex refuses a CODEX_HOME that does not exist; the scratch HOME does.
    let home = places.home.display().to_string();
    Launch {
        args,
        env: vec![("CODEX_HOME".into(), home)],
        files: Vec::new(),
    }
}

/// The `exec --json` reader.
#[derive(Debug, Default)]
pub(super) struct ExecJson {
    /// Items whose start was reported.
    started: BTreeSet<String>,
    /// The last agent message: the answer.
    last_message: Option<String>,
    /// Whether a turn failed.
    failed: bool,
}

impl Parser for ExecJson {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        match value.get("type").and_then(Value::as_str) {
            Some("thread.started") => vec![EventKind::SessionStart { model: None }],
            Some("item.started") => self.item(&value, false),
            Some("item.completed") => self.item(&value, true),
            Some("turn.completed") => {
                let usage = value.get("usage").unwrap_or(&Value::Null);
                vec![EventKind::Usage {
                    input_tokens: count(usage, "input_tokens"),
                    output_tokens: count(usage, "output_tokens"),
                }]
            }
            Some("turn.failed") => {
                self.failed = true;
                vec![error(value.pointer("/error/message"))]
            }
            Some("error") => vec![error(value.get("message"))],
            _ => Vec::new(),
        }
    }

    fn finish(&mut self) -> Vec<EventKind> {
        let text = self.last_message.take();
        vec![EventKind::Result {
            is_error: self.failed || text.is_none(),
            text: text.unwrap_or_default(),
        }]
    }
}

impl ExecJson {
    fn item(&mut self, value: &Value, completed: bool) -> Vec<EventKind> {
        let Some(item) = value.get("item") else {
            return Vec::new();
        };
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let id = text("id").unwrap_or("").to_string();
        let kind = text("type").unwrap_or("");
        match kind {
            "agent_message" if completed => {
                let message = cut(text("text").unwrap_or(""));
                self.last_message = Some(message.clone());
                vec![EventKind::Message { text: message }]
            }
            "agent_message" | "reasoning" | "todo_list" => Vec::new(),
            // Codex warns that it has no metadata for the model this adapter configures; it
            // prints that from a task of its own, before or after its first request as the
            // threads fall, so as an event it would move between runs. It is about simtape's
            // provider, not the session: left out.
            "error" if text("message").is_some_and(|m| m.starts_with(UNKNOWN_MODEL_NOTICE)) => {
                Vec::new()
            }
            // Any other notice item, once complete.
            "error" if completed => vec![error(item.get("message"))],
            "error" => Vec::new(),
            _ => {
                let mut events = Vec::new();
                if self.started.insert(id.clone()) {
                    let (name, input) = tool(kind, item);
                    events.push(EventKind::ToolStart {
                        id: id.clone(),
                        name,
                        input,
                    });
                }
                if completed {
                    let output = text("aggregated_output")
                        .map(String::from)
                        .or_else(|| item.get("result").map(Value::to_string))
                        .or_else(|| item.get("error").map(Value::to_string))
                        .unwrap_or_default();
                    let status_failed = text("status") == Some("failed");
                    let exit_failed = item
                        .get("exit_code")
                        .and_then(Value::as_i64)
                        .is_some_and(|code| code != 0);
                    events.push(EventKind::ToolEnd {
                        id,
                        output: cut(&output),
                        is_error: status_failed || exit_failed,
                    });
                }
                events
            }
        }
    }
}

/// A tool item's name and arguments.
fn tool(kind: &str, item: &Value) -> (String, Value) {
    match kind {
        "command_execution" => (kind.into(), json!({"command": item.get("command")})),
        "file_change" => (kind.into(), json!({"changes": item.get("changes")})),
        "mcp_tool_call" => {
            let part = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
            // Named as Claude Code names MCP tools (and as the model sees them, the namespace
            // `mcp__SERVER` flattened), so a `tool_called` verifier reads the same for both.
            let name = format!("mcp__{}__{}", part("server"), part("tool"));
            (name, item.get("arguments").cloned().unwrap_or(Value::Null))
        }
        other => (other.into(), item.clone()),
    }
}

fn error(message: Option<&Value>) -> EventKind {
    let message = message.and_then(Value::as_str).unwrap_or("unknown error");
    EventKind::Error {
        message: cut(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_reads_as_tool_calls_usage_and_the_last_message_as_result() {
        let mut parser = ExecJson::default();
        let lines = [
            r#"{"type":"thread.started","thread_id":"t-1"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `simtape` not found. Defaulting to fallback metadata."}}"#,
            r#"{"type":"item.completed","item":{"id":"item_9","type":"error","message":"stream disconnected"}}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"","status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"a.txt\n","exit_code":0,"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"b.txt","kind":"add"}],"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Wrote b.txt."}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":30,"cached_input_tokens":0,"output_tokens":7}}"#,
        ];
        let mut events: Vec<EventKind> = lines.iter().flat_map(|l| parser.line(l)).collect();
        events.extend(parser.finish());
        let names: Vec<&str> = events
            .iter()
            .map(|event| match event {
                EventKind::SessionStart { .. } => "start",
                EventKind::ToolStart { .. } => "tool_start",
                EventKind::ToolEnd { .. } => "tool_end",
                EventKind::Message { .. } => "message",
                EventKind::Usage { .. } => "usage",
                EventKind::Result { .. } => "result",
                EventKind::Error { .. } => "error",
            })
            .collect();
        assert_eq!(
            names,
            [
                "start",
                "error",
                "tool_start",
                "tool_end",
                "tool_start",
                "tool_end",
                "message",
                "usage",
                "result"
            ]
        );
        assert_eq!(
            events.last(),
            Some(&EventKind::Result {
                text: "Wrote b.txt.".into(),
                is_error: false
            })
        );
    }

    #[test]
    fn an_mcp_tool_call_is_named_as_the_model_saw_it() {
        // Goal: Codex reports server and tool apart; the event names the tool
        // `mcp__SERVER__TOOL`, as the flattened namespace the model was offered.
        let mut parser = ExecJson::default();
        let line = r#"{"type":"item.started","item":{"id":"item_4","type":"mcp_tool_call","server":"tickets","tool":"close_ticket","arguments":{"id":"T-1"},"status":"in_progress"}}"#;
        let events = parser.line(line);
        assert!(
            matches!(&events[..], [EventKind::ToolStart { name, .. }] if name == "mcp__tickets__close_ticket"),
            "{events:?}"
        );
    }

    #[test]
    fn a_failed_turn_is_an_error_and_an_erroneous_result() {
        let mut parser = ExecJson::default();
        let mut events =
            parser.line(r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#);
        events.extend(parser.finish());
        assert_eq!(
            events,
            vec![
                EventKind::Error {
                    message: "stream disconnected".into()
                },
                EventKind::Result {
                    text: String::new(),
                    is_error: true
                },
            ]
        );
    }
}
