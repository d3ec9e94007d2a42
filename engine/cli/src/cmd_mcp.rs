//! `simtape mcp record|replay|verify|world|eval|bridge`: stdio MCP cassettes and simulated
//! worlds (the work is in `simtape-mcp`), and the stdio bridge to `simtape serve` (in
//! `simtape-serve`).

use std::cell::RefCell;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use clap::{Args, Subcommand};
use simtape_mcp::world::{World, WorldServer};
use simtape_mcp::{compare, Cassette, DriftOptions, McpError, Redactor, ReplayServer};
use simtape_serve::mcp_stdio::journal::Journal;
use simtape_serve::mcp_stdio::record::{Recorder, SessionRecorder, Written};
use simtape_serve::mcp_stdio::stdio::{Ending, ServeInbox};
use simtape_serve::mcp_stdio::world::{self as outputs, Outputs, Recovered};
use simtape_serve::streamable::{McpServer, Push};

use simtape::limits::InputFile;

use crate::common::files::read_input_text;
use crate::exit::{CliError, CliResult, Outcome};

const MCP_EXIT_CODES: &str = "\
Exit codes:
  0  success (verify: no drift; eval: every state passed; record, replay, world, bridge: the
     session ended by stdin EOF, SIGTERM, SIGINT or SIGHUP and every owed file was written)
  1  verify: drift found; eval: at least one state failed its goal
  2  bad usage or input: arguments, unreadable cassettes, specs or journals, a server that
     cannot start, an owed file that cannot be written, a failed read of stdin, a bridge URL
     that is not http://";

/// The `mcp` command group.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    pub(crate) command: McpCommand,
}

/// The `mcp` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Proxies a stdio MCP server and writes every message, both ways, to a cassette.
    #[command(after_help = MCP_EXIT_CODES)]
    Record(McpRecordArgs),
    /// Serves a cassette as a dual-era stdio MCP server.
    #[command(after_help = MCP_EXIT_CODES)]
    Replay(McpReplayArgs),
    /// Reports drift between a cassette and a candidate cassette or a live server.
    #[command(after_help = MCP_EXIT_CODES)]
    Verify(VerifyArgs),
    /// Serves a seeded simulated world (docs/mcp-world.md); writes its state and a goal report
    /// when the session ends (stdin EOF, SIGTERM, SIGINT or SIGHUP).
    #[command(after_help = MCP_EXIT_CODES)]
    World(WorldArgs),
    /// Scores final world states against the spec's goal: pass rate, pass@k, pass^k.
    #[command(after_help = MCP_EXIT_CODES)]
    Eval(EvalArgs),
    /// Serves an MCP endpoint of a running `simtape serve` (its URL, http://…/mcp/NAME) as a
    /// stdio MCP server, for agents that only start stdio servers (docs/serve.md).
    #[command(after_help = MCP_EXIT_CODES)]
    Bridge(BridgeArgs),
}

/// Arguments of `simtape mcp bridge`.
#[derive(Debug, Args)]
pub(crate) struct BridgeArgs {
    /// The MCP endpoint to forward to, as `simtape serve` names it in SIMTAPE_MCP_CONFIG.
    pub(crate) url: String,
}

/// Arguments of `simtape mcp world`.
#[derive(Debug, Args)]
pub(crate) struct WorldArgs {
    /// The world spec (JSON).
    #[arg(long, required_unless_present = "recover")]
    pub(crate) spec: Option<PathBuf>,
    /// The seed for probability faults (default: the spec's `seed`).
    #[arg(long, conflicts_with = "recover")]
    pub(crate) seed: Option<u64>,
    /// Where to write the final state when the session ends.
    #[arg(long, value_name = "S.json")]
    pub(crate) state_out: Option<PathBuf>,
    /// Where to write the report (goal match, collateral damage, calls) when the session ends.
    #[arg(long, value_name = "R.json")]
    pub(crate) report: Option<PathBuf>,
    /// Rebuild the state and report from the journal a killed `world` left, instead of
    /// serving (written where that session would have; --state-out/--report override).
    #[arg(long, value_name = "R.json.journal.jsonl", conflicts_with = "spec")]
    pub(crate) recover: Option<PathBuf>,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (a loopback address; port 0
    /// picks a free one, printed on stderr). The session ends on SIGTERM, SIGINT or SIGHUP.
    #[arg(long, value_name = "ADDR", conflicts_with = "recover")]
    pub(crate) http: Option<std::net::SocketAddr>,
}

/// Arguments of `simtape mcp eval`.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// The world spec whose goal is scored.
    #[arg(long)]
    pub(crate) spec: PathBuf,
    /// A final state file (repeatable; one per trial).
    #[arg(long = "state", value_name = "S.json", required = true)]
    pub(crate) states: Vec<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `simtape mcp record`.
#[derive(Debug, Args)]
pub(crate) struct McpRecordArgs {
    /// Where to write the cassette (when the session ends); messages are journaled beside it
    /// as they pass, in C.json.journal.jsonl.
    #[arg(long, required_unless_present = "recover")]
    pub(crate) cassette: Option<PathBuf>,
    /// Turn the journal a killed `record` left into its cassette, instead of recording
    /// (written where that recording would have; --cassette overrides).
    #[arg(long, value_name = "C.json.journal.jsonl", conflicts_with = "server")]
    pub(crate) recover: Option<PathBuf>,
    /// Redact the value of this environment variable wherever it appears (repeatable).
    #[arg(long = "redact-env", value_name = "NAME")]
    pub(crate) redact_env: Vec<String>,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (a loopback address; port 0
    /// picks a free one, printed on stderr): each session starts the server anew, and the
    /// cassette holds every session. The recording ends on SIGTERM, SIGINT or SIGHUP.
    #[arg(long, value_name = "ADDR", conflicts_with = "recover")]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// The server command line, after `--`.
    #[arg(
        last = true,
        required_unless_present = "recover",
        value_name = "SERVER"
    )]
    pub(crate) server: Vec<String>,
}

/// Arguments of `simtape mcp replay`.
#[derive(Debug, Args)]
pub(crate) struct McpReplayArgs {
    /// The cassette to serve.
    #[arg(long)]
    pub(crate) cassette: PathBuf,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (a loopback address; port 0
    /// picks a free one, printed on stderr). The session ends on SIGTERM, SIGINT or SIGHUP.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// Redact this variable's value from live requests before matching, as when recording.
    #[arg(long = "redact-env", value_name = "NAME")]
    pub(crate) redact_env: Vec<String>,
}

/// Arguments of `simtape mcp verify`.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The recorded cassette.
    #[arg(long)]
    pub(crate) cassette: PathBuf,
    /// A candidate cassette to compare against (instead of a live server).
    #[arg(long, conflicts_with = "server")]
    pub(crate) candidate: Option<PathBuf>,
    /// Report latencies that moved by more than this many milliseconds.
    #[arg(long, value_name = "MS")]
    pub(crate) latency_tolerance_ms: Option<u64>,
    /// Print the drift report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Redact this variable's value from the live session (repeatable).
    #[arg(long = "redact-env", value_name = "NAME")]
    pub(crate) redact_env: Vec<String>,
    /// A live server command line, after `--`.
    #[arg(last = true, value_name = "SERVER")]
    pub(crate) server: Vec<String>,
}

/// Runs an `mcp` subcommand.
pub(crate) fn run(args: &McpArgs) -> CliResult {
    match &args.command {
        McpCommand::Record(a) => record(a),
        McpCommand::Replay(a) => replay(a),
        McpCommand::Verify(a) => verify(a),
        McpCommand::World(a) => world(a),
        McpCommand::Eval(a) => eval(a),
        McpCommand::Bridge(a) => bridge(a),
    }
}

fn redactor(names: &[String]) -> Redactor {
    // The CLI may read the environment (the library never does): only named variables.
    let pairs = names
        .iter()
        .filter_map(|name| Some((name.clone(), std::env::var(name).ok()?)))
        .collect();
    Redactor::new(pairs)
}

fn failed(error: McpError) -> CliError {
    CliError::Mcp(error)
}

fn load(path: &Path) -> Result<Cassette, CliError> {
    Cassette::load(path).map_err(failed)
}

/// Starts a long-lived stdio session: stdin is read on its own thread, and termination
/// signals end the session exactly as stdin EOF does (the serving loop then writes what it
/// owes).
fn stdio_session() -> Result<ServeInbox, CliError> {
    let inbox = ServeInbox::new();
    simtape_serve::signals::end_session_on_signals(&inbox)
        .map_err(|e| CliError::Usage(format!("cannot install signal handlers: {e}")))?;
    inbox.read_from(io::stdin());
    Ok(inbox)
}

/// The exit code after a session's files are written: 0 however the session ended, except when
/// reading stdin failed.
fn ended(command: &str, ending: Ending) -> CliResult {
    match ending {
        Ending::InputFailed(error) => Err(CliError::Usage(format!(
            "simtape mcp {command}: stdin: {error}"
        ))),
        Ending::Eof | Ending::Signal(_) | Ending::ClientGone => Ok(Outcome::Success),
    }
}

fn print_written(what: &str, written: &Written) {
    eprintln!(
        "simtape mcp record: {what} {} message(s) to {}",
        written.messages,
        written.cassette.display()
    );
    for skipped in &written.skipped {
        eprintln!("simtape mcp record: skipped journal {skipped}");
    }
}

fn record(args: &McpRecordArgs) -> CliResult {
    if let Some(journal) = &args.recover {
        let written = simtape_serve::mcp_stdio::record::recover(journal, args.cassette.as_deref())
            .map_err(failed)?;
        print_written("recovered", &written);
        return Ok(Outcome::Success);
    }
    let cassette = args
        .cassette
        .as_deref()
        .expect("clap requires --cassette without --recover");
    if let Some(left) = simtape_serve::mcp_stdio::record::recover_left(cassette).map_err(failed)? {
        print_written("a killed recording left a journal; recovered", &left);
    }
    let redactor = redactor(&args.redact_env);
    let recorder = Recorder {
        command: &args.server,
        redactor: &redactor,
        cassette,
        send_signal: simtape_serve::signals::pass_on,
    };
    if let Some(addr) = args.http {
        let recording = SessionRecorder::start(&recorder).map_err(failed)?;
        let shared = Rc::new(RefCell::new(recording));
        let ending = http_session("record", addr, Box::new(HttpRecord(shared.clone())))?;
        let recording = Rc::try_unwrap(shared)
            .map_err(|_| CliError::Usage("the HTTP server outlived its session".into()))?
            .into_inner();
        let written = recording.finish().map_err(failed)?;
        print_written(&format!("{ending}; wrote"), &written);
        return ended("record", ending);
    }
    let inbox = stdio_session()?;
    let (ending, written) =
        simtape_serve::mcp_stdio::record::record(&recorder, &inbox, io::stdout())
            .map_err(failed)?;
    print_written(&format!("{ending}; wrote"), &written);
    ended("record", ending)
}

fn replay(args: &McpReplayArgs) -> CliResult {
    let cassette = load(&args.cassette)?;
    let mut server = ReplayServer::new(&cassette, redactor(&args.redact_env));
    if let Some(addr) = args.http {
        let ending = http_session("replay", addr, Box::new(HttpReplay(server)))?;
        return ended("replay", ending);
    }
    let inbox = stdio_session()?;
    let ending = simtape_serve::mcp_stdio::serve::serve(&mut server, &inbox, io::stdout().lock());
    ended("replay", ending)
}

/// A replay server as the HTTP transport drives it; its misses go to stderr as on stdio.
struct HttpReplay(ReplayServer);

impl McpServer for HttpReplay {
    fn open(&mut self, _: u64, _: Push) -> Vec<serde_json::Value> {
        self.0.opening()
    }

    fn close(&mut self, _: u64) {}

    fn answer(&mut self, _: u64, line: &[u8]) -> Vec<serde_json::Value> {
        let out = self.0.handle_line(line);
        for miss in self.0.take_misses() {
            eprintln!("simtape mcp replay: replay miss: {miss}");
        }
        out
    }
}

/// A recording as the HTTP transport drives it: a server process per session, whose
/// messages come back through the session's [`Push`].
struct HttpRecord(Rc<RefCell<SessionRecorder>>);

impl McpServer for HttpRecord {
    fn open(&mut self, session: u64, push: Push) -> Vec<serde_json::Value> {
        let opened = self.0.borrow_mut().open(session, move |m| push.send(m));
        if let Err(e) = opened {
            eprintln!("simtape mcp record: session {session}: {e}");
        }
        Vec::new()
    }

    fn answer(&mut self, session: u64, line: &[u8]) -> Vec<serde_json::Value> {
        if self.0.borrow_mut().send(session, line) {
            return Vec::new();
        }
        // No server to answer: each request gets an error instead of waiting for good.
        let message: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
        match message
            .get("id")
            .filter(|_| message.get("method").is_some())
        {
            Some(id) => vec![simtape_mcp::jsonrpc::error_response(
                id,
                simtape_mcp::jsonrpc::INTERNAL_ERROR,
                &format!(
                    "simtape mcp record: session {session} has no server (it could not be started)"
                ),
                None,
            )],
            None => Vec::new(),
        }
    }

    fn close(&mut self, session: u64) {
        if let Err(e) = self.0.borrow_mut().close(session) {
            eprintln!("simtape mcp record: session {session}: {e}");
        }
    }
}

/// A world as the HTTP transport drives it, journaling each call as on stdio. Shared with
/// the command, which writes the outputs from it when the session ends.
struct HttpWorld(Rc<RefCell<(WorldServer, Option<Journal>)>>);

impl McpServer for HttpWorld {
    fn open(&mut self, _: u64, _: Push) -> Vec<serde_json::Value> {
        Vec::new()
    }

    fn close(&mut self, _: u64) {}

    fn answer(&mut self, _: u64, line: &[u8]) -> Vec<serde_json::Value> {
        let (server, journal) = &mut *self.0.borrow_mut();
        outputs::answer_journaled(server, line, journal.as_mut())
    }
}

/// Serves `server` over Streamable HTTP at `addr` until a termination signal, and says why
/// it ended. The address it listens on goes to stderr first.
fn http_session(
    command: &str,
    addr: std::net::SocketAddr,
    server: Box<dyn McpServer>,
) -> Result<Ending, CliError> {
    let (listener, bound) = simtape_serve::streamable::bind(addr)
        .map_err(|e| CliError::Usage(format!("simtape mcp {command} --http {addr}: {e}")))?;
    let inbox = ServeInbox::new();
    simtape_serve::signals::end_session_on_signals(&inbox)
        .map_err(|e| CliError::Usage(format!("cannot install signal handlers: {e}")))?;
    let (stop, stopped) = smol::channel::bounded(1);
    let ended_rx = simtape_serve::signals::stop_on_end(inbox, stop);
    eprintln!(
        "simtape mcp {command}: serving MCP at http://{bound}{}",
        simtape_serve::streamable::MCP_PATH
    );
    simtape_serve::streamable::serve(listener, server, stopped)
        .map_err(|e| CliError::Usage(format!("simtape mcp {command} --http {addr}: {e}")))?;
    Ok(ended_rx.recv().unwrap_or(Ending::Eof))
}

fn verify(args: &VerifyArgs) -> CliResult {
    let recorded = load(&args.cassette)?;
    let candidate = match (&args.candidate, args.server.is_empty()) {
        (Some(path), _) => load(path)?,
        (None, false) => simtape_serve::mcp_stdio::live::rerun(
            &recorded,
            &args.server,
            &redactor(&args.redact_env),
        )
        .map_err(failed)?,
        (None, true) => {
            return Err(CliError::Usage(
                "verify needs --candidate B.json or a server command after `--`".into(),
            ))
        }
    };
    let options = DriftOptions {
        latency_tolerance_ms: args.latency_tolerance_ms,
    };
    let report = compare(&recorded, &candidate, &options);
    let mut stdout = io::stdout().lock();
    let text = if args.json {
        let mut json = serde_json::to_string_pretty(&report).expect("the report serializes");
        json.push('\n');
        json
    } else {
        report.to_text()
    };
    stdout
        .write_all(text.as_bytes())
        .map_err(|e| CliError::Usage(format!("stdout: {e}")))?;
    Ok(if report.drift {
        Outcome::Finding
    } else {
        Outcome::Success
    })
}

fn load_world(path: &Path) -> Result<World, CliError> {
    World::load(path).map_err(|e| CliError::Input(e.to_string()))
}

fn print_recovered(recovered: &Recovered) {
    for path in [&recovered.outputs.state, &recovered.outputs.report]
        .into_iter()
        .flatten()
    {
        eprintln!("simtape mcp world: rebuilt {}", path.display());
    }
    for skipped in &recovered.skipped {
        eprintln!("simtape mcp world: skipped journal {skipped}");
    }
}

fn world(args: &WorldArgs) -> CliResult {
    let targets = Outputs {
        state: args.state_out.clone(),
        report: args.report.clone(),
    };
    if let Some(journal) = &args.recover {
        let recovered = outputs::recover(journal, &targets).map_err(failed)?;
        print_recovered(&recovered);
        return Ok(Outcome::Success);
    }
    let spec = args
        .spec
        .as_deref()
        .expect("clap requires --spec without --recover");
    // The spec text goes into the journal, so a rebuild does not depend on the file later.
    let text = read_input_text(spec, InputFile::WorldSpec)?;
    let world = World::parse(&text, spec).map_err(|e| CliError::Input(e.to_string()))?;
    let seed = args.seed.unwrap_or(world.spec.seed);
    // Stdout carries only MCP messages; the seed goes to stderr, first, for reproduction.
    eprintln!("seed={seed}");
    for note in simtape_mcp::world::faults::deprecations(&text) {
        eprintln!("simtape mcp world: {}: note: {note}", spec.display());
    }
    if let Some(left) = outputs::recover_left(&targets).map_err(failed)? {
        eprintln!("simtape mcp world: a killed session left a journal");
        print_recovered(&left);
    }
    let mut journal = outputs::open_journal(&targets, spec, &text, seed).map_err(failed)?;
    let mut server = WorldServer::new(world, seed);
    let ending = if let Some(addr) = args.http {
        let shared = Rc::new(RefCell::new((server, journal)));
        let ending = http_session("world", addr, Box::new(HttpWorld(shared.clone())))?;
        (server, journal) = Rc::try_unwrap(shared)
            .map_err(|_| CliError::Usage("the HTTP server outlived its session".into()))?
            .into_inner();
        ending
    } else {
        let inbox = stdio_session()?;
        outputs::serve(&mut server, &inbox, io::stdout().lock(), journal.as_mut())
    };
    let report = outputs::finish(&server, &targets, journal).map_err(failed)?;
    let verdict = if report.scored.passed {
        "goal met"
    } else {
        "goal not met"
    };
    eprintln!(
        "simtape mcp world: {ending}; {verdict}; {} call(s); reproduce with --seed {seed}",
        report.calls.len()
    );
    ended("world", ending)
}

fn bridge(args: &BridgeArgs) -> CliResult {
    let bridge = simtape_serve::bridge::Bridge::new(&args.url)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let inbox = stdio_session()?;
    let ending = simtape_serve::bridge::run(bridge, &inbox, io::stdout());
    ended("bridge", ending)
}

fn eval(args: &EvalArgs) -> CliResult {
    let world = load_world(&args.spec)?;
    let mut states = Vec::new();
    for path in &args.states {
        let text = read_input_text(path, InputFile::WorldState)?;
        let state: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| CliError::Usage(format!("{}: not JSON: {e}", path.display())))?;
        states.push((path.clone(), state));
    }
    let report = simtape_eval::world_eval::evaluate(&world, &states)
        .map_err(|e| CliError::Input(e.to_string()))?;
    let text = if args.json {
        let mut json = serde_json::to_string_pretty(&report).expect("the report serializes");
        json.push('\n');
        json
    } else {
        report.to_text()
    };
    io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| CliError::Usage(format!("stdout: {e}")))?;
    Ok(if report.c == report.n {
        Outcome::Success
    } else {
        Outcome::Finding
    })
}
