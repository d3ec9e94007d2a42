//! The eval tables of a scenario file: `[agent]`, `[[mcp]]`, `[[faults.mcp]]` and
//! `[[verify]]`, decoded and checked once, through the core's [`Extension`] hook, with the
//! core's span-keeping decoder; then the `[[mcp]]` files opened. Every problem is placed at
//! file:line:column:field, and `simtape check` reports them with the core's in one pass.
//!
//! - `mcp` — the servers and the names the other tables refer to them by.
//! - `agent` — the agent's prompts, bounds, retry policy and tools.
//! - `faults` — the MCP fault rules.
//! - `normalize` — the scenario's rules for volatile fields of an agent program's requests.
//! - `harness` — a multi-session run's policy and features.
//! - `verify` — the verifiers, their text expectations and compiled patterns.
//! - `property` — the properties: a condition (a verifier's check, retries, the verdict)
//!   and how it must hold.

mod agent;
mod faults;
mod harness;
mod mcp;
mod normalize;
mod property;
mod verify;

use std::path::Path;

use simtape::scenario::decoder::{Capability, Decoder, PathField};
use simtape::scenario::{Extension, Listed, Tables};
use simtape_mcp::actor::McpActor;

use crate::ctx::EvalSpec;
use crate::spec::McpSource;
pub(crate) use mcp::open_server;

/// The tables this crate decodes, each listed after the core table it follows in the format.
const TABLES: [Listed; 6] = [
    ("mcp", "process"),
    ("agent", "mcp"),
    ("normalize", "agent"),
    ("harness", "normalize"),
    ("verify", "faults"),
    ("property", "verify"),
];
/// The `[faults]` rule arrays this crate decodes.
const FAULT_TABLES: [Listed; 1] = [("mcp", "llm")];

/// The extension that decodes the eval tables of one scenario file, and what it found.
#[derive(Debug, Default)]
pub(crate) struct EvalTables {
    /// The eval parts, once every table decoded; `[[mcp]]` paths resolved once opened.
    pub(crate) spec: EvalSpec,
    /// Where each `[[mcp]]` server's file is named, in the order of `spec.mcp`.
    files: Vec<PathField>,
    /// The MCP actors the runs start from, in the order of `spec.mcp`, once opened.
    pub(crate) servers: Vec<McpActor>,
    /// The capabilities the caller supplies without a table (`--process-wasi`: `[process]`).
    pub(crate) supplied: Vec<Capability>,
}

impl Extension for EvalTables {
    fn tables(&self) -> &[Listed] {
        &TABLES
    }

    fn fault_tables(&self) -> &[Listed] {
        &FAULT_TABLES
    }

    fn supplied(&self) -> &[Capability] {
        &self.supplied
    }

    fn runs_without_tasks(&self, tables: &Tables<'_>) -> bool {
        // An agent scenario runs its agent; tasks are what a scripted one runs.
        tables.get("agent").is_some()
    }

    fn decode(&mut self, decoded: &mut Decoder, tables: &Tables<'_>) {
        let (mcp, servers) = match tables.get("mcp") {
            Some(field) => mcp::mcp(decoded, field),
            None => (Some(Vec::new()), mcp::Servers::default()),
        };
        let agent = match tables.get("agent") {
            Some(field) => agent::agent(decoded, field, tables.line(field), &servers).map(Some),
            None => Some(None),
        };
        // An agent program's `gate` runs in its working directory after it exits; in a
        // `[harness]` run, whose sessions are validated between processes, through
        // `[process]` against the run's filesystem, as for the built-in agent.
        let command_agent = matches!(agent, Some(Some(agent::AgentTable::Command(_))))
            && tables.get("harness").is_none();
        let mcp_faults = match tables.fault("mcp") {
            Some(field) => faults::mcp_rules(decoded, field, &servers),
            None => Some(Vec::new()),
        };
        let normalize = match tables.get("normalize") {
            Some(field) => normalize::normalize(decoded, field),
            None => Some(Default::default()),
        };
        let verify = match tables.get("verify") {
            Some(field) => verify::verify(decoded, field, &servers, tables, command_agent),
            None => Some(Vec::new()),
        };
        let properties = match tables.get("property") {
            Some(field) => property::properties(decoded, field, &servers, tables),
            None => Some(Vec::new()),
        };
        let harness = match (tables.get("harness"), &agent) {
            (None, _) => Some(None),
            (Some(field), Some(Some(table))) => {
                let task = match table {
                    agent::AgentTable::Builtin(builtin) => builtin.task.as_str(),
                    agent::AgentTable::Command(command) => command.task.as_str(),
                };
                let starter = (task, verify.as_deref().unwrap_or_default());
                let line = tables.line(field);
                harness::harness(decoded, field, line, &servers, tables, starter).map(Some)
            }
            (Some(field), Some(None)) => {
                let message = "[harness] runs an agent's sessions: it needs an [agent] table (the built-in agent, or kind = \"command\")";
                decoded.problem(field.span.clone(), field.path.clone(), message.into());
                None
            }
            (Some(_), None) => None,
        };
        let (
            Some(agent),
            Some(mcp),
            Some(mcp_faults),
            Some(normalize),
            Some(verify),
            Some(properties),
            Some(harness),
        ) = (
            agent, mcp, mcp_faults, normalize, verify, properties, harness,
        )
        else {
            return;
        };
        let (mcp, files) = mcp.into_iter().unzip();
        let (agent, command) = match agent {
            Some(agent::AgentTable::Builtin(agent)) => (Some(agent), None),
            Some(agent::AgentTable::Command(command)) => (None, Some(command)),
            None => (None, None),
        };
        self.spec = EvalSpec {
            agent,
            command,
            normalize,
            mcp,
            mcp_faults,
            verify,
            properties,
            harness,
        };
        self.files = files;
    }

    fn open(&mut self, decoded: &mut Decoder, base: &Path) {
        let spec = &mut self.spec;
        // An agent program named by a path starts from the scenario's directory: a tape
        // carries it, so an unpacked tape runs it again (`--rerun-agent`).
        let program = spec.command.as_ref().and_then(|c| c.command.as_deref());
        if let Some(program) = program.filter(|p| p.contains('/')) {
            if base.join(program).is_file() {
                decoded.note_input(program);
            }
        }
        // So is a script its arguments name beside the scenario (`python3 agent.py`), as the
        // gateway resolves them: a fork, a shrink or a rerun from the tape runs it again.
        let args = spec.command.as_ref().map_or(&[][..], |c| &c.args[..]);
        for arg in args {
            let path = Path::new(arg);
            let plain = !arg.starts_with('-') && path.is_relative();
            if plain && !arg.contains("..") && base.join(path).is_file() {
                decoded.note_input(arg);
            }
        }
        for (server, file) in spec.mcp.iter_mut().zip(&self.files) {
            let (what, key) = match server.source {
                McpSource::World(_) => ("world spec", "world"),
                McpSource::Cassette(_) => ("cassette", "cassette"),
            };
            let Some(resolved) = decoded.existing_file(file, base, what) else {
                continue;
            };
            server.source = match key {
                "world" => McpSource::World(resolved),
                _ => McpSource::Cassette(resolved),
            };
            match open_server(server, &spec.mcp_faults) {
                Ok(actor) => self.servers.push(actor),
                Err(error) => {
                    decoded.problem(file.span.clone(), file.field.clone(), error.to_string())
                }
            }
        }
    }
}
