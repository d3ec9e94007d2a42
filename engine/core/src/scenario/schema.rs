//! The decoded scenario: what `decode` produces and `interpret` runs.
//!
//! These types hold checked values only (durations in nanoseconds, names that passed their
//! rules, TOML values turned into JSON), so the interpreter never meets a bad one.

use crate::cap::fs::{FsFaults, FsLatency};
use crate::cap::net::Network;
use crate::cap::process::ProcessMode;
use crate::limits::Limits;

/// Scenario, task and channel names: at most this many characters of `a-z`, `0-9` and `-`.
pub(crate) const NAME_LEN_MAX: usize = 64;
/// What a name is, for messages.
pub(crate) const NAME_WHAT: &str = "a name of a-z, 0-9 and -";

/// Returns what a scenario, task or channel name should be when `text` is not one
/// (`[a-z0-9-]+`, at most 64 characters), so `simtape new` refuses the names
/// `check` would.
pub fn name_problem(text: &str) -> Option<String> {
    let valid = text
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if text.is_empty() || !valid {
        return Some(NAME_WHAT.to_string());
    }
    if text.len() > NAME_LEN_MAX {
        return Some(format!("{NAME_WHAT} of at most {NAME_LEN_MAX} characters"));
    }
    None
}
/// Event and outcome names (labels): at most this many characters.
pub(crate) const LABEL_LEN_MAX: usize = 128;
/// The most times a task may repeat its steps. A loop of zero-latency steps pops no timer, so
/// `events_max` would not stop it; this bound does.
pub(crate) const REPEAT_MAX: i64 = 1_000_000;
/// Task names the engine already uses in tapes and deadlock reports.
pub(crate) const TASK_NAMES_RESERVED: [&str; 2] = ["main", "engine"];

/// The top-level tables the core reads; an extension adds its own (`extension::listed`).
pub(crate) const TABLES: [&str; 8] = [
    "scenario", "limits", "fs", "network", "llm", "process", "faults", "task",
];
/// The keys of `[scenario]`.
pub(crate) const SCENARIO_KEYS: [&str; 4] = ["name", "description", "start", "seeds"];
/// The keys of a `[[task]]`.
pub(crate) const TASK_KEYS: [&str; 4] = ["name", "repeat", "start_after", "steps"];
/// The keys that name a step's kind; a step has exactly one.
pub(crate) const STEP_KINDS: [&str; 15] = [
    "sleep",
    "sleep_random",
    "event",
    "send",
    "recv",
    "outcome",
    "write",
    "append",
    "read",
    "remove",
    "rename",
    "mkdir",
    "connect",
    "ask",
    "run",
];
/// The keys of `[fs]`.
pub(crate) const FS_KEYS: [&str; 6] = [
    "root",
    "allow_outside",
    "enospc",
    "eio",
    "partial_write",
    "latency",
];
/// The keys of `[fs] latency`.
pub(crate) const FS_LATENCY_KEYS: [&str; 3] = ["base", "per_kib", "jitter"];
/// The keys of `[process]`.
pub(crate) const PROCESS_KEYS: [&str; 4] = ["tape", "default", "programs", "wasi_dir"];
/// The other keys of a `run` step.
pub(crate) const RUN_KEYS: [&str; 4] = ["args", "cwd", "stdin", "log"];
/// The model name of the request an `ask` step sends (fixtures may match on it).
pub(crate) const ASK_MODEL: &str = "scenario";

/// A scenario whose every field has been checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spec {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) start_unix_ns: i64,
    pub(crate) seeds: Vec<u64>,
    pub(crate) limits: Limits,
    pub(crate) fs: Option<FsSpec>,
    pub(crate) network: Option<Network>,
    pub(crate) llm: Option<LlmSpec>,
    pub(crate) process: Option<ProcessSpec>,
    pub(crate) tasks: Vec<TaskSpec>,
    pub(crate) faults: crate::cap::fault_rules::FaultsSpec,
}

/// Where a path-valued field sits, so a problem with the file it names (found after
/// decoding, when the file is opened) points back at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathField {
    /// The path as written: relative to the scenario file's directory.
    pub path: String,
    /// Where the value sits in the source, as a byte range.
    pub span: std::ops::Range<usize>,
    /// The field path, like `mcp[0].world`.
    pub field: String,
}

/// `[fs]`: the overlay root, its fault plan and its latency model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FsSpec {
    pub(crate) root: PathField,
    /// `allow_outside = true`: the root may lie outside the scenario file's directory tree
    /// (the agent can read everything under it).
    pub(crate) allow_outside: bool,
    pub(crate) faults: FsFaults,
    pub(crate) latency: FsLatency,
}

/// `[llm]`: the replay fixture, and how to record it (`[llm.record]`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LlmSpec {
    pub(crate) fixture: PathField,
    pub(crate) record: Option<super::llm_record::LlmRecord>,
    pub(crate) handover: Option<HandoverSpec>,
}

/// `[llm.handover]`: another fixture answers from a call of the run on (what `simtape fork
/// --fixture` / `--model` writes into its child's scenario).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HandoverSpec {
    /// The first call (1-based, faulted calls counted) the other fixture answers.
    pub(crate) from_call: u64,
    pub(crate) fixture: PathField,
}

/// `[process]`: the process tape and the mode of each program. A mode of `None` is
/// hermetic: the program is not covered and every run of it fails.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessSpec {
    /// The process tape replay answers from; required when some mode is replay.
    pub(crate) tape: Option<PathField>,
    /// The mode of programs `programs` does not name.
    pub(crate) default: Option<ProcessMode>,
    /// Each named program's mode, by the program string exactly as the steps pass it.
    pub(crate) programs: std::collections::BTreeMap<String, Option<ProcessMode>>,
    /// The directory of the WASI modules; required when some mode is wasi.
    pub(crate) wasi_dir: Option<PathField>,
    /// The programs `programs` puts in wasi mode (`path` is the program), so a missing
    /// module is reported at its entry.
    pub(crate) wasi_programs: Vec<PathField>,
}

/// A capability the core configures from its own table, for the checks that a scenario
/// configures what a step, a rule or an extension's table needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// `[fs]`.
    Fs,
    /// `[network]`.
    Network,
    /// `[llm]`.
    Llm,
    /// `[process]`.
    Process,
}

impl Capability {
    /// Returns the table that configures the capability, with its article (`an [fs] table`).
    pub fn table(self) -> &'static str {
        match self {
            Capability::Fs => "an [fs] table",
            Capability::Network => "a [network] table",
            Capability::Llm => "an [llm] table",
            Capability::Process => "a [process] table",
        }
    }
}

/// One `[[task]]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TaskSpec {
    pub(crate) name: String,
    /// Where each step sits, as a field path like `task[1].steps[2]` (for run errors).
    pub(crate) step_fields: Vec<String>,
    pub(crate) repeat: u32,
    pub(crate) start_after_ns: u64,
    pub(crate) steps: Vec<TaskStep>,
}

/// One step of a task.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TaskStep {
    /// Sleeps a fixed virtual duration.
    Sleep { ns: u64 },
    /// Sleeps a uniform random duration in `min_ns..=max_ns`, drawn from the task's stream.
    SleepRandom { min_ns: u64, max_ns: u64 },
    /// Logs a user event.
    Event {
        name: String,
        fields: serde_json::Value,
    },
    /// Sends `value` on a channel, waiting while it is full.
    Send {
        channel: String,
        value: serde_json::Value,
    },
    /// Receives one message from a channel; `log` names a user event that records it.
    Recv {
        channel: String,
        log: Option<String>,
    },
    /// Declares a final effect of the run.
    Outcome {
        name: String,
        value: serde_json::Value,
    },
    /// A filesystem, network, model or process call; its error ends the run.
    Call(Call),
}

/// A step that calls a capability actor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Call {
    Write { path: String, content: String },
    Append { path: String, content: String },
    Read { path: String },
    Remove { path: String },
    Rename { from: String, to: String },
    Mkdir { path: String },
    Connect { host: String, port: u16 },
    Ask { prompt: String },
    Run(RunCall),
}

/// A `run` step: the command, and the user event that logs its output, if any.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunCall {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: Option<String>,
    pub(crate) stdin: String,
    pub(crate) log: Option<String>,
}

impl Call {
    /// Returns the step kind, as the scenario spells it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Call::Write { .. } => "write",
            Call::Append { .. } => "append",
            Call::Read { .. } => "read",
            Call::Remove { .. } => "remove",
            Call::Rename { .. } => "rename",
            Call::Mkdir { .. } => "mkdir",
            Call::Connect { .. } => "connect",
            Call::Ask { .. } => "ask",
            Call::Run(_) => "run",
        }
    }
}

/// Which end of a channel a step uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChannelEnd {
    Send,
    Recv,
}

impl Spec {
    /// Returns every channel the tasks mention, in name order, with the tasks (by index) that
    /// send on it and receive from it.
    pub(crate) fn channels(&self) -> std::collections::BTreeMap<&str, ChannelEnds> {
        let mut channels = std::collections::BTreeMap::<&str, ChannelEnds>::new();
        for (index, task) in self.tasks.iter().enumerate() {
            for step in &task.steps {
                let (channel, role) = match step {
                    TaskStep::Send { channel, .. } => (channel, ChannelEnd::Send),
                    TaskStep::Recv { channel, .. } => (channel, ChannelEnd::Recv),
                    _ => continue,
                };
                let ends = channels.entry(channel).or_default();
                let tasks = match role {
                    ChannelEnd::Send => &mut ends.senders,
                    ChannelEnd::Recv => &mut ends.receivers,
                };
                if tasks.last() != Some(&index) {
                    tasks.push(index);
                }
            }
        }
        channels
    }
}

/// The tasks at each end of one channel, by task index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ChannelEnds {
    pub(crate) senders: Vec<usize>,
    pub(crate) receivers: Vec<usize>,
}
