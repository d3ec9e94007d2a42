//! `simtape mcp record|replay|verify`: stdio MCP cassettes (the work is in `simtape-mcp`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use simtape_mcp::{compare, Cassette, DriftOptions, McpError, Redactor, ReplayServer};

use crate::exit::{CliError, CliResult, DIVERGED, OK};

const MCP_EXIT_CODES: &str = "\
Exit codes:
  0  success (verify: no drift)
  1  verify: drift found
  2  bad usage or input: arguments, unreadable cassettes, a server that cannot start";

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
    CliError::usage(error)
}

fn load(path: &Path) -> Result<Cassette, CliError> {
    Cassette::load(path).map_err(failed)
}

fn record(args: &RecordArgs) -> CliResult {
    let redactor = redactor(&args.redact_env);
    let stdin = io::stdin().lock();
    let stdout = io::stdout();
    let cassette =
        simtape_mcp::record::record(&args.server, &redactor, stdin, stdout).map_err(failed)?;
    cassette.save(&args.cassette).map_err(failed)?;
    eprintln!(
        "simtape mcp record: wrote {} message(s) to {}",
        cassette.messages.len(),
        args.cassette.display()
    );
    Ok(OK)
}

fn replay(args: &ReplayArgs) -> CliResult {
    let cassette = load(&args.cassette)?;
    let mut server = ReplayServer::new(&cassette, redactor(&args.redact_env));
    simtape_mcp::serve::serve(&mut server, io::stdin().lock(), io::stdout().lock())
        .map_err(|e| failed(e.into()))?;
    Ok(OK)
}

fn verify(args: &VerifyArgs) -> CliResult {
    let recorded = load(&args.cassette)?;
    let candidate = match (&args.candidate, args.server.is_empty()) {
        (Some(path), _) => load(path)?,
        (None, false) => {
            simtape_mcp::live::rerun(&recorded, &args.server, &redactor(&args.redact_env))
                .map_err(failed)?
        }
        (None, true) => {
            return Err(CliError::usage(
                "verify needs --candidate B.json or a server command after `--`",
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
        .map_err(|e| CliError::usage(format!("stdout: {e}")))?;
    Ok(if report.drift { DIVERGED } else { OK })
}
