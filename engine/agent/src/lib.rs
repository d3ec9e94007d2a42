//! simtape-agent: the eval harness. A scenario file becomes an eval scenario: a built-in
//! **agent loop** (the harness under test) runs inside the simulation beside the scenario's
//! scripted tasks, calls the model and its tools, and **verifiers** judge what it left behind.
//!
//! One run, in the order it happens:
//!
//! 1. [`EvalScenario::load`] reads the scenario: the core decodes its own tables and hands
//!    `[agent]`, `[[mcp]]`, `[[faults.mcp]]` and `[[verify]]` to this crate's decoder (the
//!    core's extension hook), which checks them once and compiles the verifiers' patterns;
//!    then it opens the `[[mcp]]` cassettes and world specs (with the `[[faults.mcp]]` rules
//!    turned into world fault rules): once, shared by every run of a sweep.
//! 2. [`EvalScenario::builder`] gives the scenario's builder plus one MCP actor per server
//!    (`mcp:<name>`) and the `agent` actor that puts the harness's own steps on the tape.
//! 3. [`EvalScenario::run`] runs the scripted tasks and the agent together in the main task;
//!    the agent's tool calls of one turn run as tasks of their own, concurrently, so the
//!    seed's latencies decide how they interleave. A replay that cannot answer, a denied
//!    call or an fs escape stops the run (`error`); everything else a tool does goes back
//!    to the model, as real harnesses do.
//! 4. The verifiers run, still inside the simulation; the [`Verdict`] is `pass` only when at
//!    least one ran and all held, and it is the tape footer's verdict.
//!
//! ```
//! use simtape_agent::{EvalScenario, Verdict};
//! // An agent that renames a function with edit_file; three verifiers judge it.
//! let scenario = EvalScenario::load("tests/data/refactor.toml".as_ref()).unwrap();
//! let mut builder = scenario.builder(7);
//! builder.tape_in_memory();
//! let report = scenario.run(&mut builder);
//! assert_eq!(report.verdict, Verdict::Pass);
//! assert!(report.verifiers.iter().all(|verifier| verifier.held));
//! let transcript = report.transcript.unwrap();
//! assert_eq!(transcript.turns[1].tool_calls[0].name, "edit_file");
//! assert_eq!(transcript.answer.as_deref(), Some("Renamed old_name to new_name: done."));
//! ```
//!
//! `docs/agent.md` describes the loop, the tools and their schemas, retries and verdicts.
//!
//! Module map:
//! - `spec` — the eval parts as data: [`AgentSpec`], [`McpServerSpec`], [`McpFault`],
//!   [`VerifySpec`] and their parts.
//! - `tables` — decoding and checking the eval tables, through the core's extension hook.
//! - `scenario` — [`EvalScenario`], [`EvalSpec`]: loading, builders, runs.
//! - `ctx` — [`EvalSpec`] and what every part of a run reaches: the scenario's shared,
//!   read-only parts and one run's context (host, retry budget, state). Below every part
//!   that runs, importing none of them.
//! - `pipeline` — the main task: tasks and agent side by side, then verifiers.
//! - `agent` — the loop: turns, model retries, concurrent tool calls.
//! - `tools` — the fs, process and MCP tools, argument checks, what stops a run.
//! - `slots` — at most `tool_concurrency` calls at a time, joined in call order.
//! - `retry` — the run-wide retry budget and back-off in virtual time.
//! - [`harness`] — multi-session runs (`[harness]`); its data (policy, parts, state files,
//!   errors) is `harness_spec`, below the run's context.
//! - `verify` — the six verifier kinds and text expectations.
//! - [`log`] — the `agent` actor and its records.
//! - [`transcript`] — the agent's turns, calls and answer for people and reports.
//! - `report` — [`EvalReport`] (a [`simtape::RunSummary`], the [`Verdict`], each
//!   [`VerifierResult`]), [`EvalFailure`].

#![warn(missing_docs)]

mod agent;
mod command;
mod ctx;
pub mod harness;
mod harness_spec;
pub mod log;
mod pipeline;
mod property;
mod report;
mod retry;
mod scenario;
mod slots;
mod spec;
mod tables;
mod tools;
pub mod transcript;
mod verify;

pub use report::{AgentError, EvalFailure, EvalReport, ToolFailure, WorldOutcome};
// The verdict belongs to simtape-eval; the harness decides it, so its users find it here too.
pub use command::{
    AgentExit, CommandEnd, GateRun, ProgramSessions, SessionEnd, SessionRequest, EXIT_VERIFIER,
};
pub use ctx::{mcp_actor_name, EvalSpec};
pub use pipeline::RunOutput;
pub use scenario::{CommandRun, EvalScenario};
pub use simtape_eval::{Verdict, VerifierResult, NO_VERIFIER, NO_VERIFIER_SAW};
pub use spec::{
    AdapterKind, AgentClock, AgentSandbox, AgentSpec, AgentVariant, Check, CommandAgentSpec,
    FsState, McpFault, McpServerSpec, McpSource, ModelIds, NormalizeSpec, Pattern, Permission,
    TextMatch, ToolSource, UnknownAgent, VerifySpec,
};
pub use tools::fs::EDIT_BYTES_MAX;
pub use transcript::{EndReason, Transcript, TranscriptCall, TranscriptSession, TranscriptTurn};
pub use verify::{judge_observed, Judged, Observed, SAW_CHARS_MAX};
