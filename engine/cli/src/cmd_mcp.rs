//! `simtape mcp record|replay|verify|world|eval`: stdio MCP cassettes and simulated worlds (the
//! work is in `simtape-mcp`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use simtape_mcp::world::{World, WorldServer};
use simtape_mcp::{compare, Cassette, DriftOptions, McpError, Redactor, ReplayServer};

use crate::exit::{CliError, CliResult, Outcome};

const MCP_EXIT_CODES: &str = "\
Exit codes:
  0  success (verify: no drift; eval: every state passed; world: served until stdin closed)
  1  verify: drift found; eval: at least one state failed its goal
  2  bad usage or input: arguments, unreadable cassettes or specs, a server that cannot start";

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
    Record(RecordArgs),
    /// Serves a cassette as a dual-era stdio MCP server.
    #[command(after_help = MCP_EXIT_CODES)]
    Replay(ReplayArgs),
    /// Reports drift between a cassette and a candidate cassette or a live server.
    #[command(after_help = MCP_EXIT_CODES)]
    Verify(VerifyArgs),
    /// Serves a seeded simulated world (docs/mcp-world.md); writes its state and a goal report
    /// when stdin closes.
    #[command(after_help = MCP_EXIT_CODES)]
    World(WorldArgs),
    /// Scores final world states against the spec's goal: pass rate, pass@k, pass^k.
    #[command(after_help = MCP_EXIT_CODES)]
    Eval(EvalArgs),
}

/// Arguments of `simtape mcp world`.
#[derive(Debug, Args)]
pub(crate) struct WorldArgs {
    /// The world spec (JSON).
    #[arg(long)]
    pub(crate) spec: PathBuf,
    /// The seed for probability faults (default: the spec's `seed`).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Where to write the final state when stdin closes.
    #[arg(long, value_name = "S.json")]
    pub(crate) state_out: Option<PathBuf>,
    /// Where to write the report (goal match, collateral damage, calls) when stdin closes.
    #[arg(long, value_name = "R.json")]
    pub(crate) report: Option<PathBuf>,
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
pub(crate) struct RecordArgs {
    /// Where to write the cassette (when stdin closes).
    #[arg(long)]
    pub(crate) cassette: PathBuf,
    /// Redact the value of this environment variable wherever it appears (repeatable).
    #[arg(long = "redact-env", value_name = "NAME")]
    pub(crate) redact_env: Vec<String>,
    /// The server command line, after `--`.
    #[arg(last = true, required = true, value_name = "SERVER")]
    pub(crate) server: Vec<String>,
}

/// Arguments of `simtape mcp replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The cassette to serve.
    #[arg(long)]
    pub(crate) cassette: PathBuf,
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

fn load(path: &Path) -> Result<Cassette, CliError> {
    Ok(Cassette::load(path)?)
}

fn record(args: &RecordArgs) -> CliResult {
    let redactor = redactor(&args.redact_env);
    let stdin = io::stdin().lock();
    let stdout = io::stdout();
    let cassette = simtape_mcp::record::record(&args.server, &redactor, stdin, stdout)?;
    cassette.save(&args.cassette)?;
    eprintln!(
        "simtape mcp record: wrote {} message(s) to {}",
        cassette.messages.len(),
        args.cassette.display()
    );
    Ok(Outcome::Success)
}

fn replay(args: &ReplayArgs) -> CliResult {
    let cassette = load(&args.cassette)?;
    let mut server = ReplayServer::new(&cassette, redactor(&args.redact_env));
    simtape_mcp::serve::serve(&mut server, io::stdin().lock(), io::stdout().lock())
        .map_err(McpError::from)?;
    Ok(Outcome::Success)
}

fn verify(args: &VerifyArgs) -> CliResult {
    let recorded = load(&args.cassette)?;
    let candidate = match (&args.candidate, args.server.is_empty()) {
        (Some(path), _) => load(path)?,
        (None, false) => {
            simtape_mcp::live::rerun(&recorded, &args.server, &redactor(&args.redact_env))?
        }
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
        .map_err(CliError::write("stdout"))?;
    Ok(if report.drift {
        Outcome::Finding
    } else {
        Outcome::Success
    })
}

fn load_world(path: &Path) -> Result<World, CliError> {
    Ok(World::load(path)?)
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), CliError> {
    let mut text = serde_json::to_string_pretty(value).expect("JSON values serialize");
    text.push('\n');
    std::fs::write(path, text).map_err(CliError::io(path))
}

fn world(args: &WorldArgs) -> CliResult {
    let world = load_world(&args.spec)?;
    let seed = args.seed.unwrap_or(world.spec.seed);
    // Stdout carries only MCP messages; the seed goes to stderr, first, for reproduction.
    eprintln!("simtape mcp world: seed={seed}");
    let mut server = WorldServer::new(world, seed);
    server
        .serve(io::stdin().lock(), io::stdout().lock())
        .map_err(McpError::from)?;
    if let Some(path) = &args.state_out {
        write_json(path, server.state())?;
    }
    let report = server.report();
    if let Some(path) = &args.report {
        write_json(path, &report)?;
    }
    let verdict = if report.scored.passed {
        "goal met"
    } else {
        "goal not met"
    };
    eprintln!(
        "simtape mcp world: {verdict}; {} call(s); reproduce with --seed {seed}",
        report.calls.len()
    );
    Ok(Outcome::Success)
}

fn eval(args: &EvalArgs) -> CliResult {
    let world = load_world(&args.spec)?;
    let mut states = Vec::new();
    for path in &args.states {
        let text = std::fs::read_to_string(path).map_err(CliError::io(path))?;
        let state: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| CliError::Input(format!("{}: not JSON: {e}", path.display())))?;
        states.push((path.clone(), state));
    }
    let report = simtape_mcp::eval::evaluate(&world, &states)?;
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
        .map_err(CliError::write("stdout"))?;
    Ok(if report.c == report.n {
        Outcome::Success
    } else {
        Outcome::Finding
    })
}
