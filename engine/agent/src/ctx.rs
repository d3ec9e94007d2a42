//! What every part of one run reaches: the scenario's eval parts ([`EvalSpec`]), what all
//! runs of a scenario share read-only (`Shared`), and one run's context (`Ctx`: its host,
//! its retry budget, and `RunState`, what the run leaves even when the engine stops it).
//!
//! These are the run's data, so they sit below everything that runs (the agent loop, its
//! tools, the verifiers, the harness, the main task in `pipeline`) and import none of it: a
//! run's parts meet here, never by importing each other's modules.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use simtape::actor::ActorRef;
use simtape::scenario::Scenario;
use simtape::{ActorStates, Builder, Capabilities, Host};
use simtape_eval::VerifierResult;
use simtape_mcp::actor::McpActor;

use crate::command::GateRun;
use crate::log::{self, AgentEvent, AgentLog, AGENT_ACTOR};
use crate::report::{AgentError, WorldOutcome};
use crate::retry::Retries;
use crate::spec::{
    AgentSpec, CommandAgentSpec, McpFault, McpServerSpec, NormalizeSpec, VerifySpec,
};
use crate::transcript::Transcript;

/// The eval parts of a scenario: what `[agent]`, `[[mcp]]`, `[[faults.mcp]]` and `[[verify]]`
/// decode to. [`EvalScenario::load`](crate::EvalScenario::load) takes them from the scenario file;
/// [`EvalScenario::from_parts`](crate::EvalScenario::from_parts) takes them from Rust.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvalSpec {
    /// The built-in agent, if the scenario runs it.
    pub agent: Option<AgentSpec>,
    /// The agent program outside the simulation, if the scenario runs one instead (it runs
    /// under `simtape-serve`'s driver, not [`EvalScenario::run`](crate::EvalScenario::run)).
    pub command: Option<CommandAgentSpec>,
    /// Rules for volatile fields of an agent program's requests (`[normalize]`), beside the
    /// built-in ones.
    pub normalize: NormalizeSpec,
    /// The MCP servers, in file order.
    pub mcp: Vec<McpServerSpec>,
    /// The MCP fault rules (`[[faults.mcp]]`; the core applies the rest of `[faults]`).
    pub mcp_faults: Vec<McpFault>,
    /// The verifiers, in file order.
    pub verify: Vec<VerifySpec>,
    /// The properties, in file order.
    pub properties: Vec<crate::spec::PropertySpec>,
    /// The multi-session run policy and features (`[harness]`), when the scenario has one.
    pub harness: Option<crate::harness_spec::policy::HarnessSpec>,
}

/// Returns the actor name of the `[[mcp]]` server `name` in the tape's actor table.
pub fn mcp_actor_name(name: &str) -> String {
    format!("mcp:{name}")
}

/// The actors the harness registers on top of the scenario's, by id (the same for every
/// builder of one scenario, since registration follows a fixed order).
#[derive(Debug, Clone, Default)]
pub(crate) struct Refs {
    /// One per `[[mcp]]` server, in file order.
    pub(crate) mcp: Vec<ActorRef<McpActor>>,
    /// The `agent` records, when there is an agent or a verifier.
    pub(crate) log: Option<ActorRef<AgentLog>>,
}

/// What every run of one scenario shares, read-only.
// Clone only for `set_process_runner` on a scenario already shared (copy on write).
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    pub(crate) scenario: Scenario,
    pub(crate) eval: EvalSpec,
    /// The MCP actors each run starts from (a world compiled once, its faults added).
    pub(crate) mcp: Vec<McpActor>,
    pub(crate) refs: Refs,
}

impl Shared {
    /// Returns each world server's final state and report, in file order.
    pub(crate) fn worlds(&self, actors: &ActorStates) -> Vec<WorldOutcome> {
        let servers = self.eval.mcp.iter().zip(&self.refs.mcp);
        servers
            .filter_map(|(server, actor)| {
                let world = actors.get(*actor)?;
                Some(WorldOutcome {
                    server: server.name.clone(),
                    state: world.world_state()?.clone(),
                    report: world.world_report()?,
                })
            })
            .collect()
    }

    /// Returns the index of the `[[mcp]]` server named `name`.
    pub(crate) fn server_index(&self, name: &str) -> Option<usize> {
        self.eval.mcp.iter().position(|server| server.name == name)
    }

    /// Registers the harness's actors on `builder`, in the one fixed order: the MCP servers
    /// in file order, then the `agent` records.
    pub(crate) fn register(&self, builder: &mut Builder) -> Refs {
        let mcp = self
            .eval
            .mcp
            .iter()
            .zip(&self.mcp)
            .map(|(server, actor)| builder.capability(&mcp_actor_name(&server.name), actor.clone()))
            .collect();
        let records = self.eval.agent.is_some()
            || self.eval.command.is_some()
            || !self.eval.verify.is_empty();
        let log = records.then(|| builder.actor(AGENT_ACTOR, AgentLog));
        Refs { mcp, log }
    }
}

/// What a run leaves outside the simulation even when the engine stops it: the transcript
/// so far and the capabilities (to find the fs actor's final state).
#[derive(Debug, Default)]
pub(crate) struct RunState {
    pub(crate) transcript: RefCell<Transcript>,
    pub(crate) capabilities: RefCell<Option<Capabilities>>,
    /// The recorded gate runs of an agent program (`[agent] kind = "command"`), in order.
    pub(crate) gates: RefCell<Vec<GateRun>>,
    /// A `[harness]` run's own verifier results and outcome, once it has ended.
    pub(crate) harness:
        RefCell<Option<(Vec<VerifierResult>, simtape_eval::harness::HarnessOutcome)>>,
    /// The tool names the built-in agent was offered, once its toolbox is open (an agent
    /// program's tools are its own: unknown).
    pub(crate) offered_tools: RefCell<Option<Vec<String>>>,
    /// How many `[[mcp]] elicitation` answers each server (by index) has used.
    pub(crate) elicited: RefCell<std::collections::BTreeMap<usize, usize>>,
}

/// Everything the agent, its tools and the verifiers reach during one run.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub(crate) host: Host,
    pub(crate) shared: Arc<Shared>,
    pub(crate) retries: Retries,
    pub(crate) state: Rc<RunState>,
}

impl Ctx {
    /// Puts one of the harness's steps on the tape.
    pub(crate) async fn record(&self, event: AgentEvent) {
        if let Some(agent_log) = self.shared.refs.log {
            log::record(agent_log, event).await;
        }
    }

    /// Takes one retry from the run's budget (and counts it in the transcript); `false` when
    /// the budget is spent.
    pub(crate) fn take_retry(&self) -> bool {
        let taken = self.retries.take();
        if taken {
            self.state.transcript.borrow_mut().retries = self.retries.taken();
        }
        taken
    }

    /// Fails the agent's setup when `present` is false: `what` needs the table `table`.
    pub(crate) fn require(&self, present: bool, what: &str, table: &str) -> Result<(), AgentError> {
        if present {
            Ok(())
        } else {
            Err(AgentError::Setup(format!(
                "{what} need {table} in the scenario"
            )))
        }
    }
}
