//! A run of a scenario whose agent is a program outside the simulation (`[agent] kind =
//! "command"`): the program, started by its adapter in a scratch copy of the `[fs]` root,
//! reaches the scenario's model through the serve endpoints; what it prints, how it ends,
//! what it changed and how the `gate` verifiers' programs end in its directory all reach
//! the simulation as recorded inputs, and the eval pipeline judges it like the built-in
//! agent. One call here is one run, at one seed, with one tape.
//!
//! The order inside the run, fixed so the tape does not depend on timing: requests and the
//! agent's events as the settle rule delivers them; then the rest of its events, its exit,
//! its changes and the gate runs, in that order, at the instant the last request left.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::Serialize;
use simtape::inbox::{Inbox, Outbox};
use simtape::Builder;
use simtape_agent::{
    AdapterKind, AgentExit, AgentSandbox, CommandAgentSpec, CommandEnd, CommandRun, EvalReport,
    EvalScenario, Transcript, TranscriptCall, TranscriptTurn,
};

use crate::adapter::{self, EventKind, Places, SessionEvent};
use crate::driver::{self, Driver, SessionStop};
use crate::gateway::{self, GatewayInput, HttpResponse, SandboxSeen};
use crate::limits::{EVENTS_MAX, OUTPUT_DRAIN};
use crate::normalize::BodyNormalizer;
use crate::place::{Place, Setting, Start};
use crate::process::{self, Exit};
use crate::sandbox::SandboxMode;
use crate::sessions::{GatewaySessions, SessionOrder, SessionStart};
use crate::workdir::FileChange;
use crate::{ServeError, SETTLE_DEFAULT};

/// The files of an agent program's session in an evidence directory: its events, their
/// sidecar, the raw requests and its stderr.
pub const SESSION_FILES: [&str; 4] = [
    "session.ndjson",
    "session.meta.json",
    "requests.ndjson",
    "agent.stderr",
];

/// How to run an agent program.
#[derive(Debug, Clone)]
pub struct CommandOptions {
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub addr: SocketAddr,
    /// The settle window.
    pub settle: Duration,
    /// The program, overriding the scenario's `command` and the adapter's usual binary.
    pub program: Option<PathBuf>,
    /// Volatile-field rules beyond the adapter's, the scenario's `[normalize]` and the agent's
    /// places (which are always applied).
    pub normalizer: BodyNormalizer,
    /// Where to write the session's evidence: `session.ndjson` (its events),
    /// `session.meta.json`, `requests.ndjson` (raw requests) and `agent.stderr`.
    pub evidence: Option<PathBuf>,
    /// The sandbox, overriding the scenario's `[agent] sandbox` (`--no-sandbox` is
    /// `Some(Off)`).
    pub sandbox: Option<SandboxMode>,
}

impl Default for CommandOptions {
    fn default() -> CommandOptions {
        CommandOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            settle: SETTLE_DEFAULT,
            program: None,
            normalizer: BodyNormalizer::default(),
            evidence: None,
            sandbox: None,
        }
    }
}

/// The session around a run, for people (the sidecar of the session log): nothing here is
/// on the tape.
#[derive(Debug, Clone, Serialize)]
pub struct SessionMeta {
    /// The adapter.
    pub adapter: AdapterKind,
    /// The program run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// How it ended.
    pub exit: Option<AgentExit>,
    /// Wall-clock milliseconds it ran.
    pub wall_ms: u64,
    /// Bytes of stderr it wrote beyond the kept [`crate::limits::STDERR_BYTES_MAX`].
    pub stderr_dropped: u64,
    /// Each process of the program, in the order they ran: one for a plain run, one per
    /// session for a `[harness]` run. The fields above sum them (`wall_ms`,
    /// `stderr_dropped`) or are the last one's (`args`, `exit`).
    pub processes: Vec<ProcessMeta>,
    /// How the program was contained: in simtape's sandbox, or on the host.
    pub sandbox: SandboxMode,
    /// What each sandboxed process did outside its project (lookups, connections, writes),
    /// as on the tape; empty on the host.
    pub outside: Vec<SandboxSeen>,
    /// What each sandboxed process wrote in its HOME (not on the tape: see
    /// [`crate::sandbox::Sandbox::writes_outside`]).
    pub home_writes: Vec<Vec<crate::sandbox::view::OutsideWrite>>,
}

/// One process of an agent program, for people (not on the tape).
#[derive(Debug, Clone, Serialize)]
pub struct ProcessMeta {
    /// Its arguments (a harness session's task is among them).
    pub args: Vec<String>,
    /// How it ended.
    pub exit: AgentExit,
    /// Wall-clock milliseconds it ran.
    pub wall_ms: u64,
    /// Bytes of its stderr beyond what was kept.
    pub stderr_dropped: u64,
}

/// One run of an agent program.
#[derive(Debug)]
pub struct CommandSession {
    /// The run's report (its verdict, verifiers, transcript, fs diff).
    pub report: EvalReport,
    /// The session around it.
    pub meta: SessionMeta,
    /// The agent's events, as on the tape.
    pub events: Vec<SessionEvent>,
    /// The first [`crate::limits::STDERR_BYTES_MAX`] bytes of its stderr.
    pub stderr: Vec<u8>,
}

/// Finds the program of `spec`: `explicit`, else the scenario's `command` (a path resolved
/// against `scenario_dir`, or a name on `PATH`), else the adapter's usual binary on `PATH`
/// or in `./node_modules/.bin`. Its model id is resolved too ([`resolve_model`]), so a
/// sweep that checks its programs before any run stops at a model no layer maps.
pub fn resolve_program(
    spec: &CommandAgentSpec,
    explicit: Option<&Path>,
    scenario_dir: &Path,
) -> Result<PathBuf, ServeError> {
    resolve_model(spec, scenario_dir)?;
    // What it is to be shown must be there before anything starts: a missing path is the
    // scenario's to fix, not a sandbox failing mid-run.
    for path in &spec.expose {
        let path = scenario_dir.join(path);
        if !path.exists() {
            return Err(ServeError::MissingExpose { path });
        }
    }
    // The program starts in its scratch directory: a relative path must not mean it there.
    find_program(spec, explicit, scenario_dir)
        .map(|path| std::path::absolute(&path).unwrap_or(path))
}

/// Returns the model id `spec`'s adapter passes its CLI: the scenario's model name through
/// the registry's layers (the scenario's, the project's `simtape.toml` governing
/// `scenario_dir`, the built-in), or the adapter's default (`adapter::models`).
pub fn resolve_model(
    spec: &CommandAgentSpec,
    scenario_dir: &Path,
) -> Result<Option<String>, ServeError> {
    // The project's file is read only when the scenario names a model.
    let project = match spec.model {
        Some(_) => adapter::models::ProjectModels::find(scenario_dir)?,
        None => None,
    };
    Ok(adapter::models::resolve(spec, project.as_ref())?)
}

/// The scenario's `args` as a shell in the scenario's directory would read them: a relative
/// path that names a file there, and none in the project (`[fs] root`, the program's working
/// directory), is made absolute (`command = "python3", args = ["agent.py"]` with agent.py
/// beside the scenario), and so shown read-only in the sandbox. Any other argument is passed
/// as written.
pub fn resolve_args(args: &[String], scenario_dir: &Path, project: Option<&Path>) -> Vec<String> {
    let resolve = |arg: &String| {
        let path = Path::new(arg);
        let in_project = project.is_some_and(|project| project.join(path).is_file());
        let beside = scenario_dir.join(path);
        if arg.starts_with('-') || path.is_absolute() || in_project || !beside.is_file() {
            return arg.clone();
        }
        // Canonical: the sandbox shows the file at its real path, and `dir/../agent.py` would
        // need `dir` shown too.
        let absolute = std::fs::canonicalize(&beside).unwrap_or(beside);
        absolute.display().to_string()
    };
    args.iter().map(resolve).collect()
}

fn find_program(
    spec: &CommandAgentSpec,
    explicit: Option<&Path>,
    scenario_dir: &Path,
) -> Result<PathBuf, ServeError> {
    let mut tried = Vec::new();
    let usual = adapter::usual_binary(spec.adapter);
    // SIMTAPE_CLAUDE_CODE_BIN and the like name an adapter's program for every scenario.
    let variable = format!(
        "SIMTAPE_{}_BIN",
        spec.adapter.name().to_ascii_uppercase().replace('-', "_")
    );
    let from_env = std::env::var_os(&variable).map(PathBuf::from);
    let explicit = explicit.or(from_env.as_deref());
    let name = match (explicit, &spec.command) {
        (Some(path), _) => {
            if path.is_file() {
                return Ok(path.to_path_buf());
            }
            tried.push(path.display().to_string());
            None
        }
        (None, Some(command)) if command.contains('/') => {
            let path = scenario_dir.join(command);
            if path.is_file() {
                return Ok(path);
            }
            tried.push(path.display().to_string());
            None
        }
        (None, Some(command)) => Some(command.clone()),
        (None, None) => usual.map(|(binary, _)| binary.to_string()),
    };
    if let Some(name) = name {
        let path_dirs = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs: Vec<PathBuf> = std::env::split_paths(&path_dirs).collect();
        dirs.push(PathBuf::from("node_modules/.bin"));
        for dir in dirs {
            let candidate = dir.join(&name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
        tried.push(format!("{name} on PATH and in ./node_modules/.bin"));
    }
    if from_env.is_none() {
        tried.push(format!("${variable} (not set)"));
    }
    Err(ServeError::MissingAgent {
        adapter: spec.adapter.name(),
        tried: tried.join(", "),
        install: usual.map(|(_, install)| install),
    })
}

/// Runs `scenario` once at `builder` (from [`EvalScenario::builder`], with its tape set),
/// whichever its agent: the built-in loop inside the simulation, or an agent program
/// through [`run_command`]. The one entry point of `simtape run`, `sweep`, `ci` and
/// `--check-determinism`.
pub fn run_eval(
    scenario: &EvalScenario,
    builder: &mut Builder,
    options: &CommandOptions,
) -> Result<EvalReport, ServeError> {
    match scenario.eval().command {
        Some(_) => run_command(scenario, builder, options).map(|session| session.report),
        None => Ok(scenario.run(builder)),
    }
}

/// Runs `scenario`'s agent program once: `builder` is the scenario's (from
/// [`EvalScenario::builder`], with its tape set); the report is the run's.
pub fn run_command(
    scenario: &EvalScenario,
    builder: &mut Builder,
    options: &CommandOptions,
) -> Result<CommandSession, ServeError> {
    let spec = scenario
        .eval()
        .command
        .clone()
        .ok_or(ServeError::NotACommandAgent)?;
    let scenario_dir = scenario
        .scenario()
        .path()
        .parent()
        .unwrap_or(Path::new(""))
        .to_path_buf();
    let program = resolve_program(&spec, options.program.as_deref(), &scenario_dir)?;
    let model = resolve_model(&spec, &scenario_dir)?;
    let project = scenario.scenario().fs_root();
    let args = resolve_args(&spec.args, &scenario_dir, project.as_deref());
    let spec = CommandAgentSpec { args, ..spec };
    let (inputs, responses) = crate::register(builder);
    let executor = Rc::new(smol::LocalExecutor::new());
    let program_run = ProgramRun {
        scenario,
        spec,
        model,
        program,
        options,
        inputs,
        responses,
    };
    smol::block_on(executor.run(program_run.run(executor.clone(), builder)))
}

/// One run of an agent program, before it starts: what it runs and where it reports.
struct ProgramRun<'a> {
    scenario: &'a EvalScenario,
    spec: CommandAgentSpec,
    /// The model id its adapter passes the CLI (`resolve_model`).
    model: Option<String>,
    program: PathBuf,
    options: &'a CommandOptions,
    inputs: Inbox<GatewayInput>,
    responses: Outbox<HttpResponse>,
}

/// One process of a run, once it ended and its exit was delivered.
struct Ran {
    meta: ProcessMeta,
    stderr: Vec<u8>,
    /// The end of its stderr, for the FAIL reason.
    stderr_tail: Vec<u8>,
    /// Whether its sandbox failed before it started (the run is an ERROR).
    failed: bool,
    /// What it did outside its project (sandboxed): for the tape, and in its scratch places.
    seen: Option<(SandboxSeen, Vec<crate::sandbox::view::OutsideWrite>)>,
}

impl ProgramRun<'_> {
    async fn run(
        self,
        executor: Rc<smol::LocalExecutor<'static>>,
        builder: &mut Builder,
    ) -> Result<CommandSession, ServeError> {
        let (tx, requests) = smol::channel::unbounded();
        let mode = sandbox_mode(&self.spec, self.options);
        let program = match mode {
            SandboxMode::On => crate::place::unshim(&self.program),
            SandboxMode::Off => self.program.clone(),
        };
        ProgramRun { program, ..self }
            .run_in(executor, builder, mode, tx, requests)
            .await
    }

    // Long because: the run's setup (place, driver, sessions, gates) and teardown share the
    // executor, the place and the driver, whose drop order matters (the sandbox last).
    async fn run_in(
        self,
        executor: Rc<smol::LocalExecutor<'static>>,
        builder: &mut Builder,
        mode: SandboxMode,
        tx: smol::channel::Sender<driver::Pending>,
        requests: smol::channel::Receiver<driver::Pending>,
    ) -> Result<CommandSession, ServeError> {
        // Namespaces that cannot be had are an input error before anything starts (no tape).
        if mode == SandboxMode::On {
            crate::sandbox::probe().map_err(ServeError::Sandbox)?;
        }
        let setting = Setting {
            scenario: self.scenario,
            capabilities: &builder.capabilities(),
            program: &self.program,
            args: &self.spec.args,
            addr: self.options.addr,
            executor: executor.clone(),
            requests: tx,
            keeps_state: adapter::keeps_state(self.spec.adapter),
        };
        let mut place = match mode {
            SandboxMode::On => Place::sandboxed(setting)?,
            SandboxMode::Off => Place::host(setting).await?,
        };
        builder.sandbox(place.mode().label());
        let events_seen = Rc::new(RefCell::new(Vec::new()));
        let gateway = (self.inputs, self.responses);
        let (mut command, orders) = start(self.scenario, builder, gateway, Rc::clone(&events_seen))
            .map_err(ServeError::Unbuilt)?;
        // The adapter's rules, the caller's, the scenario's, then the agent's places.
        let sight = place.sight().clone();
        let normalizer = adapter::rules(self.spec.adapter)
            .then(self.options.normalizer.clone())
            .with_scenario_rules(&self.scenario.eval().normalize)
            .for_agent(Some(&sight.work), Some(&sight.home.display().to_string()));
        let scenario_settle = Duration::from_millis(self.spec.settle_ms.unwrap_or(0));
        let settle = self
            .options
            .settle
            .max(adapter::settle_min(self.spec.adapter))
            .max(scenario_settle);
        // A crash report names the script it ran, beside the scenario (`resolve_args`).
        let mut tail_normalizer = normalizer.clone();
        let scenario_dir = self.scenario.scenario().path().parent();
        let scenario_dir = scenario_dir.filter(|dir| !dir.as_os_str().is_empty());
        if let Ok(dir) = std::path::absolute(scenario_dir.unwrap_or(Path::new("."))) {
            tail_normalizer.literal(&dir.display().to_string(), "<scenario>");
        }
        let mut driver = Driver::new(self.inputs, self.responses, settle, normalizer);
        driver.orders = orders;
        driver.events_at_exit = adapter::events_at_exit(self.spec.adapter);
        let requests_log = self
            .options
            .evidence
            .as_ref()
            .map(|d| d.join(SESSION_FILES[2]));
        if let Some(dir) = &self.options.evidence {
            std::fs::create_dir_all(dir).map_err(|source| ServeError::SessionLog {
                path: dir.clone(),
                source,
            })?;
        }
        driver.session_log = crate::session_log(requests_log.as_deref())?;
        let run = command.run();
        let mut processes = Vec::new();
        match orders {
            None => {
                let task = self.spec.task.clone();
                let ran = self
                    .process(
                        &mut place,
                        &executor,
                        &requests,
                        &mut driver,
                        run,
                        &task,
                        None,
                    )
                    .await?;
                if ran.meta.exit != AgentExit::TimedOut && !ran.failed {
                    self.deliver_changes(&place, &mut driver, run);
                    let gates = place.gates(self.scenario).await;
                    driver.deliver_input(run, GatewayInput::Gates(gates));
                }
                place.end();
                processes.push(ran);
            }
            Some(orders) => {
                // Each session the harness asks for: its files laid out, one process, its
                // exit and changes delivered; until the run asks for no more.
                while let Some(start) = next_session(run, orders) {
                    let files = Some(start.files.as_slice());
                    let ran = self
                        .process(
                            &mut place,
                            &executor,
                            &requests,
                            &mut driver,
                            run,
                            &start.task,
                            files,
                        )
                        .await?;
                    self.deliver_changes(&place, &mut driver, run);
                    place.end();
                    processes.push(ran);
                }
            }
        }
        driver.close(run);
        let mut report = self.scenario.finish_command(command);
        let mode = place.mode();
        report.sandbox = Some(mode.label().to_string());
        // A program that failed says why on its stderr: its last lines go with the FAIL.
        if let Some(last) = processes
            .last()
            .filter(|ran| ran.meta.exit != AgentExit::Exited(0))
        {
            report.stderr_tail =
                process::tail_lines(&last.stderr_tail, |line| tail_normalizer.apply(line));
        }
        drop(place);
        let mut stderr = Vec::new();
        for ran in &processes {
            stderr.extend_from_slice(&ran.stderr);
        }
        let (mut outside, mut home_writes) = (Vec::new(), Vec::new());
        for ran in &mut processes {
            if let Some((seen, home)) = ran.seen.take() {
                outside.push(seen);
                home_writes.push(home);
            }
        }
        let processes: Vec<ProcessMeta> = processes.into_iter().map(|ran| ran.meta).collect();
        let last = processes.last();
        let session = CommandSession {
            report,
            meta: SessionMeta {
                adapter: self.spec.adapter,
                program: self.program.clone(),
                args: last.map(|ran| ran.args.clone()).unwrap_or_default(),
                exit: last.map(|ran| ran.exit),
                wall_ms: processes.iter().map(|ran| ran.wall_ms).sum(),
                stderr_dropped: processes.iter().map(|ran| ran.stderr_dropped).sum(),
                processes,
                sandbox: mode,
                outside,
                home_writes,
            },
            events: events_seen.take(),
            stderr,
        };
        if let Some(dir) = &self.options.evidence {
            write_evidence(dir, &session).map_err(|source| ServeError::SessionLog {
                path: dir.clone(),
                source,
            })?;
        }
        Ok(session)
    }

    /// Runs the program once with `task`: starts it in its place, drives the run while it
    /// works, stops it when it runs over its timeout or the run orders it stopped, then
    /// delivers the rest of its output, what it did outside its project (sandboxed) and its
    /// exit.
    #[allow(clippy::too_many_arguments)]
    // Long because: one process's life (start, drive, stop, drain output, what it did outside,
    // exit) in the order its inputs must reach the tape.
    async fn process<T: 'static>(
        &self,
        place: &mut Place,
        executor: &smol::LocalExecutor<'static>,
        requests: &smol::channel::Receiver<driver::Pending>,
        driver: &mut Driver,
        run: &mut simtape::run::Run<T>,
        task: &str,
        files: Option<&[FileChange]>,
    ) -> Result<Ran, ServeError> {
        let sight = place.sight().clone();
        let spec = CommandAgentSpec {
            task: task.to_string(),
            ..self.spec.clone()
        };
        let servers = self.scenario.eval().mcp.iter();
        let servers: Vec<String> = servers.map(|server| server.name.clone()).collect();
        let launch = adapter::launch(
            &spec,
            self.model.as_deref(),
            &Places {
                base_url: &sight.base_url,
                home: &sight.home,
                mcp: (!servers.is_empty()).then_some((&servers[..], sight.mcp_config.as_path())),
                sandboxed: place.mode() == SandboxMode::On,
            },
        );
        let mut env = launch.env;
        env.extend(self.spec.env.iter().cloned());
        let started = Instant::now();
        let started_in = place
            .start(Start {
                program: &self.program,
                args: &launch.args,
                env,
                files,
                config_files: &launch.files,
            })
            .await;
        let (stdout, stderr) = match started_in {
            Ok(streams) => streams,
            // A program that cannot be started is the scenario's to fix (exit 2, naming it);
            // a sandbox that fails otherwise once the run has begun ends the run as an ERROR
            // naming the step, and its tape is whole.
            Err(ServeError::Sandbox(error @ crate::sandbox::SandboxError::Exec { .. })) => {
                return Err(ServeError::Sandbox(error));
            }
            Err(error) if place.mode() == SandboxMode::On => {
                driver.deliver_input(run, GatewayInput::SandboxFailed(error.to_string()));
                driver.deliver_input(run, GatewayInput::AgentExited(AgentExit::Signaled));
                return Ok(Ran {
                    meta: ProcessMeta {
                        args: launch.args,
                        exit: AgentExit::Signaled,
                        wall_ms: 0,
                        stderr_dropped: 0,
                    },
                    stderr: error.to_string().into_bytes(),
                    stderr_tail: Vec::new(),
                    failed: true,
                    seen: None,
                });
            }
            Err(other) => return Err(other),
        };
        driver.clock = place.clock();
        driver.busy = place
            .busy_probe()
            .filter(|_| adapter::settle_until_idle(self.spec.adapter));
        // The agent's output: events to the driver as they are read; stderr kept, capped.
        let (event_tx, event_rx) = smol::channel::unbounded();
        let adapter_kind = self.spec.adapter;
        let reader = executor.spawn(async move {
            let mut parser = adapter::parser(adapter_kind);
            let mut sent = 0;
            let mut send = |event| {
                sent += 1;
                match sent.cmp(&EVENTS_MAX) {
                    std::cmp::Ordering::Less => drop(event_tx.try_send(event)),
                    std::cmp::Ordering::Equal => {
                        let message = format!("over {EVENTS_MAX} events: the rest are dropped");
                        drop(event_tx.try_send(EventKind::Error { message }));
                    }
                    std::cmp::Ordering::Greater => {}
                }
            };
            process::read_lines(stdout, |line| {
                parser.line(line).into_iter().for_each(&mut send)
            })
            .await;
            parser.finish().into_iter().for_each(send);
        });
        let stderr_reader = executor.spawn(process::read_stderr(stderr));
        driver.events = Some(event_rx);
        let timeout = Duration::from_millis(self.spec.timeout_ms);
        let ended = {
            let ending = async {
                smol::future::or(
                    async { SessionStop::AgentExited(exit_of(place.wait().await)) },
                    async {
                        smol::Timer::after(timeout).await;
                        SessionStop::Stopped
                    },
                )
                .await
            };
            driver.drive(run, requests, ending).await
        };
        let exit = match ended {
            Some(SessionStop::AgentExited(exit)) => {
                place.sweep();
                exit
            }
            // Over its timeout (or the run ended first): the whole group is stopped.
            Some(SessionStop::Stopped) => {
                place.stop().await;
                AgentExit::TimedOut
            }
            // The harness ended the session at its turn budget: as it would be killed.
            Some(SessionStop::TurnsSpent) | None => exit_of(place.stop().await),
        };
        let wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        // The rest of its output, what it did outside its project, then its exit, in that
        // order.
        smol::future::or(reader, async {
            smol::Timer::after(OUTPUT_DRAIN).await;
        })
        .await;
        driver.deliver_events(run);
        let seen = place.seen();
        if let Some((tape, _)) = &seen {
            driver.deliver_input(run, GatewayInput::Sandbox(tape.clone()));
        }
        driver.deliver_input(run, GatewayInput::AgentExited(exit));
        // A process that left the group may hold stderr open: wait only so long for it.
        let stderr = smol::future::or(stderr_reader, async {
            smol::Timer::after(OUTPUT_DRAIN).await;
            process::Stderr::default()
        })
        .await;
        Ok(Ran {
            meta: ProcessMeta {
                args: launch.args,
                exit,
                wall_ms,
                stderr_dropped: stderr.dropped,
            },
            stderr: stderr.head,
            stderr_tail: stderr.tail,
            failed: false,
            seen,
        })
    }

    /// Delivers what the agent changed in its project. A directory that cannot be read is
    /// said on the tape; the run still goes on.
    fn deliver_changes<T: 'static>(
        &self,
        place: &Place,
        driver: &mut Driver,
        run: &mut simtape::run::Run<T>,
    ) {
        let (changes, skipped) = place.changes().unwrap_or_else(|error| {
            let message = format!("the working directory could not be compared: {error}");
            let event = vec![EventKind::Error { message }];
            driver.deliver_input(run, GatewayInput::Session(event));
            (Vec::new(), Vec::new())
        });
        driver.deliver_input(run, GatewayInput::Workdir { changes, skipped });
    }
}

/// Whether `spec`'s program runs sandboxed: `--no-sandbox` turns it off, else the scenario's
/// `[agent] sandbox` decides.
fn sandbox_mode(spec: &CommandAgentSpec, options: &CommandOptions) -> SandboxMode {
    match (options.sandbox, spec.sandbox) {
        (Some(mode), _) => mode,
        (None, AgentSandbox::On) => SandboxMode::On,
        (None, AgentSandbox::Off) => SandboxMode::Off,
    }
}

/// Runs `run` until it awaits input, and returns the session it asks for next, if any.
fn next_session<T: 'static>(
    run: &mut simtape::run::Run<T>,
    orders: Outbox<SessionOrder>,
) -> Option<SessionStart> {
    run.run_until_idle();
    // A stop order of the session that just ended was acted on already.
    run.take(orders).into_iter().find_map(|order| match order {
        SessionOrder::Start(start) => Some(start),
        SessionOrder::Stop { .. } => None,
    })
}

fn exit_of(exit: Exit) -> AgentExit {
    match exit {
        Exit::Code(code) => AgentExit::Exited(code),
        Exit::Signal => AgentExit::Signaled,
    }
}

/// Runs `scenario`'s agent-program run again from the inputs recorded on `tape`, without
/// the program: the same seed and scenario give the same tape bytes (`simtape replay`).
pub fn replay_command(
    scenario: &EvalScenario,
    builder: &mut Builder,
    tape: &Path,
) -> Result<EvalReport, crate::ReplayError> {
    use simtape::run::{recorded_inputs, ReplayInputError};
    use simtape::tape::TapeReader;
    let reader = TapeReader::open(tape)?;
    // The tape says how the program was contained; the replay's header says the same.
    let sandbox = reader.header().sandbox.clone();
    if let Some(label) = &sandbox {
        builder.sandbox(label);
    }
    let recorded = recorded_inputs(reader.keep_blobs(true))?;
    let gateway = crate::register(builder);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let (mut command, _) = start(scenario, builder, gateway, seen).map_err(|report| {
        crate::ReplayError::Inputs(ReplayInputError::BadInput {
            index: 0,
            detail: report.verdict.to_string(),
        })
    })?;
    command.run().replay_inputs(&recorded)?;
    let mut report = scenario.finish_command(command);
    report.sandbox = sandbox;
    Ok(report)
}

/// Starts the run of an agent program: the driver's side inside it is the gateway for one
/// session, or, in a `[harness]` run, the gateway for each session the harness asks for,
/// through an outbox of orders (returned) registered after the gateway's own.
fn start(
    scenario: &EvalScenario,
    builder: &mut Builder,
    (inputs, responses): (Inbox<GatewayInput>, Outbox<HttpResponse>),
    seen: Rc<RefCell<Vec<SessionEvent>>>,
) -> Result<(CommandRun, Option<Outbox<SessionOrder>>), Box<EvalReport>> {
    if scenario.eval().harness.is_none() {
        let spec = scenario.eval().command.as_ref();
        let from_traffic = spec.is_some_and(|spec| spec.adapter == AdapterKind::Generic);
        let command = scenario.start_command(builder, move |host| {
            command_side(host, inputs, responses, seen, from_traffic)
        })?;
        return Ok((command, None));
    }
    let orders = crate::sessions::register(builder);
    let command = scenario.start_command_sessions(builder, move |host| {
        Rc::new(GatewaySessions {
            host,
            inputs,
            responses,
            orders,
            seen,
        })
    })?;
    Ok((command, Some(orders)))
}

/// The driver's side inside the simulation: serves the agent's requests, then applies its
/// changes to the overlay and says how the session ended.
async fn command_side(
    host: simtape::Host,
    inputs: Inbox<GatewayInput>,
    responses: Outbox<HttpResponse>,
    seen: Rc<RefCell<Vec<SessionEvent>>>,
    from_traffic: bool,
) -> CommandEnd {
    let outcome = gateway::gateway(host.clone(), inputs, responses).await;
    apply_changes(&host, &outcome.workdir);
    *seen.borrow_mut() = outcome.events.clone();
    let mut transcript = transcript(&outcome.events);
    // A program that says nothing of its tool calls (a generic one printing plain lines) is
    // counted from its model traffic: what the model answered, what came back.
    if from_traffic && transcript.calls().next().is_none() {
        transcript.turns = outcome.traffic.turns();
    }
    // An agent program's retries are its own; what simtape sees is each faulted answer it had
    // to get past.
    transcript.retries = u32::try_from(outcome.model_faults).unwrap_or(u32::MAX);
    let exit = outcome.agent_exit.unwrap_or(AgentExit::Signaled);
    // A program that failed gave no answer, whatever it printed last.
    if exit != AgentExit::Exited(0) {
        transcript.end = Some(simtape_agent::EndReason::AgentExit);
        transcript.answer = None;
    }
    CommandEnd {
        transcript,
        exit,
        unmatched: unmatched(&outcome),
        gates: outcome.gates,
        denied: outcome.denied,
        sandbox_failed: outcome.sandbox_failed,
    }
}

/// The first request of a session that no recording matched, as the run's error says it.
pub(crate) fn unmatched(outcome: &gateway::GatewayOutcome) -> Option<String> {
    match (&outcome.unmatched, &outcome.mcp_unmatched) {
        (Some(digest), _) => Some(format!("a model request, sha256:{digest}")),
        (None, Some(mcp)) => Some(format!("an MCP request: {mcp}")),
        (None, None) => None,
    }
}

/// Applies the agent's changes to the run's overlay (when it has `[fs]`).
pub(crate) fn apply_changes(host: &simtape::Host, changes: &[FileChange]) {
    if let Some(fs) = host.capabilities().fs() {
        fs.with_state(|fs| apply(fs.overlay_mut(), changes));
    }
}

/// Applies the agent's changes to the overlay. A change the overlay refuses (a path it
/// cannot hold) is left out: the fs verifiers then see the overlay as it is.
fn apply(overlay: &mut simtape::cap::fs::Overlay, changes: &[FileChange]) {
    for change in changes {
        let _ = match change {
            FileChange::Mkdir(path) => overlay.create_dir(path),
            FileChange::Write(path, bytes) => overlay.write(path, bytes.clone()),
            FileChange::Delete(path) => overlay.remove(path),
            FileChange::RemoveDir(path) => overlay.remove_dir(path),
        };
    }
}

/// The transcript of an agent's events: a turn begins with the model's first message or
/// tool call after the previous turn's tool results.
pub fn transcript(events: &[SessionEvent]) -> Transcript {
    let mut transcript = Transcript::default();
    let mut open = false;
    for event in events {
        let begin = |transcript: &mut Transcript, open: &mut bool| {
            if !*open {
                let turn = u32::try_from(transcript.turns.len() + 1).unwrap_or(u32::MAX);
                transcript.turns.push(TranscriptTurn {
                    turn,
                    text: String::new(),
                    tool_calls: Vec::new(),
                });
                *open = true;
            }
        };
        match &event.kind {
            EventKind::Message { text } => {
                begin(&mut transcript, &mut open);
                let turn = transcript.turns.last_mut().expect("a turn was begun");
                if !turn.text.is_empty() {
                    turn.text.push('\n');
                }
                turn.text.push_str(text);
            }
            EventKind::ToolStart { id, name, input } => {
                begin(&mut transcript, &mut open);
                let turn = transcript.turns.last_mut().expect("a turn was begun");
                turn.tool_calls.push(TranscriptCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: input.clone(),
                    ok: true,
                    result: String::new(),
                });
            }
            EventKind::ToolEnd {
                id,
                output,
                is_error,
            } => {
                open = false;
                let mut calls = transcript
                    .turns
                    .iter_mut()
                    .rev()
                    .flat_map(|t| t.tool_calls.iter_mut());
                if let Some(call) = calls.find(|call| &call.id == id) {
                    call.ok = !is_error;
                    call.result = output.clone();
                }
            }
            EventKind::Result { text, is_error } => {
                if !is_error {
                    transcript.answer = Some(text.clone());
                    transcript.end = Some(simtape_agent::EndReason::FinalAnswer);
                }
            }
            EventKind::SessionStart { .. } | EventKind::Usage { .. } | EventKind::Error { .. } => {}
        }
    }
    transcript
}

/// Writes the session's evidence into `dir`.
fn write_evidence(dir: &Path, session: &CommandSession) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let [events, meta, _, stderr] = SESSION_FILES;
    let mut log = std::io::BufWriter::new(std::fs::File::create(dir.join(events))?);
    for event in &session.events {
        let line = serde_json::to_string(event).map_err(std::io::Error::other)?;
        writeln!(log, "{line}")?;
    }
    log.flush()?;
    let sidecar = serde_json::to_string_pretty(&session.meta).map_err(std::io::Error::other)?;
    std::fs::write(dir.join(meta), sidecar + "\n")?;
    std::fs::write(dir.join(stderr), &session.stderr)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use simtape_agent::Permission;

    fn spec(command: Option<&str>) -> CommandAgentSpec {
        CommandAgentSpec {
            adapter: AdapterKind::Generic,
            command: command.map(String::from),
            args: Vec::new(),
            env: Vec::new(),
            task: "t".into(),
            timeout_ms: 1000,
            settle_ms: None,
            permission: Permission::Full,
            clock: simtape_agent::AgentClock::Host,
            sandbox: AgentSandbox::On,
            expose: Vec::new(),
            line: 1,
            variants: Vec::new(),
            model: None,
            models: Default::default(),
        }
    }

    #[test]
    fn events_make_turns_calls_and_the_answer() {
        // A turn begins at the model's first message or call after the previous turn's tool
        // results; a tool's end fills its call; an erroneous result is no answer.
        let at = |kind| SessionEvent {
            timestamp_ms: 0,
            kind,
        };
        let events = [
            at(EventKind::Message {
                text: "Reading.".into(),
            }),
            at(EventKind::ToolStart {
                id: "a".into(),
                name: "Read".into(),
                input: serde_json::json!({"file_path": "x"}),
            }),
            at(EventKind::ToolEnd {
                id: "a".into(),
                output: "x = 1".into(),
                is_error: false,
            }),
            at(EventKind::ToolStart {
                id: "b".into(),
                name: "Bash".into(),
                input: serde_json::Value::Null,
            }),
            at(EventKind::ToolEnd {
                id: "b".into(),
                output: "boom".into(),
                is_error: true,
            }),
            at(EventKind::Message {
                text: "Done.".into(),
            }),
            at(EventKind::Result {
                text: "Done.".into(),
                is_error: false,
            }),
        ];
        let transcript = transcript(&events);
        type Call = (String, bool, String);
        let shape: Vec<(String, Vec<Call>)> = transcript
            .turns
            .iter()
            .map(|turn| {
                let calls = turn.tool_calls.iter();
                let calls = calls.map(|c| (c.name.clone(), c.ok, c.result.clone()));
                (turn.text.clone(), calls.collect())
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (
                    "Reading.".to_string(),
                    vec![("Read".to_string(), true, "x = 1".to_string())]
                ),
                (
                    String::new(),
                    vec![("Bash".to_string(), false, "boom".to_string())]
                ),
                ("Done.".to_string(), vec![]),
            ]
        );
        assert_eq!(transcript.answer.as_deref(), Some("Done."));
        let failed = [at(EventKind::Result {
            text: "error_max_turns".into(),
            is_error: true,
        })];
        assert_eq!(super::transcript(&failed).answer, None);
    }

    #[test]
    fn a_program_is_resolved_to_an_absolute_path() {
        // The program starts in its scratch directory, so a relative path must be made
        // absolute where it was given (the command line's directory, the scenario's).
        let dir = std::env::temp_dir().join(format!("simtape-resolve-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/agent"), "#!/bin/sh\n").unwrap();
        let found = resolve_program(&spec(Some("bin/agent")), None, &dir).unwrap();
        assert_eq!(found, dir.join("bin/agent"));
        let relative = Path::new("Cargo.toml");
        let explicit = resolve_program(&spec(None), Some(relative), &dir).unwrap();
        assert!(
            explicit.is_absolute() && explicit.ends_with("Cargo.toml"),
            "{explicit:?}"
        );
        let missing = resolve_program(&spec(Some("bin/none")), None, &dir).unwrap_err();
        assert!(missing.to_string().contains("bin/none"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
