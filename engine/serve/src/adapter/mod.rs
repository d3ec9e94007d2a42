//! Adapters: how to start each agent CLI and how to read what it prints.
//!
//! Every CLI prints its session in its own shape (Claude Code's stream-json, Codex's `exec
//! --json`, OpenCode's `run --format json`, Gemini CLI's stream-json, Copilot CLI's and Cline's
//! JSON lines); an adapter reads one native line at a time into
//! zero or more [`EventKind`]s, the one vocabulary of seven kinds the tape, the session log
//! and the transcript share. The simulation stamps each with the virtual instant it was
//! delivered at (see `command`). Parsing never fails: a line an adapter does not know is
//! skipped, or kept as an [`EventKind::Error`] when it looks like one.

mod aider;
mod claude_code;
mod cline;
mod codex;
mod copilot;
mod gemini_cli;
mod generic;
mod mini_swe_agent;
pub mod models;
mod opencode;
mod qwen_code;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use simtape_agent::{AdapterKind, CommandAgentSpec, Permission};

use crate::normalize::BodyNormalizer;

use crate::limits::EVENT_TEXT_CHARS_MAX;

/// One thing that happened in an agent's session, in the adapters' shared vocabulary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The session began (the model it names, when it names one).
    SessionStart {
        /// The model the agent says it uses.
        model: Option<String>,
    },
    /// Text the agent's model said.
    Message {
        /// The text.
        text: String,
    },
    /// A tool call began.
    ToolStart {
        /// The call's id.
        id: String,
        /// The tool's name as the agent calls it (`Edit`, `command_execution`).
        name: String,
        /// Its arguments.
        input: Value,
    },
    /// A tool call ended.
    ToolEnd {
        /// The call's id.
        id: String,
        /// Its output, cut to [`EVENT_TEXT_CHARS_MAX`] characters.
        output: String,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// Tokens used (a turn's, or the session's when the CLI reports only a total).
    Usage {
        /// Input tokens.
        input_tokens: u64,
        /// Output tokens.
        output_tokens: u64,
    },
    /// The agent reported an error (a failed model call it may retry, a failed turn).
    Error {
        /// What it said.
        message: String,
    },
    /// The session's result: the final answer.
    Result {
        /// The answer's text.
        text: String,
        /// Whether the agent ended in error.
        is_error: bool,
    },
}

/// An event with the virtual instant it was delivered to the simulation at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEvent {
    /// Virtual milliseconds since the start of the run.
    pub timestamp_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Reads one CLI's native output, line by line.
pub trait Parser: std::fmt::Debug {
    /// Reads one line of the agent's stdout.
    fn line(&mut self, line: &str) -> Vec<EventKind>;
    /// Called once at the end of the output: what the CLI implies without saying (a final
    /// answer taken from its last message, say).
    fn finish(&mut self) -> Vec<EventKind> {
        Vec::new()
    }
}

/// Returns a parser for `adapter`'s output.
pub fn parser(adapter: AdapterKind) -> Box<dyn Parser> {
    match adapter {
        AdapterKind::ClaudeCode => Box::<claude_code::StreamJson>::default(),
        AdapterKind::Codex => Box::<codex::ExecJson>::default(),
        AdapterKind::Opencode => Box::<opencode::RunJson>::default(),
        AdapterKind::GeminiCli => Box::<gemini_cli::StreamJson>::default(),
        // Qwen Code prints Claude Code's stream-json.
        AdapterKind::QwenCode => Box::<claude_code::StreamJson>::default(),
        AdapterKind::MiniSweAgent => Box::<mini_swe_agent::Trajectory>::default(),
        AdapterKind::Aider => Box::<aider::Lines>::default(),
        AdapterKind::Copilot => Box::<copilot::Events>::default(),
        AdapterKind::Cline => Box::<cline::Json>::default(),
        AdapterKind::Generic => Box::<generic::Lines>::default(),
    }
}

/// What starting one agent takes besides the endpoints: its program's arguments and
/// environment, and the config files it is pointed at.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Launch {
    /// The arguments, the adapter's then the scenario's.
    pub args: Vec<String>,
    /// Environment the adapter sets (before the scenario's `env`).
    pub env: Vec<(String, String)>,
    /// Files written before the program starts (in its scratch HOME), with their text:
    /// settings a CLI reads from a file only.
    pub files: Vec<(std::path::PathBuf, String)>,
}

/// The places a session needs, for the adapter's arguments.
#[derive(Debug, Clone)]
pub struct Places<'a> {
    /// The base URL of the serve endpoints (`http://127.0.0.1:PORT`).
    pub base_url: &'a str,
    /// The agent's home directory (a scratch one: CLIs keep state there).
    pub home: &'a std::path::Path,
    /// The scenario's MCP servers, by name, and the config file naming their endpoints.
    pub mcp: Option<(&'a [String], &'a std::path::Path)>,
    /// Whether the agent runs in simtape's sandbox: a CLI's own full-access mode is then
    /// safe to use (Claude Code's bypassPermissions, Codex without its own sandbox).
    pub sandboxed: bool,
}

/// Returns each of the scenario's MCP servers with the URL of its Streamable HTTP endpoint.
pub(crate) fn mcp_urls<'a>(places: &'a Places<'_>) -> impl Iterator<Item = (String, String)> + 'a {
    let servers = places.mcp.map(|(servers, _)| servers).unwrap_or_default();
    servers.iter().map(|server| {
        let prefix = crate::mcp_path::MCP_PATH_PREFIX;
        (
            server.clone(),
            format!("{}{prefix}{server}", places.base_url),
        )
    })
}

/// UUIDs anywhere: every CLI and SDK puts request and session ids in its requests.
const UUID_PATTERN: (&str, &str) = (
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "<uuid>",
);

/// Returns the normalization rules for `adapter`'s requests (docs/serve.md, "Volatile
/// fields"): what its CLI varies per process, then UUIDs anywhere.
pub fn rules(adapter: AdapterKind) -> BodyNormalizer {
    match adapter {
        AdapterKind::ClaudeCode => {
            BodyNormalizer::built_in(claude_code::POINTERS, &claude_code::PATTERNS)
                .then(BodyNormalizer::built_in(&[], &[UUID_PATTERN]))
        }
        AdapterKind::Codex => BodyNormalizer::built_in(codex::POINTERS, &[UUID_PATTERN])
            .then(BodyNormalizer::built_in(&[], &codex::PATTERNS)),
        AdapterKind::GeminiCli => BodyNormalizer::built_in(&[], &gemini_cli::PATTERNS)
            .then(BodyNormalizer::built_in(&[], &[UUID_PATTERN])),
        AdapterKind::Aider => BodyNormalizer::built_in(&[], &aider::PATTERNS)
            .then(BodyNormalizer::built_in(&[], &[UUID_PATTERN])),
        AdapterKind::MiniSweAgent => BodyNormalizer::built_in(&[], &mini_swe_agent::PATTERNS)
            .then(BodyNormalizer::built_in(&[], &[UUID_PATTERN])),
        AdapterKind::Copilot => BodyNormalizer::built_in(&[], &copilot::PATTERNS)
            .then(BodyNormalizer::built_in(&[], &[UUID_PATTERN])),
        AdapterKind::Cline => BodyNormalizer::built_in(&[], &cline::PATTERNS)
            .then(BodyNormalizer::built_in(&[], &[UUID_PATTERN])),
        AdapterKind::Opencode | AdapterKind::QwenCode | AdapterKind::Generic => {
            BodyNormalizer::built_in(&[], &[UUID_PATTERN])
        }
    }
}

/// Every adapter's rules together, for an agent whose CLI is not known.
pub(crate) fn all_rules() -> BodyNormalizer {
    BodyNormalizer::built_in(claude_code::POINTERS, &claude_code::PATTERNS)
        .then(BodyNormalizer::built_in(codex::POINTERS, &[UUID_PATTERN]))
        .then(BodyNormalizer::built_in(&[], &codex::PATTERNS))
        .then(BodyNormalizer::built_in(&[], &gemini_cli::PATTERNS))
        .then(BodyNormalizer::built_in(&[], &mini_swe_agent::PATTERNS))
        .then(BodyNormalizer::built_in(&[], &aider::PATTERNS))
        .then(BodyNormalizer::built_in(&[], &copilot::PATTERNS))
        .then(BodyNormalizer::built_in(&[], &cline::PATTERNS))
}

/// Returns how to start `spec`'s agent with `model`, its model id from the registry
/// ([`models::resolve`]; `None`: the CLI's own default).
pub fn launch(spec: &CommandAgentSpec, model: Option<&str>, places: &Places<'_>) -> Launch {
    // Every adapter but Claude Code's and a generic program's has a default id.
    let id = || {
        model
            .or(models::default_id(spec.adapter))
            .unwrap_or("simtape")
    };
    let mut launch = match spec.adapter {
        AdapterKind::ClaudeCode => claude_code::launch(spec, model, places),
        AdapterKind::Codex => codex::launch(spec, id(), places),
        AdapterKind::Opencode => opencode::launch(spec, id(), places),
        AdapterKind::GeminiCli => gemini_cli::launch(spec, id(), places),
        AdapterKind::QwenCode => qwen_code::launch(spec, id(), places),
        AdapterKind::MiniSweAgent => mini_swe_agent::launch(spec, id(), places),
        AdapterKind::Aider => aider::launch(spec, id(), places),
        AdapterKind::Copilot => copilot::launch(spec, id(), places),
        AdapterKind::Cline => cline::launch(spec, id(), places),
        AdapterKind::Generic => generic::launch(model),
    };
    launch.args.extend(spec.args.iter().cloned());
    let home = places.home.display().to_string();
    launch.env.push(("HOME".into(), home));
    launch.env.push(("SIMTAPE_TASK".into(), spec.task.clone()));
    launch
}

/// The binary an adapter runs when the scenario names none, and the command that installs
/// it (from npm, or from PyPI for the CLIs written in Python).
pub fn usual_binary(adapter: AdapterKind) -> Option<(&'static str, &'static str)> {
    match adapter {
        AdapterKind::ClaudeCode => Some(("claude", "npm install -g @anthropic-ai/claude-code")),
        AdapterKind::Codex => Some(("codex", "npm install -g @openai/codex")),
        AdapterKind::Opencode => Some(("opencode", "npm install -g opencode-ai")),
        AdapterKind::GeminiCli => Some(("gemini", "npm install -g @google/gemini-cli")),
        AdapterKind::QwenCode => Some(("qwen", "npm install -g @qwen-code/qwen-code")),
        AdapterKind::MiniSweAgent => Some(("mini", "pip install mini-swe-agent")),
        AdapterKind::Aider => Some(("aider", "pip install aider-chat")),
        AdapterKind::Copilot => Some(("copilot", "npm install -g @github/copilot")),
        AdapterKind::Cline => Some(("cline", "npm install -g cline")),
        AdapterKind::Generic => None,
    }
}

/// Whether `adapter`'s output is delivered only at the agent's exit. OpenCode prints a tool
/// call's events on either side of its next model request as its own scheduling falls
/// (measured: two runs of one seed in the sandbox put the same events in different
/// deliveries); delivered at its exit, they are the same every run. The others print a
/// turn's output before they ask for the next one.
pub fn events_at_exit(adapter: AdapterKind) -> bool {
    adapter == AdapterKind::Opencode
}

/// Whether `adapter`'s CLI keeps its own state in its scratch places (HOME, `/tmp`): its
/// sessions, caches, locks and file-watch probes, written by background tasks as their
/// timing falls (measured: Claude Code's watcher probe under `/tmp` and Codex's SQLite journal
/// in its HOME come and go run to run). Those writes are listed in the evidence, not on the
/// tape; a generic program's are on the tape.
pub fn keeps_state(adapter: AdapterKind) -> bool {
    adapter != AdapterKind::Generic
}

/// Whether `adapter`'s CLI is waited for until it is idle (no thread of it running) before a
/// batch of its requests closes, besides the settle window. OpenCode sends its title and
/// its first turn at start, the second after work of its own: on a loaded machine (a CI
/// host running tests in parallel) that work outlasted its one-second window and the two
/// landed in different batches (measured). The others' batches are decided by the window
/// alone, as their golden tapes were recorded.
pub fn settle_until_idle(adapter: AdapterKind) -> bool {
    adapter == AdapterKind::Opencode
}

/// The shortest settle window `adapter`'s CLI is driven with. OpenCode opens its MCP
/// sessions and asks for its session title at once, at start, and its requests arrive tens
/// to hundreds of milliseconds apart on a loaded machine (measured in the sandbox at load 5
/// on 2 cores: two runs of one seed batched them differently at the default 20 ms, and
/// once in about ten at 200 ms); a second's window batches them the same every run.
pub fn settle_min(adapter: AdapterKind) -> std::time::Duration {
    match adapter {
        AdapterKind::Opencode => std::time::Duration::from_millis(1000),
        _ => std::time::Duration::ZERO,
    }
}

/// Whether the agent may change its working directory.
pub(crate) fn may_write(permission: Permission) -> bool {
    permission == Permission::Full
}

/// Cuts `text` to [`EVENT_TEXT_CHARS_MAX`] characters, marking the cut with `…`.
pub(crate) fn cut(text: &str) -> String {
    match text.char_indices().nth(EVENT_TEXT_CHARS_MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The text of a tool result's `content`: a string, or the text parts of a list.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The end of a CLI's output that ends with a result line: nothing when `ended` (the line was
/// read), else the session did not finish and its `last` text is an erroneous result.
pub(crate) fn unfinished(ended: bool, last: &mut Option<String>) -> Vec<EventKind> {
    if ended {
        return Vec::new();
    }
    vec![EventKind::Result {
        text: last.take().unwrap_or_default(),
        is_error: true,
    }]
}

/// Returns `value[key]` as text: a string as it is, anything else as its JSON; `None` when
/// absent or null.
pub(crate) fn text_of(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .filter(|v| !v.is_null())
        .map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
}

/// Reads `value[key]` as an unsigned integer, 0 when absent.
pub(crate) fn count(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of every CLI's shape, the seeds of the mutations below.
    const SAMPLES: [&str; 7] = [
        r#"{"type":"tool_result","tool_id":"c","status":"error","error":{"message":{"m":1}},"stats":{"input_tokens":"x"}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Read","input":{"file_path":"/a"}},{"type":"text","text":"hi"}]}}"#,
        r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}],"is_error":true}]}}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"done","usage":{"input_tokens":1,"output_tokens":2}}"#,
        r#"{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"ls","aggregated_output":"a","exit_code":1,"status":"failed"}}"#,
        r#"{"type":"tool_use","part":{"tool":"bash","callID":"c","state":{"status":"error","input":{},"error":{"m":1}}}}"#,
        r#"{"type":"step_finish","part":{"tokens":{"input":"many","output":-1}}}"#,
    ];

    #[test]
    fn no_line_makes_an_adapter_panic() {
        // Every prefix of every sample, and each with one byte replaced by characters that
        // change JSON's shape, through every adapter: parsing never fails or panics.
        let kinds = AdapterKind::ALL.map(|(_, kind)| kind);
        let swaps = [b'"', b'{', b']', b'0', b'\\', b'n'];
        let mut lines = 0;
        for kind in kinds {
            let mut parser = parser(kind);
            for sample in SAMPLES {
                let bytes = sample.as_bytes();
                for cut in 0..=bytes.len() {
                    parser.line(&String::from_utf8_lossy(&bytes[..cut]));
                    lines += 1;
                }
                for (at, swap) in (0..bytes.len()).zip(swaps.iter().cycle()) {
                    let mut mutated = bytes.to_vec();
                    mutated[at] = *swap;
                    parser.line(&String::from_utf8_lossy(&mutated));
                    lines += 1;
                }
            }
            let ended = parser.finish();
            assert!(ended.len() <= 1, "{kind:?} ends with at most a result");
        }
        assert!(lines > 4000);
    }

    #[test]
    fn each_adapter_names_its_own_volatile_fields() {
        // A body with Claude Code's and Codex's per-process fields: each adapter's rules
        // normalize its own (and UUIDs), not the other CLI's; the rules for an unknown agent
        // normalize everything.
        let body = serde_json::json!({
            "metadata": {"user_id": "{\"session_id\":\"s\"}"},
            "client_metadata": {"turn_started_at_unix_ms": 1795589041003u64},
            "system": "Today's date is 2026-11-25.\nOS Version: Linux 6.1\nChunk ID: 9f3a",
            "id": "0f8fad5b-d9cb-469f-a165-70867728950e",
        })
        .to_string();
        let claude = rules(AdapterKind::ClaudeCode).apply(&body);
        assert!(
            claude.contains("Today's date is <date>.\\nOS Version: <os>"),
            "{claude}"
        );
        assert!(
            claude.contains("Chunk ID: 9f3a") && claude.contains("1795589041003"),
            "{claude}"
        );
        assert!(
            claude.contains("<uuid>") && !claude.contains("session_id"),
            "{claude}"
        );
        let codex = rules(AdapterKind::Codex).apply(&body);
        assert!(
            codex.contains("Chunk ID: <chunk>") && !codex.contains("1795589041003"),
            "{codex}"
        );
        assert!(codex.contains("Today's date is 2026-11-25"), "{codex}");
        let generic = rules(AdapterKind::Generic).apply(&body);
        assert!(
            generic.contains("<uuid>") && generic.contains("Chunk ID: 9f3a"),
            "{generic}"
        );
        let all = BodyNormalizer::agent_defaults().apply(&body);
        for normalized in ["<date>", "<os>", "<chunk>", "<uuid>"] {
            assert!(all.contains(normalized), "{normalized} in {all}");
        }
        assert!(
            !all.contains("1795589041003") && !all.contains("session_id"),
            "{all}"
        );
    }

    #[test]
    fn long_texts_are_cut_at_the_limit() {
        let long = "é".repeat(EVENT_TEXT_CHARS_MAX + 5);
        let cut_text = cut(&long);
        assert_eq!(cut_text.chars().count(), EVENT_TEXT_CHARS_MAX + 1);
        assert!(cut_text.ends_with('…'));
        assert_eq!(cut("short"), "short");
    }
}
