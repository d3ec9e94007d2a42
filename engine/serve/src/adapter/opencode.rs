//! OpenCode: `opencode run --format json TASK`.
//!
//! Its JSON lines have changed shape between releases, so each field is looked for in the
//! places releases have put it: a part's text in `part.text` or `text`; a tool in
//! `part.tool` / `tool` / `name` with its state (`input`, `output`, `status`) under
//! `part.state` or `state`; tokens under `part.tokens` or `tokens`. Like Codex it prints no
//! result line: the answer is its last text.

use serde_json::Value;
use simtape_agent::CommandAgentSpec;

use super::{count, cut, may_write, mcp_urls, EventKind, Launch, Parser, Places};

pub(super) fn launch(spec: &CommandAgentSpec, model: &str, places: &Places<'_>) -> Launch {
    // An OpenAI-compatible provider whose baseURL is the endpoint, and the session's model;
    // read-only denies edits and commands (in simtape's sandbox a read-only project is a
    // read-only mount, and everything is allowed). OpenCode reads the whole config from this
    // variable.
    let permission = if places.sandboxed || may_write(spec.permission) {
        serde_json::json!({"edit": "allow", "bash": "allow", "external_directory": "allow"})
    } else {
        serde_json::json!({"edit": "deny", "bash": "deny"})
    };
    // The scenario's MCP servers, each a remote server at its Streamable HTTP endpoint.
    let mcp: serde_json::Map<String, Value> = mcp_urls(places)
        .map(|(server, url)| {
            let remote = serde_json::json!({"type": "remote", "url": url, "enabled": true});
            (server, remote)
        })
        .collect();
    let config = serde_json::json!({
        "mcp": mcp,
        "provider": {PROVIDER: {
            "npm": "@ai-sdk/openai-compatible",
            "name": PROVIDER,
            "options": {"baseURL": format!("{}/v1", places.base_url), "apiKey": "simtape"},
            "models": {model: {"name": model}},
        }},
        "model": format!("{PROVIDER}/{model}"),
        "permission": permission,
        "autoupdate": false,
        "share": "disabled",
    });
    Launch {
        args: ["run", "--format", "json", &spec.task]
            .map(String::from)
            .to_vec(),
        env: [
            ("OPENCODE_CONFIG_CONTENT", config.to_string()),
            // No calls past the endpoints: the models catalog, updates, language servers
            // and sharing each dial their own hosts (the sandbox would refuse them).
            ("OPENCODE_DISABLE_MODELS_FETCH", "1".into()),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1".into()),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".into()),
            ("OPENCODE_DISABLE_SHARE", "1".into()),
            ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1".into()),
        ]
        .map(|(name, value)| (name.to_string(), value))
        .to_vec(),
        files: Vec::new(),
    }
}

/// The provider the adapter configures (its model is the registry's id, `simtape` by
/// default).
const PROVIDER: &str = "simtape";

/// The `run --format json` reader.
#[derive(Debug, Default)]
pub(super) struct RunJson {
    last_text: Option<String>,
    failed: bool,
}

/// The first of `pointers` that holds a value in `value`.
fn first<'a>(value: &'a Value, pointers: &[&str]) -> Option<&'a Value> {
    pointers.iter().find_map(|pointer| value.pointer(pointer))
}

impl Parser for RunJson {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let kind = first(&value, &["/type", "/part/type"]).and_then(Value::as_str);
        match kind {
            Some("text") => {
                let text = first(&value, &["/part/text", "/text", "/content"])
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if text.is_empty() {
                    return Vec::new();
                }
                self.last_text = Some(cut(text));
                vec![EventKind::Message { text: cut(text) }]
            }
            Some("tool_use" | "tool") => {
                let name = first(&value, &["/part/tool", "/tool", "/name"])
                    .and_then(Value::as_str)
                    .unwrap_or("tool")
                    .to_string();
                let id = first(&value, &["/part/callID", "/part/id", "/id", "/callID"])
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let state = first(&value, &["/part/state", "/state"]).unwrap_or(&Value::Null);
                let input = state.get("input").cloned().unwrap_or(Value::Null);
                let mut events = vec![EventKind::ToolStart {
                    id: id.clone(),
                    name,
                    input,
                }];
                let status = state.get("status").and_then(Value::as_str);
                if matches!(status, Some("completed" | "error")) {
                    let output = state
                        .get("output")
                        .or_else(|| state.get("error"))
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
                        .unwrap_or_default();
                    events.push(EventKind::ToolEnd {
                        id,
                        output: cut(&output),
                        is_error: status == Some("error"),
                    });
                }
                events
            }
            Some("step_finish" | "step-finish") => {
                match first(&value, &["/part/tokens", "/tokens"]) {
                    Some(tokens) => vec![EventKind::Usage {
                        input_tokens: count(tokens, "input"),
                        output_tokens: count(tokens, "output"),
                    }],
                    None => Vec::new(),
                }
            }
            Some("error") => {
                self.failed = true;
                let message = first(
                    &value,
                    &["/error/data/message", "/error/message", "/message"],
                )
                .map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
                .unwrap_or_else(|| "unknown error".into());
                vec![EventKind::Error {
                    message: cut(&message),
                }]
            }
            _ => Vec::new(),
        }
    }

    fn finish(&mut self) -> Vec<EventKind> {
        let text = self.last_text.take();
        vec![EventKind::Result {
            is_error: self.failed || text.is_none(),
            text: text.unwrap_or_default(),
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_of_a_tool_part_read_the_same() {
        let nested = r#"{"type":"tool_use","part":{"tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"ls"},"output":"a"}}}"#;
        let flat = r#"{"type":"tool","tool":"bash","id":"c1","state":{"status":"completed","input":{"command":"ls"},"output":"a"}}"#;
        let (mut a, mut b) = (RunJson::default(), RunJson::default());
        assert_eq!(a.line(nested), b.line(flat));
        assert_eq!(a.line(nested).len(), 2);
    }

    #[test]
    fn the_last_text_is_the_answer_and_tokens_are_usage() {
        let mut parser = RunJson::default();
        let mut events = parser.line(r#"{"type":"text","part":{"text":"All done."}}"#);
        events.extend(
            parser.line(r#"{"type":"step_finish","part":{"tokens":{"input":9,"output":4}}}"#),
        );
        events.extend(parser.finish());
        assert_eq!(
            events,
            vec![
                EventKind::Message {
                    text: "All done.".into()
                },
                EventKind::Usage {
                    input_tokens: 9,
                    output_tokens: 4
                },
                EventKind::Result {
                    text: "All done.".into(),
                    is_error: false
                },
            ]
        );
    }
}
