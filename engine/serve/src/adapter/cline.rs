//! Cline: `cline --json --data-dir DIR -P openai -m MODEL TASK`.
//!
//! It is pointed at the endpoint as an OpenAI-compatible provider: the provider settings `cline
//! auth -p openai -k KEY -m MODEL -b URL` would write are written by the adapter instead, in
//! its data directory under the scratch HOME (`settings/providers.json`, with the Chat
//! Completions endpoint's `/v1` as `baseUrl`), so it runs with no Cline account; beside them its
//! global settings (telemetry and update checks off) and its MCP settings (the scenario's
//! servers, `cline_mcp_settings.json`). It approves
//! its own tools (its default); read-only on the host is its plan mode (`--plan`: no edits or
//! state-changing commands).
//!
//! Its JSON lines: `hook_event` (agent start and end, tool call marks), `agent_event` (each
//! with an `event` of type `content_start` / `content_end` for text and tool calls, `usage`,
//! `error`, `done`, iteration marks) and `run_result` last (the finish reason and the answer).
//! The adapter reads only contents: the wall-clock `ts`, the generated agent and task ids and
//! the durations each line carries are left out, so the events are the same every run.

use serde_json::{json, Value};
use simtape_agent::CommandAgentSpec;

use super::{count, cut, may_write, mcp_urls, text_of, EventKind, Launch, Parser, Places};

/// Cline's per-run text in its requests: the date of its environment section.
pub(super) const PATTERNS: [(&str, &str); 1] = [(r"Date: \d{2}/\d{2}/\d{4}", "Date: <date>")];

/// Its data directory, under HOME (the default `~/.cline/data`, named on its command line).
const DATA_DIR: &str = ".cline/data";

pub(super) fn launch(spec: &CommandAgentSpec, model: &str, places: &Places<'_>) -> Launch {
    let data = places.home.join(DATA_DIR);
    let mut args: Vec<String> = vec![
        "--json".into(),
        "--data-dir".into(),
        data.display().to_string(),
        "-P".into(),
        "openai".into(),
        "-m".into(),
        model.into(),
    ];
    // In simtape's sandbox a read-only project is a read-only mount; on the host read-only
    // is its plan mode.
    if !places.sandboxed && !may_write(spec.permission) {
        args.push("--plan".into());
    }
    args.push(spec.task.clone());
    // What `cline auth` writes; without `updatedAt` it ignores the entry (measured: it then
    // dials no endpoint and fails "Cannot connect to API"). A fixed instant: nothing reads it.
    let settings = json!({
        "provider": "openai-compatible",
        "apiKey": "simtape",
        "model": model,
        "baseUrl": format!("{}/v1", places.base_url),
    });
    let providers = json!({
        "version": 1,
        "lastUsedProvider": "openai-compatible",
        "modes": {},
        "providers": {"openai-compatible": {
            "settings": settings,
            "updatedAt": "2026-01-01T00:00:00.000Z",
            "tokenSource": "manual",
        }},
    });
    // Its telemetry and feature flags (PostHog at data.cline.bot) and its update check dial
    // its vendor's hosts, which the sandbox refuses (measured: the run is BLOCKED): off.
    let global = json!({"telemetryOptOut": true, "autoUpdateEnabled": false});
    // The scenario's MCP servers, each at its Streamable HTTP endpoint.
    let servers: serde_json::Map<String, Value> = mcp_urls(places)
        .map(|(server, url)| {
            let transport = json!({"transport": {"type": "streamableHttp", "url": url}});
            (server, transport)
        })
        .collect();
    let mcp = json!({ "mcpServers": servers });
    let settings = data.join("settings");
    Launch {
        args,
        // Its feature flags are polled from its vendor's PostHog host whatever the settings
        // say, unless this variable (read there alone) swaps the poller for a no-op.
        env: vec![("E2E_TEST".into(), "true".into())],
        files: vec![
            (settings.join("providers.json"), providers.to_string()),
            (settings.join("global-settings.json"), global.to_string()),
            (settings.join("cline_mcp_settings.json"), mcp.to_string()),
        ],
    }
}

/// The `--json` reader.
#[derive(Debug, Default)]
pub(super) struct Json {
    /// The last text the model said.
    last_message: Option<String>,
    /// Whether the result line was read.
    ended: bool,
}

impl Json {
    /// One `agent_event`.
    fn agent_event(&mut self, event: &Value) -> Vec<EventKind> {
        let content = event.get("contentType").and_then(Value::as_str);
        match (event.get("type").and_then(Value::as_str), content) {
            (Some("content_end"), Some("text")) => {
                let text = event.get("text").and_then(Value::as_str).unwrap_or("");
                if text.trim().is_empty() {
                    return Vec::new();
                }
                let text = cut(text);
                self.last_message = Some(text.clone());
                vec![EventKind::Message { text }]
            }
            (Some("content_start"), Some("tool")) => vec![EventKind::ToolStart {
                id: text_of(event, "toolCallId").unwrap_or_default(),
                name: text_of(event, "toolName").unwrap_or_else(|| "tool".into()),
                input: event.get("input").cloned().unwrap_or(Value::Null),
            }],
            (Some("content_end"), Some("tool")) => {
                let output = event.get("output").unwrap_or(&Value::Null);
                let success = output.get("success").and_then(Value::as_bool) == Some(true);
                let text = text_of(output, "result")
                    .or_else(|| text_of(output, "error"))
                    .unwrap_or_default();
                vec![EventKind::ToolEnd {
                    id: text_of(event, "toolCallId").unwrap_or_default(),
                    output: cut(&text),
                    is_error: !success,
                }]
            }
            (Some("usage"), _) => vec![EventKind::Usage {
                input_tokens: count(event, "inputTokens"),
                output_tokens: count(event, "outputTokens"),
            }],
            (Some("error"), _) => {
                let error = event.get("error").unwrap_or(&Value::Null);
                let message = text_of(error, "message").unwrap_or_else(|| "unknown error".into());
                vec![EventKind::Error {
                    message: cut(&message),
                }]
            }
            _ => Vec::new(),
        }
    }
}

impl Parser for Json {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        match value.get("type").and_then(Value::as_str) {
            Some("hook_event")
                if value.get("hookEventName").and_then(Value::as_str) == Some("agent_start")
                    && value.get("parentAgentId").is_none_or(Value::is_null) =>
            {
                vec![EventKind::SessionStart { model: None }]
            }
            Some("agent_event") => self.agent_event(value.get("event").unwrap_or(&Value::Null)),
            Some("run_result") => {
                self.ended = true;
                let finished = value.get("finishReason").and_then(Value::as_str);
                let text = value.get("text").and_then(Value::as_str).map(cut);
                vec![EventKind::Result {
                    text: text
                        .or_else(|| self.last_message.clone())
                        .unwrap_or_default(),
                    is_error: finished != Some("completed"),
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

    /// Lines as Cline 3.0.65 printed them under simtape (an `apply_patch` call, then the
    /// answer), shortened.
    const SESSION: [&str; 9] = [
        r#"{"ts":"2026-11-27T13:59:18.532Z","type":"hook_event","hookEventName":"agent_start","agentId":"agent_1795787958343_5rujvo","taskId":"conv_1795787958449_el72lsg","parentAgentId":null}"#,
        r#"{"ts":"2026-11-27T13:59:18.546Z","type":"agent_event","event":{"type":"iteration_start","iteration":1}}"#,
        r#"{"ts":"2026-11-27T13:59:20.278Z","type":"agent_event","event":{"type":"content_start","contentType":"text","text":"I'll create the file.","accumulated":"I'll create the file."}}"#,
        r#"{"ts":"2026-11-27T13:59:20.378Z","type":"agent_event","event":{"type":"usage","inputTokens":4850,"outputTokens":30,"totalInputTokens":4850,"totalOutputTokens":30,"totalCost":0}}"#,
        r#"{"ts":"2026-11-27T13:59:20.430Z","type":"agent_event","event":{"type":"content_end","contentType":"text","text":"I'll create the file."}}"#,
        r#"{"ts":"2026-11-27T13:59:20.498Z","type":"agent_event","event":{"type":"content_start","contentType":"tool","toolName":"apply_patch","toolCallId":"call_1_0","input":{"input":"*** Begin Patch"}}}"#,
        r#"{"ts":"2026-11-27T13:59:20.543Z","type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"apply_patch","toolCallId":"call_1_0","output":{"query":"apply_patch","result":"Successfully applied patch","success":true},"durationMs":44}}"#,
        r#"{"ts":"2026-11-27T13:59:20.985Z","type":"agent_event","event":{"type":"content_end","contentType":"text","text":"Created hello.txt."}}"#,
        r#"{"ts":"2026-11-27T13:59:21.531Z","type":"run_result","finishReason":"completed","iterations":2,"durationMs":2577,"text":"Created hello.txt.","model":{"id":"gpt-4.1","provider":"openai-compatible"}}"#,
    ];

    #[test]
    fn a_session_reads_as_text_a_tool_call_usage_and_the_answer() {
        // Goal: the start, each whole text, the tool call with its result, the usage and the
        // answer; the ids, timestamps and durations are left out.
        let mut parser = Json::default();
        let mut events: Vec<EventKind> = SESSION.iter().flat_map(|l| parser.line(l)).collect();
        events.extend(parser.finish());
        assert_eq!(
            events,
            vec![
                EventKind::SessionStart { model: None },
                EventKind::Usage {
                    input_tokens: 4850,
                    output_tokens: 30
                },
                EventKind::Message {
                    text: "I'll create the file.".into()
                },
                EventKind::ToolStart {
                    id: "call_1_0".into(),
                    name: "apply_patch".into(),
                    input: json!({"input": "*** Begin Patch"}),
                },
                EventKind::ToolEnd {
                    id: "call_1_0".into(),
                    output: "Successfully applied patch".into(),
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
    fn an_error_and_an_unfinished_run() {
        let mut parser = Json::default();
        let error = r#"{"type":"agent_event","event":{"type":"error","error":{"name":"Error","message":"Internal Server Error"},"recoverable":false}}"#;
        assert_eq!(
            parser.line(error),
            vec![EventKind::Error {
                message: "Internal Server Error".into()
            }]
        );
        let failed = r#"{"type":"run_result","finishReason":"error","text":"Cannot connect"}"#;
        assert_eq!(
            parser.line(failed),
            vec![EventKind::Result {
                text: "Cannot connect".into(),
                is_error: true
            }]
        );
        assert_eq!(parser.finish(), Vec::new());
    }

    #[test]
    fn its_date_is_normalized() {
        let body = json!({"messages": [{"role": "system", "content":
            "<env>\n1. Platform: linux\n2. Date: 11/27/2026\n3. IDE: Terminal Shell"}]})
        .to_string();
        let normalized = super::super::rules(simtape_agent::AdapterKind::Cline).apply(&body);
        assert!(normalized.contains("2. Date: <date>\\n"), "{normalized}");
    }
}
