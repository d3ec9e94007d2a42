//! The eval parts of a scenario, as checked data: the agent (`[agent]`), the MCP servers
//! (`[[mcp]]`), their fault rules (`[[faults.mcp]]`) and the verifiers (`[[verify]]`).
//!
//! `tables` decodes them with the core's decoder (through its extension hook), so
//! `simtape check` places every problem at its file, line and field like the rest of the
//! format; the rest of this crate runs them.

use std::path::PathBuf;

use serde::Serialize;

use regex::Regex;
use simtape::scenario::Trigger;
use simtape_mcp::world::faults::{FaultKind, ToolFault};

/// `[agent]`: the harness under test in scenario mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentSpec {
    /// The model name the requests carry (fixtures may match on it).
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The task prompt: the first user message.
    pub task: String,
    /// Model calls at most (retries of a failed call do not count).
    pub max_turns: u32,
    /// Tool calls of one turn run at most this many at a time (1 runs them in order).
    pub tool_concurrency: u32,
    /// Retries of failed model or tool-server calls, over the whole run.
    pub retry_budget: u32,
    /// The first back-off; each consecutive retry doubles it, up to `backoff_max_ms`. A
    /// `retry_after_ms` hint longer than the back-off wins.
    pub backoff_base_ms: u64,
    /// The longest back-off.
    pub backoff_max_ms: u64,
    /// The tools the model is offered, in order.
    pub tools: Vec<ToolSource>,
}

/// `[agent] kind = "command"`: an agent program outside the simulation (Claude Code, Codex,
/// OpenCode or any other) that reaches the scenario's model and MCP servers through
/// `simtape serve`'s endpoints. It works on the `[fs]` root through an overlay in its
/// sandbox (or a scratch copy without one); what it changes there becomes the run's fs diff,
/// so the verifiers judge it like the built-in agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandAgentSpec {
    /// Which CLI it is: how to pass the task and permissions, and how to read its output.
    pub adapter: AdapterKind,
    /// The program (a path or a name on `PATH`); the adapter's usual binary when not given.
    pub command: Option<String>,
    /// Extra arguments, after the adapter's (for `generic`, the whole argument list).
    pub args: Vec<String>,
    /// Extra environment, by name (applied after the endpoint variables).
    pub env: Vec<(String, String)>,
    /// The task prompt the adapter hands the agent.
    pub task: String,
    /// Wall-clock milliseconds the agent may run before it is stopped and the run is an ERROR.
    pub timeout_ms: u64,
    /// The settle window in wall-clock milliseconds (how long the driver waits for more of
    /// the agent's requests before it orders a batch), when wider than the adapter's own;
    /// `None`: the default (`[agent] settle`, or `--settle-ms` on run and sweep).
    pub settle_ms: Option<u64>,
    /// What the agent may do in its working directory.
    pub permission: Permission,
    /// Which time the agent's own clock reads.
    pub clock: AgentClock,
    /// Whether it runs in simtape's namespace sandbox (docs/sandbox.md).
    pub sandbox: AgentSandbox,
    /// Host paths shown to it read-only inside the sandbox, as written (relative to the
    /// scenario file's directory, or absolute).
    pub expose: Vec<String>,
    /// The 1-based line of `[agent]` in the scenario file (names the agent's exit check).
    pub line: u64,
    /// The other agents a sweep across agents may run in its place (`[[agent.variant]]`),
    /// in file order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<AgentVariant>,
    /// The model, by a name the model registry maps to each adapter's model id (`[agent]
    /// model`); `None`: each adapter's own default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The scenario's layer of the model registry (`[agent.models."NAME"]`): each model
    /// name's id for some adapters, consulted before the project's and the built-in layers.
    #[serde(skip_serializing_if = "ModelIds::is_empty")]
    pub models: ModelIds,
}

/// One layer of the model registry: for each model name, the model id each adapter it
/// lists passes its CLI. Ordered maps, so a layer reads and prints the same every time.
pub type ModelIds =
    std::collections::BTreeMap<String, std::collections::BTreeMap<AdapterKind, String>>;

/// `[[agent.variant]]`: another agent for the same scenario, named, that `sweep --agents`
/// and `run --agent` run in place of `[agent]`'s: what it gives replaces `[agent]`'s (its
/// `env` is added to it, a name it gives twice taking its value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentVariant {
    /// Its name (lower-case letters, digits, `-`).
    pub name: String,
    /// Its adapter, when not `[agent]`'s.
    pub adapter: Option<AdapterKind>,
    /// Its program, when not `[agent]`'s (a variant with another adapter and no program
    /// runs that adapter's usual binary).
    pub command: Option<String>,
    /// Its arguments, when not `[agent]`'s.
    pub args: Option<Vec<String>>,
    /// Environment added to `[agent]`'s.
    pub env: Vec<(String, String)>,
    /// Its model name, when not `[agent]`'s.
    pub model: Option<String>,
}

/// An agent name `--agents` or `--agent` gave that the scenario does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent {name:?}: expected one of {known}")]
pub struct UnknownAgent {
    /// The name given.
    pub name: String,
    /// The names the scenario knows: its variants, then every adapter.
    pub known: String,
}

impl CommandAgentSpec {
    /// Returns the spec of the agent `name`: a `[[agent.variant]]` of that name, else the
    /// adapter of that name (its usual binary, `[agent]`'s arguments only when it is
    /// `[agent]`'s adapter).
    pub fn agent(&self, name: &str) -> Result<CommandAgentSpec, UnknownAgent> {
        if let Some(variant) = self.variants.iter().find(|v| v.name == name) {
            let mut spec = self.clone();
            if let Some(adapter) = variant.adapter.filter(|adapter| *adapter != self.adapter) {
                spec.adapter = adapter;
                spec.command = None;
                spec.args = Vec::new();
            }
            if let Some(command) = &variant.command {
                spec.command = Some(command.clone());
            }
            if let Some(args) = &variant.args {
                spec.args = args.clone();
            }
            if let Some(model) = &variant.model {
                spec.model = Some(model.clone());
            }
            for (key, value) in &variant.env {
                spec.env.retain(|(name, _)| name != key);
                spec.env.push((key.clone(), value.clone()));
            }
            spec.env.sort();
            return Ok(spec);
        }
        let adapter = AdapterKind::ALL.iter().find(|(known, _)| *known == name);
        match adapter {
            Some(&(_, adapter)) if adapter == self.adapter => Ok(self.clone()),
            Some(&(_, adapter)) => Ok(CommandAgentSpec {
                adapter,
                command: None,
                args: Vec::new(),
                ..self.clone()
            }),
            None => {
                let variants = self.variants.iter().map(|v| v.name.as_str());
                let adapters = AdapterKind::ALL.iter().map(|(name, _)| *name);
                let known: Vec<&str> = variants.chain(adapters).collect();
                Err(UnknownAgent {
                    name: name.to_string(),
                    known: known.join(", "),
                })
            }
        }
    }
}

/// Whether an agent program runs in simtape's namespace sandbox (`[agent] sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentSandbox {
    /// In the sandbox: its own view of the files, loopback only, nothing outlives it (the
    /// default).
    On,
    /// On the host, unconfined: the verdict line and the tape say so.
    Off,
}

/// `[normalize]`: how the scenario's agent program's requests are normalized before fixtures
/// match them and the tape records them, beside the built-in rules (session ids, dates, the
/// working directory).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NormalizeSpec {
    /// JSON pointers into a request body whose value becomes `<volatile>`.
    pub pointers: Vec<String>,
    /// Patterns replaced in the request text, in order (`$1` names a group).
    pub patterns: Vec<(Pattern, String)>,
}

/// The agent CLIs simtape knows how to start and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdapterKind {
    /// Claude Code (`claude -p … --output-format stream-json`).
    ClaudeCode,
    /// Codex CLI (`codex exec --json …`).
    Codex,
    /// OpenCode (`opencode run --format json …`).
    Opencode,
    /// Gemini CLI (`gemini -p … --output-format stream-json`).
    GeminiCli,
    /// Qwen Code (`qwen --output-format stream-json … TASK`).
    QwenCode,
    /// mini-swe-agent (`mini -t … -o /dev/stdout`, its trajectory read).
    MiniSweAgent,
    /// Aider (`aider --message … --yes-always`, its plain text read).
    Aider,
    /// GitHub Copilot CLI (`copilot -p … --output-format json`, on a local provider).
    Copilot,
    /// Cline (`cline --json -P openai … TASK`).
    Cline,
    /// Any program: the task goes in `SIMTAPE_TASK`, its stdout lines are its messages.
    Generic,
}

impl AdapterKind {
    /// Every adapter with its name in scenario files.
    pub const ALL: [(&'static str, AdapterKind); 10] = [
        ("claude-code", AdapterKind::ClaudeCode),
        ("codex", AdapterKind::Codex),
        ("opencode", AdapterKind::Opencode),
        ("gemini-cli", AdapterKind::GeminiCli),
        ("qwen-code", AdapterKind::QwenCode),
        ("mini-swe-agent", AdapterKind::MiniSweAgent),
        ("aider", AdapterKind::Aider),
        ("copilot", AdapterKind::Copilot),
        ("cline", AdapterKind::Cline),
        ("generic", AdapterKind::Generic),
    ];

    /// Returns the adapter's name in scenario files.
    pub fn name(self) -> &'static str {
        let found = AdapterKind::ALL.iter().find(|(_, kind)| *kind == self);
        found.map_or("generic", |(name, _)| name)
    }
}

/// Which time an agent program's own clock reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentClock {
    /// The host's wall clock.
    Host,
    /// The run's virtual time (its start instant, then as the simulation moves it), through
    /// libfaketime; only a dynamically linked program can be given it.
    Virtual,
}

/// What an external agent may do in its scratch directory, mapped to each CLI's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Permission {
    /// Read, write and run commands without asking.
    Full,
    /// Read only: no edits, no commands.
    ReadOnly,
}

/// A group of tools the agent offers the model.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolSource {
    /// The built-in filesystem tools over the overlay (`"fs"`; needs `[fs]`).
    Fs,
    /// The `run` tool: a program through the process capability (`"process"`; needs
    /// `[process]`).
    Process,
    /// Every tool of the `[[mcp]]` server of this name.
    Mcp(String),
}

/// `[[mcp]]`: one MCP server the agent can call, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpServerSpec {
    /// The server's name (a-z, 0-9 and -); the model sees its tools as `<name>__<tool>`.
    pub name: String,
    /// What backs it.
    pub source: McpSource,
    /// The built-in agent's answers to the server's `elicitation/create` requests, in the
    /// order they come (`[[mcp]] elicitation`): each an MCP `ElicitResult`
    /// (`{"action": "accept", "content": {…}}`, or `decline` or `cancel` without content).
    /// Once they are used up the agent declines.
    pub elicitation: Vec<serde_json::Value>,
}

/// What backs an MCP server inside a simulation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum McpSource {
    /// A recorded cassette, replayed (`cassette = "…"`), resolved against the scenario's
    /// directory.
    Cassette(PathBuf),
    /// A world spec, a seeded stateful server (`world = "…"`), resolved likewise.
    World(PathBuf),
}

/// A tool call to an MCP server that fails: `[[faults.mcp]]`, decoded straight into the world
/// server's own fault kind, so a new kind is added in `simtape_mcp::world::faults` and its
/// decoder in `tables/faults.rs`, and nowhere else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpFault {
    /// The `[[mcp]]` server.
    pub server: String,
    /// The tool, or `*` for every tool (calls are counted per `tool`).
    pub tool: String,
    /// When it fires.
    pub trigger: Trigger,
    /// What happens.
    pub kind: FaultKind,
}

impl McpFault {
    /// Returns the world server's fault rule: the same trigger and kind.
    pub fn world_rule(&self) -> ToolFault {
        ToolFault {
            tool: self.tool.clone(),
            trigger: self.trigger,
            fault: self.kind.clone(),
        }
    }
}

/// `[[verify]]`: one verifier. A run passes only when at least one verifier ran and every
/// verifier held ("no tests, no pass").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifySpec {
    /// The verifier's name in verdicts: `name = "…"`, or `<kind> <target>` when not given.
    pub name: String,
    /// The 1-based line of the `[[verify]]` entry in the scenario file.
    pub line: u64,
    /// What it checks.
    pub check: Check,
}

/// `[[property]]`: a condition over the run and how it must hold (`simtape_eval::property`).
/// The condition is every part given: the check, at least `retries` retries, the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PropertySpec {
    /// The property's name, unique in the scenario.
    pub name: String,
    /// How it must hold.
    pub kind: simtape_eval::property::PropertyKind,
    /// The 1-based line of the `[[property]]` entry in the scenario file.
    pub line: u64,
    /// A verifier's check the run must meet.
    pub check: Option<Check>,
    /// The agent retried at least this many calls.
    pub retries: Option<u32>,
    /// The run's verdict by its verifiers.
    pub verdict: Option<simtape_eval::VerdictKind>,
}

/// What a verifier checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// `kind = "fs"`: a path in the overlay's diff and, optionally, its final content.
    Fs {
        /// The path, relative to the overlay root.
        path: String,
        /// Its expected change.
        state: FsState,
        /// Expectations on the final content (not for `deleted`/`absent`).
        content: TextMatch,
    },
    /// `kind = "answer"`: the agent's final answer.
    Answer(TextMatch),
    /// `kind = "tool_called"`: whether the agent called a tool.
    ToolCalled {
        /// The tool's name as the model sees it (`read_file`, `tickets__create_ticket`).
        tool: String,
        /// Arguments the call must include (a JSON object matched as a subset), if any.
        args: Option<serde_json::Value>,
        /// `true`: called at least once with matching arguments; `false`: never.
        called: bool,
    },
    /// `kind = "world_goal"`: an MCP world server's goal state holds and, unless
    /// `collateral = true`, nothing outside the allowed effects changed.
    WorldGoal {
        /// The `[[mcp]]` server (a world).
        server: String,
        /// Whether collateral damage is tolerated.
        allow_collateral: bool,
    },
    /// `kind = "gate"`: a command run through the process capability (replay or WASI) after
    /// the agent ends exits as expected.
    Gate {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// The expected exit code.
        exit_code: i32,
    },
    /// `kind = "outcome"`: a scripted task's `outcome` step recorded this value.
    Outcome {
        /// The outcome's name.
        name: String,
        /// The expected value.
        value: serde_json::Value,
    },
}

/// The expected change of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FsState {
    /// Added by the run.
    Added,
    /// Modified by the run.
    Modified,
    /// Deleted by the run.
    Deleted,
    /// Not changed by the run, and there (a path on neither side fails: see `Absent`).
    Unchanged,
    /// Exists at the end, changed or not.
    Exists,
    /// Does not exist at the end.
    Absent,
}

/// Expectations on a text: every one given must hold; none given always holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TextMatch {
    /// The whole text equals this.
    pub equals: Option<String>,
    /// The text contains this.
    pub contains: Option<String>,
    /// The text does not contain this.
    pub excludes: Option<String>,
    /// The text matches this regular expression.
    pub matches: Option<Pattern>,
}

impl TextMatch {
    /// Returns whether no expectation is given.
    pub fn is_empty(&self) -> bool {
        self.equals.is_none()
            && self.contains.is_none()
            && self.excludes.is_none()
            && self.matches.is_none()
    }
}

/// A regular expression of a text expectation (Rust `regex` syntax), compiled once, when the
/// scenario is loaded. Two patterns are equal when their sources are.
#[derive(Debug, Clone)]
pub struct Pattern {
    regex: Regex,
}

impl Pattern {
    /// Compiles `source`.
    pub fn new(source: &str) -> Result<Pattern, regex::Error> {
        Regex::new(source).map(|regex| Pattern { regex })
    }

    /// Returns the source, as written.
    pub fn as_str(&self) -> &str {
        self.regex.as_str()
    }

    /// Returns whether the pattern matches somewhere in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Pattern {}

impl Serialize for Pattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
