//! Aider: `aider --model openai/MODEL --openai-api-base URL --message TASK --yes-always …`.
//!
//! A Python CLI on litellm, pointed at the endpoint by `--openai-api-base` with an `openai/`
//! model; its git integration, update check, analytics, repository map and chat history
//! are off (`--no-git`: simtape compares the project's files itself), and
//! `LITELLM_LOCAL_MODEL_COST_MAP` stops litellm's download of its price list at import. It
//! has no MCP client and no tools: the model edits files by writing them whole in its answer
//! (`--edit-format whole`), and aider applies them. Read-only is its `ask` mode (no edits).
//!
//! Its output is plain text. The adapter reads each run of lines between aider's own notices
//! as one message (the model's reply), `Applied edit to PATH` as an `edit` tool call on that
//! path, an error line (a litellm exception's name, then its text) as an error, `Tokens: N
//! sent, M received` as usage; its banner lines are skipped. The answer is its last message.

use serde_json::json;
use simtape_agent::CommandAgentSpec;

use super::{cut, may_write, EventKind, Launch, Parser, Places};

/// Aider's per-run text in its system prompt: the date, and the platform (kernel release).
pub(super) const PATTERNS: [(&str, &str); 2] = [
    (
        r"- Current date: \d{4}-\d{2}-\d{2}",
        "- Current date: <date>",
    ),
    (r"- Platform: [^\\\n]*", "- Platform: <os>"),
];

/// How the lines aider prints about itself begin (its banner and notices): not the model's.
const BANNER: [&str; 13] = [
    "Detected dumb terminal",
    "Aider v",
    "Model:",
    "Main model:",
    "Weak model:",
    "Editor model:",
    "Git repo:",
    "Repo-map:",
    "Added ",
    "Cost:",
    "Warning",
    "https://aider.chat",
    "Creating empty file",
];

pub(super) fn launch(spec: &CommandAgentSpec, model: &str, places: &Places<'_>) -> Launch {
    // In simtape's sandbox a read-only project is a read-only mount; on the host, read-only
    // is its ask mode, which edits nothing.
    let mode = if places.sandboxed || may_write(spec.permission) {
        "whole"
    } else {
        "ask"
    };
    let base = format!("{}/v1", places.base_url);
    let home = |file: &str| places.home.join(file).display().to_string();
    Launch {
        args: [
            "--model",
            model,
            "--openai-api-base",
            &base,
            "--edit-format",
            mode,
            "--yes-always",
            "--no-git",
            "--no-auto-commits",
            "--no-check-update",
            "--no-analytics",
            "--no-show-model-warnings",
            "--no-pretty",
            "--no-stream",
            "--no-fancy-input",
            "--map-tokens",
            "0",
            "--no-restore-chat-history",
            // Its histories go to HOME, not into the project (they carry the time).
            "--chat-history-file",
            &home(CHAT_HISTORY_FILE),
            "--input-history-file",
            &home(INPUT_HISTORY_FILE),
            "--message",
            &spec.task,
        ]
        .map(String::from)
        .to_vec(),
        env: [
            ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
            ("PYTHONUNBUFFERED", "1"),
        ]
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .to_vec(),
        // Its model list, fetched from GitHub unless a copy younger than a day is in its
        // HOME: one naming the model, so it asks nothing past the endpoint.
        files: vec![(places.home.join(MODELS_FILE), models(model))],
    }
}

/// The model list the adapter gives it: the model (an `openai/` id from the registry), its
/// limits, no price.
fn models(model: &str) -> String {
    let limits = json!({
        "litellm_provider": "openai",
        "mode": "chat",
        "max_input_tokens": 128000,
        "max_output_tokens": 8192,
        "input_cost_per_token": 0,
        "output_cost_per_token": 0,
    });
    json!({ model: limits }).to_string()
}

/// Where aider caches its model list, under HOME.
const MODELS_FILE: &str = ".aider/caches/model_prices_and_context_window.json";
/// Its chat and input histories, under HOME.
const CHAT_HISTORY_FILE: &str = ".aider/chat.history.md";
const INPUT_HISTORY_FILE: &str = ".aider/input.history";

/// The plain-text reader.
#[derive(Debug, Default)]
pub(super) struct Lines {
    /// The lines of the message being read.
    pending: Vec<String>,
    /// The last message: the answer.
    last_message: Option<String>,
    /// Edits applied so far (their ids count them).
    edits: usize,
}

impl Lines {
    /// Ends the message in progress.
    fn flush(&mut self) -> Vec<EventKind> {
        let text = std::mem::take(&mut self.pending).join("\n");
        let text = text.trim();
        if text.is_empty() {
            return Vec::new();
        }
        let text = cut(text);
        self.last_message = Some(text.clone());
        vec![EventKind::Message { text }]
    }
}

/// Reads a token count as aider prints it: `950`, `1.2k`, `3.4M`.
fn tokens(text: &str) -> u64 {
    let (number, scale) = match text.chars().last() {
        Some('k') => (&text[..text.len() - 1], 1_000),
        Some('M') => (&text[..text.len() - 1], 1_000_000),
        _ => (text, 1),
    };
    let (whole, tenths) = number.split_once('.').unwrap_or((number, "0"));
    let whole: u64 = whole.parse().unwrap_or(0);
    let tenths: u64 = tenths.get(..1).and_then(|t| t.parse().ok()).unwrap_or(0);
    whole * scale + tenths * scale / 10
}

impl Parser for Lines {
    fn line(&mut self, line: &str) -> Vec<EventKind> {
        let line = line.trim_end();
        if let Some(path) = line.strip_prefix("Applied edit to ") {
            // It names the file on a line of its own before it applies the edit.
            if self
                .pending
                .iter()
                .rev()
                .find(|l| !l.is_empty())
                .map(String::as_str)
                == Some(path)
            {
                self.pending.clear();
            }
            let mut events = self.flush();
            self.edits += 1;
            let id = format!("edit-{}", self.edits);
            events.push(EventKind::ToolStart {
                id: id.clone(),
                name: "edit".into(),
                input: json!({"path": path}),
            });
            events.push(EventKind::ToolEnd {
                id,
                output: cut(line),
                is_error: false,
            });
            return events;
        }
        if let Some(counts) = line.strip_prefix("Tokens: ") {
            // `Tokens: 2.1k sent, 35 received.` (a cost may follow).
            let mut events = self.flush();
            let mut words = counts.split_whitespace();
            let sent = words.next().map_or(0, tokens);
            let received = words.nth(1).map_or(0, tokens);
            events.push(EventKind::Usage {
                input_tokens: sent,
                output_tokens: received,
            });
            return events;
        }
        if line.starts_with("litellm.") || line.starts_with("Retrying in ") {
            let mut events = self.flush();
            events.push(EventKind::Error { message: cut(line) });
            return events;
        }
        if BANNER.iter().any(|banner| line.starts_with(banner)) {
            return self.flush();
        }
        self.pending.push(line.to_string());
        Vec::new()
    }

    /// Text after its last notice is the answer itself; a session that printed no reply
    /// ended without one.
    fn finish(&mut self) -> Vec<EventKind> {
        let pending = std::mem::take(&mut self.pending).join("\n");
        let text = match pending.trim() {
            "" => self.last_message.take(),
            text => Some(cut(text)),
        };
        vec![EventKind::Result {
            is_error: text.is_none(),
            text: text.unwrap_or_default(),
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_is_one_message_and_an_applied_edit_a_tool_call() {
        // Goal: the banner is skipped, the model's reply (blank lines and fences in it) is
        // one message, the token line usage, the applied edit an `edit` call (the file's
        // name it prints before it is no message); the answer is the reply.
        let output = [
            "Detected dumb terminal, disabling fancy input and pretty output.",
            "Aider v0.86.2",
            "Model: openai/simtape with whole edit format",
            "Git repo: none",
            "litellm.InternalServerError: OpenAIException - Overloaded",
            "Retrying in 0.2 seconds...",
            "Created hello.txt.",
            "",
            "hello.txt",
            "```",
            "hello from simtape",
            "```",
            "Tokens: 2.1k sent, 35 received.",
            "",
            "hello.txt",
            "Applied edit to hello.txt",
        ];
        let mut parser = Lines::default();
        let mut events: Vec<EventKind> = output.iter().flat_map(|l| parser.line(l)).collect();
        events.extend(parser.finish());
        let reply = "Created hello.txt.\n\nhello.txt\n```\nhello from simtape\n```";
        assert_eq!(
            events,
            vec![
                EventKind::Error {
                    message: "litellm.InternalServerError: OpenAIException - Overloaded".into()
                },
                EventKind::Error {
                    message: "Retrying in 0.2 seconds...".into()
                },
                EventKind::Message { text: reply.into() },
                EventKind::Usage {
                    input_tokens: 2100,
                    output_tokens: 35
                },
                EventKind::ToolStart {
                    id: "edit-1".into(),
                    name: "edit".into(),
                    input: json!({"path": "hello.txt"}),
                },
                EventKind::ToolEnd {
                    id: "edit-1".into(),
                    output: "Applied edit to hello.txt".into(),
                    is_error: false,
                },
                EventKind::Result {
                    text: reply.into(),
                    is_error: false
                },
            ]
        );
    }
}
