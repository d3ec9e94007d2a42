//! [`EvalScenario`]: a scenario and everything its eval parts reference, loaded and checked
//! once (the eval tables by `tables`, through the core's decoder), then run at any seed, any
//! number of times, from any thread.

use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use simtape::cap::fs::FsDiff;
use simtape::run::Run;
use simtape::scenario::decoder::Capability;
use simtape::scenario::{Scenario, ScenarioError, ScenarioReport};
use simtape::{ActorStates, Builder, Host, RunError, RunReport, RunSummary};
use simtape_mcp::actor::McpActor;

use crate::command::CommandEnd;
use crate::ctx::{mcp_actor_name, EvalSpec, Refs, RunState, Shared};
use crate::pipeline::{self, RunOutput};

use crate::report::{EvalFailure, EvalReport, WorldOutcome};
use crate::spec::UnknownAgent;
use crate::spec::{Check, McpSource, ToolSource};
use crate::tables::{open_server, EvalTables};

/// A scenario plus everything it references, loaded once (world specs compiled, cassettes
/// parsed, patterns compiled) and shared read-only across runs and threads.
///
/// ```no_run
/// use simtape_agent::EvalScenario;
/// let scenario = EvalScenario::load("scenarios/refactor.toml".as_ref())?;
/// let mut builder = scenario.builder(7);
/// builder.tape("refactor-7.tape");
/// let report = scenario.run(&mut builder);
/// println!("{}", report.verdict);
/// # Ok::<(), simtape::scenario::ScenarioError>(())
/// ```
#[derive(Debug, Clone)]
pub struct EvalScenario {
    shared: Arc<Shared>,
}

// A sweep shares one scenario between the threads of its pool.
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<EvalScenario>()
};

impl EvalScenario {
    /// Reads and checks the scenario file at `path` and everything it references, `[[mcp]]`
    /// cassettes and world specs included; the error is the first problem.
    pub fn load(path: &Path) -> Result<EvalScenario, ScenarioError> {
        EvalScenario::check_all(path).map_err(first)
    }

    /// Like [`EvalScenario::load`], reporting every problem (for `simtape check`): the core's
    /// tables and the eval tables in one pass, in source order; a bad world spec or cassette
    /// is reported at the `[[mcp]]` field that names it.
    pub fn check_all(path: &Path) -> Result<EvalScenario, Vec<ScenarioError>> {
        EvalScenario::check_all_wasi(path, None)
    }

    /// Like [`EvalScenario::check_all`]; with `process_wasi`, programs without a mode run as
    /// WASI modules from that directory (`simtape run --process-wasi`).
    pub fn check_all_wasi(
        path: &Path,
        process_wasi: Option<&Path>,
    ) -> Result<EvalScenario, Vec<ScenarioError>> {
        let mut tables = EvalTables::default();
        if process_wasi.is_some() {
            // The flag gives the scenario a process capability even without `[process]`.
            tables.supplied.push(Capability::Process);
        }
        let mut scenario = Scenario::check_all_with(path, &mut tables)?;
        if let Some(dir) = process_wasi {
            scenario.process_wasi(dir);
        }
        Ok(EvalScenario::build(scenario, tables.spec, tables.servers))
    }

    /// Checks scenario text (`path` names it in errors and anchors its relative paths),
    /// reporting every problem, in source order.
    pub fn check_source(source: &str, path: &Path) -> Result<EvalScenario, Vec<ScenarioError>> {
        let mut tables = EvalTables::default();
        let scenario = Scenario::check_source_with(source, path, &mut tables)?;
        Ok(EvalScenario::build(scenario, tables.spec, tables.servers))
    }

    /// Like [`EvalScenario::check_source`]; the error is the first problem.
    pub fn parse(source: &str, path: &Path) -> Result<EvalScenario, ScenarioError> {
        EvalScenario::check_source(source, path).map_err(first)
    }

    /// Takes a checked scenario and eval parts given in Rust, and opens what they reference.
    /// `[[mcp]]` paths are used as given. A problem with the parts has no place in the file:
    /// it names the field it is about, at line 0.
    pub fn from_parts(scenario: Scenario, eval: EvalSpec) -> Result<EvalScenario, ScenarioError> {
        let mut problems = Vec::new();
        check_parts(&eval, &mut |field, message| {
            problems.push(unplaced(&scenario, field, message))
        });
        let mut servers = Vec::new();
        for (index, server) in eval.mcp.iter().enumerate() {
            match open_server(server, &eval.mcp_faults) {
                Ok(actor) => servers.push(actor),
                Err(error) => {
                    let field = format!("mcp[{index}].{}", error.key());
                    problems.push(unplaced(&scenario, field, error.to_string()));
                }
            }
        }
        match problems.is_empty() {
            true => Ok(EvalScenario::build(scenario, eval, servers)),
            false => Err(first(problems)),
        }
    }

    fn build(scenario: Scenario, eval: EvalSpec, mcp: Vec<McpActor>) -> EvalScenario {
        let mut shared = Shared {
            scenario,
            eval,
            mcp,
            refs: Refs::default(),
        };
        let mut scratch = shared.scenario.builder(0);
        shared.refs = shared.register(&mut scratch);
        EvalScenario {
            shared: Arc::new(shared),
        }
    }

    /// Returns the scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.shared.scenario
    }

    /// Gives the programs `[process]` puts in `real` or `record` mode what runs them
    /// ([`Scenario::set_process_runner`]): the `simtape` command passes the gateway's
    /// spawner to every scenario it loads.
    pub fn set_process_runner(&mut self, runner: Arc<dyn simtape::cap::process::ProcessRunner>) {
        Arc::make_mut(&mut self.shared)
            .scenario
            .set_process_runner(runner);
    }

    /// Sets an agent program's settle window (`--settle-ms`, over `[agent] settle`); no-op
    /// for the built-in agent.
    pub fn set_settle_ms(&mut self, ms: u64) {
        if let Some(command) = Arc::make_mut(&mut self.shared).eval.command.as_mut() {
            command.settle_ms = Some(ms);
        }
    }

    /// Returns every actor's `rate` fault rules as a swarm run sets them (`simtape
    /// explore`): the llm, fs and process actors' `[faults]` rules, then each world-backed
    /// `[[mcp]]` server's (its spec's and `[[faults.mcp]]`), in file order; actors without
    /// one left out.
    pub fn swarm_sites(&self) -> Vec<simtape_eval::explore::Site> {
        use simtape::cap::fault_rules::rate_rules;
        use simtape::capabilities::{FS_ACTOR, LLM_ACTOR, PROCESS_ACTOR};
        let faults = self.shared.scenario.faults();
        let core = [
            (LLM_ACTOR.to_string(), rate_rules(&faults.llm)),
            (FS_ACTOR.to_string(), rate_rules(&faults.fs)),
            (PROCESS_ACTOR.to_string(), rate_rules(&faults.process)),
        ];
        let mcp = self
            .shared
            .eval
            .mcp
            .iter()
            .zip(&self.shared.mcp)
            .map(|(server, actor)| (mcp_actor_name(&server.name), actor.rate_rules()));
        core.into_iter()
            .chain(mcp)
            .filter(|(_, rules)| !rules.is_empty())
            .map(|(stream, rules)| simtape_eval::explore::Site { stream, rules })
            .collect()
    }

    /// Runs agent `name` in place of `[agent]`'s (`sweep --agents`, `run --agent`): a
    /// `[[agent.variant]]` or an adapter; an error naming the known ones otherwise, or for a
    /// scenario whose agent is not a program.
    pub fn select_agent(&mut self, name: &str) -> Result<(), UnknownAgent> {
        let shared = Arc::make_mut(&mut self.shared);
        let Some(command) = shared.eval.command.as_mut() else {
            return Err(UnknownAgent {
                name: name.to_string(),
                known: "none: the scenario's agent is the built-in one, and only an agent \
                        program ([agent] kind = \"command\") can be swapped"
                    .to_string(),
            });
        };
        *command = command.agent(name)?;
        Ok(())
    }

    /// Returns the eval parts the runs use.
    pub fn eval(&self) -> &EvalSpec {
        &self.shared.eval
    }

    /// Returns a builder for a run at `seed`: the scenario's (seed, start, limits, stamp,
    /// capabilities), then one MCP actor per `[[mcp]]` server in file order (`mcp:<name>`),
    /// then the `agent` record actor. Add a tape before [`EvalScenario::run`]; register
    /// nothing before these.
    pub fn builder(&self, seed: u64) -> Builder {
        self.builder_from(self.shared.scenario.builder(seed))
    }

    /// Like [`EvalScenario::builder`], with `llm` as the run's model instead of the `[llm]`
    /// fixture's (a record-mode actor: `simtape serve --record-llm`).
    pub fn builder_with_llm(&self, seed: u64, llm: simtape::cap::llm::LlmActor) -> Builder {
        self.builder_from(self.shared.scenario.builder_with_llm(seed, Some(llm)))
    }

    fn builder_from(&self, mut builder: Builder) -> Builder {
        let refs = self.shared.register(&mut builder);
        let ids = |refs: &Refs| {
            let mcp: Vec<u16> = refs.mcp.iter().map(|r| r.id()).collect();
            (mcp, refs.log.map(|r| r.id()))
        };
        assert_eq!(
            ids(&refs),
            ids(&self.shared.refs),
            "a scenario's builders register the same actors in the same order"
        );
        builder
    }

    /// Builds a run from `builder` (from [`EvalScenario::builder`]) and runs it: the
    /// scripted tasks and the agent, then the verifiers. The tape's footer verdict is the
    /// [`Verdict`](simtape_eval::Verdict)'s text. Never panics on user input; every way a run
    /// can end is a verdict.
    pub fn run(&self, builder: &mut Builder) -> EvalReport {
        self.run_keeping(builder, Keep::Artifacts)
    }

    /// Like [`EvalScenario::run`] for a caller that keeps only the verdict and the run's
    /// summary (a sweep): the report leaves out the end-of-run artifacts, `fs_diff` is `None`
    /// and `worlds` is empty, which spares each run a diff of the overlay and a second
    /// scoring and copy of every world. The tape and verdict are the same as `run`'s.
    pub fn run_summary(&self, builder: &mut Builder) -> EvalReport {
        self.run_keeping(builder, Keep::Summary)
    }

    fn run_keeping(&self, builder: &mut Builder, keep: Keep) -> EvalReport {
        let seed = builder.seed_value();
        let sim = match builder.build() {
            Ok(sim) => sim,
            Err(error) => return unbuilt(seed, error),
        };
        let state = Rc::new(RunState::default());
        let shared = Arc::clone(&self.shared);
        let run_state = Rc::clone(&state);
        let outcome = if self.shared.eval.command.is_some() {
            // An agent program needs a driver outside the simulation: without one it cannot
            // run, and the run says so rather than judging an agent that never ran.
            let setup = "an [agent] with kind = \"command\" runs through simtape-serve's driver (`simtape run` uses it)";
            sim.run_with_verdict(
                |_host| async move {
                    let error = crate::report::AgentError::Setup(setup.to_string());
                    RunOutput::stopped(EvalFailure::Agent(error), Vec::new())
                },
                verdict_line,
            )
        } else {
            sim.run_with_verdict(
                move |host| pipeline::run(host, shared, run_state, None),
                verdict_line,
            )
        };
        self.report(outcome, &state, keep)
    }

    /// Starts a run of a scenario whose agent is a program outside the simulation (`[agent]
    /// kind = "command"`): `agent` is the driver's side inside the simulation (it serves the
    /// program's requests from the run's inputs and ends with how the session ended); the
    /// scripted tasks run beside it and the verifiers after it. The driver steps the
    /// returned run and ends it with [`EvalScenario::finish_command`].
    pub fn start_command<F, Fut>(
        &self,
        builder: &mut Builder,
        agent: F,
    ) -> Result<CommandRun, Box<EvalReport>>
    where
        F: FnOnce(Host) -> Fut + 'static,
        Fut: std::future::Future<Output = CommandEnd> + 'static,
    {
        self.start_open(builder, move |host, shared, state| {
            let agent = agent(host.clone());
            pipeline::run_command(host, shared, state, agent)
        })
    }

    /// Starts a `[harness]` run whose sessions are an agent program's (`[agent] kind =
    /// "command"` with `[harness]`): `sessions` makes the driver's side inside the simulation,
    /// which runs one process per session the harness asks for. The harness, its validation
    /// and the verifiers run inside, as for the built-in agent. The driver steps the returned
    /// run and ends it with [`EvalScenario::finish_command`].
    pub fn start_command_sessions<F>(
        &self,
        builder: &mut Builder,
        sessions: F,
    ) -> Result<CommandRun, Box<EvalReport>>
    where
        F: FnOnce(Host) -> Rc<dyn crate::command::ProgramSessions> + 'static,
    {
        self.start_open(builder, move |host, shared, state| {
            let sessions = sessions(host.clone());
            pipeline::run(host, shared, state, Some(sessions))
        })
    }

    /// Builds the run and starts `main` as its main task, open to a driver.
    fn start_open<F, Fut>(
        &self,
        builder: &mut Builder,
        main: F,
    ) -> Result<CommandRun, Box<EvalReport>>
    where
        F: FnOnce(Host, Arc<Shared>, Rc<RunState>) -> Fut + 'static,
        Fut: std::future::Future<Output = RunOutput> + 'static,
    {
        let seed = builder.seed_value();
        let sim = builder
            .build()
            .map_err(|error| Box::new(unbuilt(seed, error)))?;
        let state = Rc::new(RunState::default());
        let shared = Arc::clone(&self.shared);
        let run_state = Rc::clone(&state);
        let run = sim.start(move |host| main(host, shared, run_state));
        Ok(CommandRun { run, state })
    }

    /// Finishes a run [`EvalScenario::start_command`] started: its tape footer carries the
    /// verdict; the report is [`EvalScenario::run`]'s.
    pub fn finish_command(&self, command: CommandRun) -> EvalReport {
        let outcome = command.run.finish_with_verdict(verdict_line);
        self.report(outcome, &command.state, Keep::Artifacts)
    }

    /// Makes the report of a finished run.
    fn report(
        &self,
        outcome: Result<RunReport<RunOutput>, RunError>,
        state: &RunState,
        keep: Keep,
    ) -> EvalReport {
        let has_agent = self.shared.eval.agent.is_some() || self.shared.eval.command.is_some();
        let transcript = has_agent.then(|| state.transcript.take());
        let artifacts = keep == Keep::Artifacts;
        let worlds = |actors: &ActorStates| {
            if artifacts {
                self.shared.worlds(actors)
            } else {
                Vec::new()
            }
        };
        let mut report = match outcome {
            Ok(report) => {
                let fs_diff = artifacts
                    .then(|| report.fs_diff())
                    .flatten()
                    .and_then(Result::ok);
                let worlds = worlds(&report.actors);
                completed(report, transcript, worlds, fs_diff)
            }
            Err(error) => {
                let fs = state
                    .capabilities
                    .borrow()
                    .as_ref()
                    .and_then(|caps| caps.fs());
                let fs_diff = fs
                    .filter(|_| artifacts)
                    .and_then(|fs| error.actors.get(fs))
                    .and_then(|fs| fs.diff().ok());
                let worlds = worlds(&error.actors);
                stopped(error, transcript, worlds, fs_diff)
            }
        };
        report.gates = state.gates.take();
        if report.properties.len() != self.shared.eval.properties.len() {
            // Stopped before they were judged: each listed, not hit, so a sweep counts it.
            report.properties = self
                .shared
                .eval
                .properties
                .iter()
                .map(|spec| simtape_eval::property::PropertyResult {
                    name: spec.name.clone(),
                    kind: spec.kind,
                    hit: false,
                    saw: "not judged: the run stopped first".to_string(),
                })
                .collect();
        }
        report
    }
}

/// The tape footer's verdict of an eval run.
fn verdict_line(outcome: Result<&RunOutput, &simtape::SimError>) -> String {
    match outcome {
        Ok(output) => output.verdict.to_string(),
        Err(error) => format!("error: {error}"),
    }
}

/// A run of a scenario whose agent is a program outside the simulation, started by
/// [`EvalScenario::start_command`]: the driver steps [`CommandRun::run`] and hands it back to
/// [`EvalScenario::finish_command`].
#[derive(Debug)]
pub struct CommandRun {
    run: Run<RunOutput>,
    state: Rc<RunState>,
}

impl CommandRun {
    /// Returns the open run, to step and feed.
    pub fn run(&mut self) -> &mut Run<RunOutput> {
        &mut self.run
    }
}

/// What a run's report keeps besides its verdict and summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// The fs diff and each world's final state and report too.
    Artifacts,
    /// Nothing more (a sweep's runs).
    Summary,
}

/// The report of a run whose main task finished (its verdict may still be `error`).
fn completed(
    report: RunReport<RunOutput>,
    transcript: Option<crate::transcript::Transcript>,
    worlds: Vec<WorldOutcome>,
    fs_diff: Option<FsDiff>,
) -> EvalReport {
    let output = report.output;
    EvalReport {
        run: ScenarioReport {
            summary: report.summary,
            outcomes: output.outcomes,
            fs_diff,
        },
        verdict: output.verdict,
        verifiers: output.verifiers,
        transcript,
        failure: output.failure.map(Box::new),
        worlds,
        harness: output.harness,
        properties: output.properties,
        gates: Vec::new(),
        sandbox: None,
        stderr_tail: Vec::new(),
    }
}

/// The report of a run the engine stopped (deadlock, limit, panic, tape).
fn stopped(
    error: RunError,
    transcript: Option<crate::transcript::Transcript>,
    worlds: Vec<WorldOutcome>,
    fs_diff: Option<FsDiff>,
) -> EvalReport {
    let failure = EvalFailure::from(*error.error);
    // A stopped run reports the records its tape holds and no fingerprint: the fingerprint
    // covers only the part of the run before it stopped.
    let records = error
        .summary
        .tape
        .as_ref()
        .map_or(0, |tape| tape.record_count);
    EvalReport {
        run: ScenarioReport {
            summary: RunSummary {
                records,
                fingerprint: 0,
                ..*error.summary
            },
            outcomes: Vec::new(),
            fs_diff,
        },
        verdict: failure.verdict(),
        verifiers: Vec::new(),
        transcript,
        failure: Some(Box::new(failure)),
        worlds,
        harness: None,
        properties: Vec::new(),
        gates: Vec::new(),
        sandbox: None,
        stderr_tail: Vec::new(),
    }
}

/// The report of a run that could not be built (the tape file cannot be created).
fn unbuilt(seed: u64, error: simtape::SimError) -> EvalReport {
    let failure = EvalFailure::from(error);
    EvalReport {
        run: ScenarioReport {
            summary: RunSummary::unstarted(seed),
            outcomes: Vec::new(),
            fs_diff: None,
        },
        verdict: failure.verdict(),
        verifiers: Vec::new(),
        transcript: None,
        failure: Some(Box::new(failure)),
        worlds: Vec::new(),
        harness: None,
        properties: Vec::new(),
        gates: Vec::new(),
        sandbox: None,
        stderr_tail: Vec::new(),
    }
}

/// Returns the first of a non-empty list of problems.
fn first(mut problems: Vec<ScenarioError>) -> ScenarioError {
    assert!(!problems.is_empty(), "a failed check reports a problem");
    problems.swap_remove(0)
}

/// A problem with eval parts given in Rust: the field it is about, at no place in the file.
fn unplaced(scenario: &Scenario, field: String, message: String) -> ScenarioError {
    ScenarioError {
        file: scenario.path().to_path_buf(),
        line: 0,
        column: 0,
        field,
        message,
    }
}

/// Checks eval parts given in Rust for what the table decoder checks in a file: each fault
/// rule and `world_goal` names a world server, each MCP tool source a server.
fn check_parts(eval: &EvalSpec, report: &mut dyn FnMut(String, String)) {
    let source = |name: &str| {
        let server = eval.mcp.iter().find(|server| server.name == name);
        server.map(|server| &server.source)
    };
    for (index, fault) in eval.mcp_faults.iter().enumerate() {
        let message = match source(&fault.server) {
            Some(McpSource::World(_)) => continue,
            Some(McpSource::Cassette(_)) => format!(
                "faults need a world server, found {:?}, which replays a cassette",
                fault.server
            ),
            None => format!(
                "expected the name of an [[mcp]] server, found {:?}",
                fault.server
            ),
        };
        report(format!("faults.mcp[{index}].server"), message);
    }
    let tools = eval.agent.iter().flat_map(|agent| agent.tools.iter());
    for (index, tool) in tools.enumerate() {
        match tool {
            ToolSource::Mcp(name) if source(name).is_none() => {
                let message = format!(
                    "expected \"fs\", \"process\" or an [[mcp]] server's name, found {name:?}"
                );
                report(format!("agent.tools[{index}]"), message);
            }
            _ => {}
        }
    }
    if eval.harness.is_some() && eval.agent.is_none() && eval.command.is_none() {
        let message = "a [harness] runs an agent's sessions: it needs an agent (the built-in \
                       agent, or an agent program)";
        report("harness".into(), message.into());
    }
    for (index, verifier) in eval.verify.iter().enumerate() {
        if let Check::WorldGoal { server, .. } = &verifier.check {
            if !matches!(source(server), Some(McpSource::World(_))) {
                let message =
                    format!("expected the name of an [[mcp]] world server, found {server:?}");
                report(format!("verify[{index}].server"), message);
            }
        }
    }
}
