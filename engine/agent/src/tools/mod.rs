//! The tools the agent offers the model, and how a call reaches them.
//!
//! * [`fs`]: `read_file`, `write_file`, `append_file`, `edit_file`, `list_dir`, `delete_file`,
//!   `rename`, `make_dir` over the run's overlay;
//! * [`process`]: `run`, a program through the process capability;
//! * [`mcp`]: every tool of each `[[mcp]]` server, as `<server>__<tool>`; [`mcp_client`]
//!   answers what a server asks the agent during such a call.
//!
//! A call first meets the harness's checks: an unknown tool or arguments that do not fit the
//! tool's parameters ([`params`]) go back to the model as an error result. A tool's own
//! failure (a missing file, a non-zero exit, an `isError` result) goes back the same way. Only
//! what makes the run meaningless stops it ([`Failure::Fatal`]): an fs escape, a replay that
//! cannot answer.

pub(crate) mod fs;
pub(crate) mod mcp;
pub(crate) mod mcp_client;
pub(crate) mod params;
pub(crate) mod process;

use std::sync::Arc;

use crate::spec::ToolSource;
use serde_json::Value;
use simtape::cap::fs::FsError;
use simtape::cap::llm::{ToolCall, ToolDefinition};
use simtape::cap::process::ProcessError;
use simtape_mcp::actor::McpCallError;

use crate::ctx::Ctx;
use crate::report::{AgentError, ToolFailure};
use params::Params;

/// What a tool does when called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A built-in filesystem tool.
    Fs(fs::FsTool),
    /// The `run` tool.
    Run,
    /// A tool of the `[[mcp]]` server at this index; the tool's own name follows the
    /// `<server>__` prefix of the name the model sees.
    Mcp(usize),
}

/// One tool as the harness knows it.
#[derive(Debug, Clone)]
pub(crate) struct Tool {
    /// What the model sees: name, description, JSON Schema.
    pub(crate) definition: ToolDefinition,
    /// The compiled parameter check.
    pub(crate) params: Params,
    pub(crate) kind: Kind,
}

impl Tool {
    pub(crate) fn new(definition: ToolDefinition, kind: Kind) -> Tool {
        Tool {
            params: Params::compile(&definition.parameters),
            definition,
            kind,
        }
    }
}

/// How a tool call failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// An error result for the model (without the `error: ` prefix).
    Tool(String),
    /// The run stops.
    Fatal(ToolFailure),
}

impl From<FsError> for Failure {
    fn from(error: FsError) -> Failure {
        match error {
            FsError::Escape { .. } => Failure::Fatal(ToolFailure::Fs(error)),
            other => Failure::Tool(other.to_string()),
        }
    }
}

impl From<ProcessError> for Failure {
    fn from(error: ProcessError) -> Failure {
        if process::stops_the_run(&error) {
            Failure::Fatal(ToolFailure::Process(error))
        } else {
            Failure::Tool(error.to_string())
        }
    }
}

impl From<McpCallError> for Failure {
    fn from(error: McpCallError) -> Failure {
        match error {
            McpCallError::Rpc { .. } => Failure::Tool(error.to_string()),
            other => Failure::Fatal(ToolFailure::Mcp(other)),
        }
    }
}

/// A tool call's result for the model: its text, or the text of an error it may correct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolReply {
    /// What the tool returned.
    Text(String),
    /// What went wrong (without the `error: ` prefix).
    Error(String),
}

/// The tools of one run, in the order the model is offered them.
#[derive(Debug)]
pub(crate) struct Toolbox {
    tools: Vec<Tool>,
    /// Shared with every request of the run, so none copies the list.
    definitions: Arc<[ToolDefinition]>,
}

impl Toolbox {
    /// Gathers the agent's tools in the order of its `tools` list: the built-in ones from
    /// the scenario's prototypes, each MCP server's from one `tools/list`. A name offered
    /// twice keeps its first tool.
    pub(crate) async fn open(ctx: &Ctx, sources: &[ToolSource]) -> Result<Toolbox, AgentError> {
        let mut tools: Vec<Tool> = Vec::new();
        for source in sources {
            let found = match source {
                ToolSource::Fs => {
                    ctx.require(ctx.host.capabilities().fs().is_some(), "fs tools", "[fs]")?;
                    Builtin::get().fs.clone()
                }
                ToolSource::Process => {
                    let present = ctx.host.capabilities().process().is_some();
                    ctx.require(present, "the run tool", "[process]")?;
                    vec![Builtin::get().run.clone()]
                }
                ToolSource::Mcp(server) => mcp::list(ctx, server).await?,
            };
            for tool in found {
                if tools
                    .iter()
                    .all(|t| t.definition.name != tool.definition.name)
                {
                    tools.push(tool);
                }
            }
        }
        let definitions = tools.iter().map(|tool| tool.definition.clone()).collect();
        Ok(Toolbox { tools, definitions })
    }

    /// Returns the definitions the model is offered.
    pub(crate) fn definitions(&self) -> &Arc<[ToolDefinition]> {
        &self.definitions
    }

    /// Returns the tool names, in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.definitions.iter().map(|d| d.name.clone()).collect()
    }

    /// Runs one call: the harness's checks, then the tool.
    pub(crate) async fn call(&self, ctx: &Ctx, call: &ToolCall) -> Result<ToolReply, AgentError> {
        let Some(tool) = self.tools.iter().find(|t| t.definition.name == call.name) else {
            return Ok(ToolReply::Error(format!("unknown tool {:?}", call.name)));
        };
        if let Err(why) = tool.params.check(&call.arguments) {
            return Ok(ToolReply::Error(format!("invalid arguments: {why}")));
        }
        let arguments = &call.arguments;
        let outcome = match tool.kind {
            Kind::Fs(fs_tool) => fs::call(ctx.host.fs(), fs_tool, arguments).await,
            Kind::Run => process::call(ctx.host.process(), arguments).await,
            Kind::Mcp(server) => {
                let name = mcp::tool_name(&tool.definition.name);
                mcp::call(ctx, server, name, &call.id, arguments).await
            }
        };
        match outcome {
            Ok(text) => Ok(ToolReply::Text(text)),
            Err(Failure::Tool(text)) => Ok(ToolReply::Error(text)),
            Err(Failure::Fatal(error)) => Err(AgentError::Tool {
                tool: call.name.clone(),
                call: call.id.clone(),
                error: Box::new(error),
            }),
        }
    }
}

/// Returns the string argument `key` ("" when absent: only optional ones can be).
pub(crate) fn text_argument<'a>(arguments: &'a Value, key: &str) -> &'a str {
    arguments.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The built-in tools, built once per process and cloned into each run's toolbox: they
/// depend on nothing of a scenario (their schemas are fixed, their checks compiled once).
#[derive(Debug, Clone)]
pub(crate) struct Builtin {
    pub(crate) fs: Vec<Tool>,
    pub(crate) run: Tool,
}

impl Builtin {
    fn get() -> &'static Builtin {
        static BUILTIN: std::sync::LazyLock<Builtin> = std::sync::LazyLock::new(|| Builtin {
            fs: fs::tools(),
            run: process::tool(),
        });
        &BUILTIN
    }
}
