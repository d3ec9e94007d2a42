//! `simtape serve`: one simulation whose model endpoints other processes reach over loopback
//! HTTP, with everything they ask on the one tape.
//!
//! An agent under test (Claude Code, a Python agent on the OpenAI or Anthropic SDK, …) is a
//! real process with its own threads and clock; the simulation is single-threaded and reads
//! no clock. The two meet at an **open run** (`simtape::run`): this crate's driver accepts
//! HTTP on loopback, turns each request into an `input` record through the run's `gateway`
//! inbox, lets the simulation answer it through the scenario's actors (the LLM actor's
//! fixtures, faults and latency model, in virtual time), and sends the answer back in the
//! provider's wire format, JSON or a server-sent event stream.
//!
//! - `gateway` — the simulation side: routes a request to the LLM actor and renders the answer.
//! - `driver` — the outside: the hyper server on smol, the settle rule, the agent process.
//! - `mcp_http` — the scenario's MCP servers over Streamable HTTP (`/mcp/NAME`), and the
//!   MCP config file handed to the agent.
//! - `bridge` — `simtape mcp bridge`: a stdio MCP server forwarding to an `/mcp/NAME` endpoint.
//! - `streamable` — Streamable HTTP for an MCP server outside any simulation
//!   (`simtape mcp replay|world --http`), with the same transport rules as `mcp_http`.
//! - [`wire`] — the providers' wire formats, both sides (record mode calls in them, the
//!   gateway answers in them).
//! - [`mcp_stdio`] — the stdio MCP commands' I/O (record, replay, verify, world).
//! - [`outside`] — the outside world's side of the core's seams: record mode's HTTP client,
//!   real program runs and process tapes (`simtape run --record`, `[process]` real/record).
//! - [`sweep`] — a seed sweep's thread pool, its result stores (`--resume`, `--cache`) and
//!   the failure database's known failures replayed first.
//! - [`evidence`] — `simtape run --evidence DIR`: the evidence directory's files.
//! - [`shard`] — `--shard auto`: the shard a scheduler started this copy of a sweep as.
//! - [`signals`] — the process's signals: what ends a session or a sweep, what is passed on.
//!
//! The tape of a serve session replays without the agent: [`replay`] feeds a new run the
//! tape's inputs and gives the same bytes.

#![warn(missing_docs)]

pub mod adapter;
pub mod bridge;
pub mod clock;
pub mod command;
pub mod evidence;
pub mod files;
pub mod gateway;
pub mod golden;
pub mod limits;
pub mod mcp_http;
mod mcp_path;
pub mod mcp_stdio;
pub mod normalize;
pub mod outside;
pub mod parallel;
mod place;
pub mod process;
pub mod rerun;
pub mod sandbox;
pub mod sessions;
pub mod shard;
pub mod signals;
pub mod streamable;
pub mod sweep;
pub mod wire;
pub mod workdir;

mod body;
mod contained;
mod driver;
mod intake;
mod judge;
mod order;

use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use simtape::inbox::{Inbox, Outbox};
use simtape::run::{recorded_inputs, ReplayInputError};
use simtape::tape::TapeReader;
use simtape::{Builder, RunError, RunReport};
use simtape_agent::AgentExit;

pub use gateway::{BodyEnd, GatewayInput, GatewayOutcome, HttpRequest, HttpResponse};
pub use normalize::BodyNormalizer;

/// The name of the gateway's inbox on the tape.
pub const GATEWAY_INBOX: &str = "gateway";
/// The name of the gateway's outbox.
pub const GATEWAY_OUTBOX: &str = "gateway-responses";
/// The API key handed to the agent: the gateway accepts any, but SDKs insist on one.
pub const DUMMY_API_KEY: &str = "simtape-serve";
/// The settle window's default: how long the agent must be quiet before virtual time moves.
pub const SETTLE_DEFAULT: Duration = Duration::from_millis(20);

/// The agent process to run against the endpoints.
#[derive(Debug, Clone)]
pub struct AgentCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment, after the endpoint variables.
    pub env: Vec<(String, String)>,
    /// Its working directory (the current one when `None`).
    pub cwd: Option<std::path::PathBuf>,
    /// A wall-clock limit, after which the agent is killed and the session ends.
    pub timeout: Option<Duration>,
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub addr: SocketAddr,
    /// The settle window (see `driver`'s docs).
    pub settle: Duration,
    /// The agent to run; without one, serve until `stop` fires.
    pub command: Option<AgentCommand>,
    /// The rules for volatile fields of request bodies (see [`normalize`]); the agent's
    /// working directory and `HOME`, when set in its command, are added as `<cwd>`/`<home>`.
    pub normalizer: BodyNormalizer,
    /// Where to write the raw requests, one JSON line each (the tape holds them normalized).
    pub session_log: Option<std::path::PathBuf>,
    /// Runs the agent command in simtape's sandbox, over this project; `None` runs it on the
    /// host (`--no-sandbox`).
    pub sandbox: Option<ServeSandbox>,
}

/// The sandbox of a `serve -- CMD` agent.
#[derive(Debug, Clone)]
pub struct ServeSandbox {
    /// The project at `/project` (an overlay: the host's copy is never changed).
    pub project: std::path::PathBuf,
    /// The policy for the agent's own connections.
    pub network: simtape::cap::net::Network,
    /// Host paths shown to it read-only, beyond its program and interpreter.
    pub expose: Vec<std::path::PathBuf>,
}

/// The endpoints of a serve session, as an agent's environment names them.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The address the server listens on.
    pub addr: SocketAddr,
    /// The variables an agent needs: base URLs of the providers and dummy keys.
    pub env: Vec<(String, String)>,
}

impl Endpoints {
    pub(crate) fn new(addr: SocketAddr) -> Endpoints {
        let base = format!("http://{addr}");
        Endpoints {
            addr,
            env: vec![
                ("ANTHROPIC_BASE_URL".into(), base.clone()),
                ("ANTHROPIC_API_KEY".into(), DUMMY_API_KEY.into()),
                ("OPENAI_BASE_URL".into(), format!("{base}/v1")),
                ("OPENAI_API_KEY".into(), DUMMY_API_KEY.into()),
                ("GOOGLE_GEMINI_BASE_URL".into(), base.clone()),
                ("GEMINI_API_KEY".into(), DUMMY_API_KEY.into()),
                ("SIMTAPE_SERVE_URL".into(), base),
            ],
        }
    }
}

/// What stopped a session before it could serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The run could not be built (its tape file cannot be created, say).
    #[error("cannot start the run: {0}")]
    Build(simtape::SimError),
    /// The session log could not be created.
    #[error("cannot write the session log {path}: {source}")]
    SessionLog {
        /// The log's path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The scenario's agent program was not found.
    #[error("the {adapter} agent's program was not found (looked for {tried}){}", match install { Some(install) => format!("; install it with `{install}`, or name it with --agent-bin PATH or [agent] command"), None => "; name it with --agent-bin PATH or [agent] command".to_string() })]
    MissingAgent {
        /// The adapter's name.
        adapter: &'static str,
        /// Where it looked.
        tried: String,
        /// The command that installs it (`npm install -g PACKAGE`), when there is one.
        install: Option<&'static str>,
    },
    /// The scenario's model name has no id for its adapter, or the project's registry file
    /// is not one.
    #[error(transparent)]
    Model(#[from] crate::adapter::models::ModelError),
    /// A path `[agent] expose` names does not exist.
    #[error("[agent] expose: {} does not exist (a path to show the program read-only, relative to the scenario's directory)", .path.display())]
    MissingExpose {
        /// The path, as resolved.
        path: std::path::PathBuf,
    },
    /// `[agent] clock = "virtual"` needs libfaketime, which is not installed.
    #[error("[agent] clock = \"virtual\" needs libfaketime: install the Debian package `faketime` (or name the library in SIMTAPE_LIBFAKETIME)")]
    MissingFaketime,
    /// The scenario's agent is not a program (`[agent] kind = "command"`).
    #[error("the scenario's [agent] is not kind = \"command\"")]
    NotACommandAgent,
    /// The agent's scratch directory could not be made or read.
    #[error("the agent's scratch directory: {0}")]
    Workdir(crate::workdir::WorkdirError),
    /// The run could not be built; the report says why.
    #[error("cannot start the run: {}", .0.verdict)]
    Unbuilt(Box<simtape_agent::EvalReport>),
    /// The agent's MCP config file could not be written.
    #[error("cannot write the MCP config under {dir}: {source}")]
    McpConfig {
        /// The directory it goes under.
        dir: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The agent's sandbox could not be had, or failed.
    #[error(transparent)]
    Sandbox(crate::sandbox::SandboxError),
    /// The agent command could not be started.
    #[error("cannot start the agent {program:?}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// How a served session ended.
#[derive(Debug)]
pub struct Session {
    /// The run: its report (output = the gateway's outcome) or the error that ended it.
    pub report: Result<RunReport<GatewayOutcome>, RunError>,
    /// Whether the agent overran its timeout and was killed.
    pub timed_out: bool,
}

/// Registers the gateway's inbox and outbox on `builder` (serve and replay register the same
/// actors in the same order, so their tapes line up).
pub fn register(builder: &mut Builder) -> (Inbox<GatewayInput>, Outbox<HttpResponse>) {
    (
        builder.inbox::<GatewayInput>(GATEWAY_INBOX),
        builder.outbox::<HttpResponse>(GATEWAY_OUTBOX),
    )
}

/// Serves `builder`'s run on `options.addr` until the agent exits (or, without an agent,
/// until `stop` receives), then finishes the run. `listening` is called once the port is
/// bound, with the endpoints (to print them).
pub fn serve(
    builder: &mut Builder,
    options: ServeOptions,
    stop: smol::channel::Receiver<()>,
    listening: impl FnOnce(&Endpoints),
) -> Result<Session, ServeError> {
    serve_until(builder, options, Until::Stopped(stop), listening)
}

/// Serves `builder`'s run for an agent that runs in another process simtape did not start
/// (a test function inside pytest: `simtape serve --in-process`), until that agent reports
/// how it ended on `exits`; a closed channel is an agent that ended without saying
/// (`Signaled`). Its end goes on the tape as [`GatewayInput::InProcessExited`], whose
/// verdict also asks that it called the model and that the verifiers of `verify` serve can
/// judge hold (`answer`, `tool_called`, `world_goal`: see [`simtape_agent::judge_observed`]).
pub fn serve_in_process(
    builder: &mut Builder,
    options: ServeOptions,
    exits: smol::channel::Receiver<AgentExit>,
    verify: Vec<simtape_agent::VerifySpec>,
    listening: impl FnOnce(&Endpoints),
) -> Result<Session, ServeError> {
    let verify = Rc::from(verify);
    serve_until(
        builder,
        options,
        Until::Reported { exits, verify },
        listening,
    )
}

/// What ends a session without an agent command.
enum Until {
    /// The user (Ctrl-C): no exit goes on the tape.
    Stopped(smol::channel::Receiver<()>),
    /// The in-process agent's own report of its exit; then the verifiers serve judges.
    Reported {
        exits: smol::channel::Receiver<AgentExit>,
        verify: Rc<[simtape_agent::VerifySpec]>,
    },
}

impl Until {
    /// The verifiers serve judges when the session ends: an in-process agent's only.
    fn verify(&self) -> Rc<[simtape_agent::VerifySpec]> {
        match self {
            Until::Reported { verify, .. } => verify.clone(),
            Until::Stopped(_) => Rc::from([]),
        }
    }
}

fn serve_until(
    builder: &mut Builder,
    options: ServeOptions,
    until: Until,
    listening: impl FnOnce(&Endpoints),
) -> Result<Session, ServeError> {
    let (inputs, responses) = register(builder);
    let executor = Rc::new(smol::LocalExecutor::new());
    smol::block_on(executor.run(session(
        executor.clone(),
        builder,
        inputs,
        responses,
        options,
        until,
        listening,
    )))
}

async fn session(
    executor: Rc<smol::LocalExecutor<'static>>,
    builder: &mut Builder,
    inputs: Inbox<GatewayInput>,
    responses: Outbox<HttpResponse>,
    options: ServeOptions,
    until: Until,
    listening: impl FnOnce(&Endpoints),
) -> Result<Session, ServeError> {
    if let (Some(command), Some(sandbox)) = (&options.command, &options.sandbox) {
        let contained = contained::Contained::start(builder, command, sandbox)?;
        listening(&contained.endpoints);
        return contained
            .session(executor, builder, inputs, responses, &options)
            .await;
    }
    let (listener, mut endpoints) = bind(options.addr).await?;
    let (mcp, mcp_config) =
        mcp_http::setup(&builder.capabilities(), endpoints.addr, &mut endpoints.env)?;
    listening(&endpoints);
    let (tx, rx) = smol::channel::unbounded();
    let acceptor = executor.spawn(driver::accept(executor.clone(), listener, tx, mcp));
    // The run is built (its tape file created) only once the agent has started, so an agent
    // that cannot start leaves no tape behind; its first requests wait in the channel.
    let mut child = match &options.command {
        Some(command) => Some(spawn_agent(command, &endpoints)?),
        None => None,
    };
    if child.is_some() {
        builder.sandbox(sandbox::SandboxMode::Off.label());
    }
    let sim = builder.build().map_err(ServeError::Build)?;
    let verify = until.verify();
    let mut run = sim.start(move |host| gateway::gateway_judging(host, inputs, responses, verify));
    let mut normalizer = options.normalizer.clone();
    if let Some(command) = &options.command {
        // The agent works where it was started: its path differs per machine and run.
        let cwd = command.cwd.clone().or_else(|| std::env::current_dir().ok());
        let home = command.env.iter().find(|(name, _)| name == "HOME");
        normalizer = normalizer.for_agent(cwd.as_deref(), home.map(|(_, home)| home.as_str()));
    }
    let mut driver = driver::Driver::new(inputs, responses, options.settle, normalizer);
    driver.session_log = session_log(options.session_log.as_deref())?;
    let timeout = options.command.as_ref().and_then(|c| c.timeout);
    let ending = async {
        match child.as_mut() {
            Some(child) => {
                let exited = async {
                    let status = child.status().await;
                    let exit = match status.ok().and_then(|s| s.code()) {
                        Some(code) => AgentExit::Exited(code),
                        None => AgentExit::Signaled,
                    };
                    driver::SessionStop::AgentExited(exit)
                };
                match timeout {
                    Some(limit) => {
                        smol::future::or(exited, async {
                            smol::Timer::after(limit).await;
                            driver::SessionStop::Stopped
                        })
                        .await
                    }
                    None => exited.await,
                }
            }
            None => match &until {
                Until::Stopped(stop) => {
                    let _ = stop.recv().await;
                    driver::SessionStop::Stopped
                }
                Until::Reported { exits, .. } => driver::SessionStop::AgentExited(
                    exits.recv().await.unwrap_or(AgentExit::Signaled),
                ),
            },
        }
    };
    let ended = driver.drive(&mut run, &rx, ending).await;
    let timed_out = child.is_some() && matches!(ended, Some(driver::SessionStop::Stopped));
    if let Some(child) = child.as_mut() {
        // A timed-out agent is killed; an exited one is reaped. Nothing outlives the session.
        let _ = child.kill();
        let _ = child.status().await;
    }
    match (ended, &until) {
        (Some(driver::SessionStop::AgentExited(exit)), Until::Reported { .. }) => {
            driver.deliver_input(&mut run, GatewayInput::InProcessExited(exit));
        }
        (Some(driver::SessionStop::AgentExited(exit)), Until::Stopped(_)) => {
            driver.deliver_input(&mut run, GatewayInput::AgentExited(exit));
        }
        _ => {}
    }
    driver.close(&mut run);
    drop(acceptor);
    drop(mcp_config);
    let report = run.finish_with_verdict(verdict);
    Ok(Session { report, timed_out })
}

/// Binds the listener; returns it with the endpoints it serves.
pub(crate) async fn bind(
    addr: SocketAddr,
) -> Result<(smol::net::TcpListener, Endpoints), ServeError> {
    let bind_error = |source| ServeError::Bind { addr, source };
    let listener = smol::net::TcpListener::bind(addr)
        .await
        .map_err(bind_error)?;
    let bound = listener.local_addr().map_err(bind_error)?;
    Ok((listener, Endpoints::new(bound)))
}

/// Opens the log of raw requests, when one is asked for.
pub(crate) fn session_log(
    path: Option<&Path>,
) -> Result<Option<std::io::BufWriter<std::fs::File>>, ServeError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let file = std::fs::File::create(path).map_err(|source| ServeError::SessionLog {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Some(std::io::BufWriter::new(file)))
}

fn spawn_agent(
    command: &AgentCommand,
    endpoints: &Endpoints,
) -> Result<smol::process::Child, ServeError> {
    let mut process = smol::process::Command::new(&command.program);
    process
        .args(&command.args)
        .envs(endpoints.env.iter().map(|(k, v)| (k, v)))
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(smol::process::Stdio::null())
        .kill_on_drop(true);
    if let Some(cwd) = &command.cwd {
        process.current_dir(cwd);
    }
    process.spawn().map_err(|source| ServeError::Spawn {
        program: command.program.clone(),
        source,
    })
}

/// The footer verdict of a serve run.
pub(crate) fn verdict(outcome: Result<&GatewayOutcome, &simtape::SimError>) -> String {
    match outcome {
        Ok(outcome) => outcome.verdict(),
        Err(error) => format!("error: {error}"),
    }
}

/// Why a serve tape could not be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The tape's inputs could not be read or fed.
    #[error(transparent)]
    Inputs(#[from] ReplayInputError),
    /// The tape could not be opened.
    #[error(transparent)]
    Tape(#[from] simtape::tape::TapeError),
}

/// Runs `builder`'s gateway again from the inputs recorded on `tape`, without any agent:
/// the same seed and scenario give the same tape bytes. `verify` is the scenario's
/// verifiers, judged again when the agent was in-process, as serve judged them.
pub fn replay(
    builder: &mut Builder,
    tape: &Path,
    verify: &[simtape_agent::VerifySpec],
) -> Result<Result<RunReport<GatewayOutcome>, RunError>, ReplayError> {
    let reader = TapeReader::open(tape)?;
    if let Some(label) = &reader.header().sandbox {
        builder.sandbox(label);
    }
    let inputs = recorded_inputs(reader.keep_blobs(true))?;
    let (inbox, outbox) = register(builder);
    let sim = builder.build().map_err(|e| {
        ReplayError::Inputs(ReplayInputError::BadInput {
            index: 0,
            detail: e.to_string(),
        })
    })?;
    let verify: Rc<[simtape_agent::VerifySpec]> = Rc::from(verify);
    let mut run = sim.start(move |host| gateway::gateway_judging(host, inbox, outbox, verify));
    run.replay_inputs(&inputs)?;
    Ok(run.finish_with_verdict(verdict))
}
