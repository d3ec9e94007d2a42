//! `simtape serve`: one simulation whose model endpoints an agent process reaches on
//! loopback; the agent's requests, answers and exit go on the one tape.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use simtape_agent::EvalScenario;
use simtape_serve::{AgentCommand, BodyNormalizer, ServeOptions, ServeSandbox};

use crate::exit::{CliError, CliResult, Outcome};

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The scenario file (TOML): its model fixture answers the agent.
    pub(crate) scenario: PathBuf,
    /// The seed (default: the scenario's first pinned seed).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Where to write the tape.
    #[arg(long)]
    pub(crate) tape: Option<PathBuf>,
    /// Where to listen; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub(crate) addr: SocketAddr,
    /// How long the agent must be quiet, in wall-clock milliseconds, before virtual time
    /// moves and answers go out (docs/serve.md, "The settle rule").
    #[arg(long, default_value_t = 20)]
    pub(crate) settle_ms: u64,
    /// Wall-clock seconds the agent may run before it is killed and the run ends in error.
    #[arg(long, default_value_t = 600)]
    pub(crate) timeout_s: u64,
    /// Write each raw request (before normalization) to this file, one JSON line each.
    #[arg(long, value_name = "PATH")]
    pub(crate) session_log: Option<PathBuf>,
    /// Also replace the value at this JSON pointer of every request body with `<volatile>`
    /// (repeatable; the session id, the date and UUIDs are always normalized).
    #[arg(long = "normalize-pointer", value_name = "POINTER")]
    pub(crate) normalize_pointers: Vec<String>,
    #[command(flatten)]
    pub(crate) record: crate::common::record::RecordLlmArgs,
    /// Run the agent on the host, unconfined, instead of in simtape's namespace sandbox
    /// (docs/sandbox.md); the tape says so.
    #[arg(long)]
    pub(crate) no_sandbox: bool,
    /// The agent runs in a process simtape does not start (a pytest test function, through
    /// the simtape-pytest plugin): serve prints the endpoint variables as `export` lines, then
    /// `serve: waiting for the agent`, and ends when a line `exit CODE` on stdin says how
    /// the agent ended (stdin closing without one: ended by a signal). The verdict also
    /// asks that it called the model (docs/pytest.md).
    #[arg(long, conflicts_with_all = ["command", "no_sandbox"])]
    pub(crate) in_process: bool,
    /// The agent to run, with its arguments, after `--`; without it, serve until Ctrl-C.
    #[arg(last = true)]
    pub(crate) command: Vec<String>,
}

// Long because: the flags of `serve` applied in order (scenario, record mode, sandbox,
// command), then the session and its printed summary.
pub(crate) fn run(args: &ServeArgs) -> CliResult {
    let mut eval =
        EvalScenario::load(&args.scenario).map_err(|e| CliError::Input(e.to_string()))?;
    // Its [process] programs in real or record mode run in the sandbox too, unless not.
    match args.no_sandbox {
        true => eval.set_process_runner(std::sync::Arc::new(simtape_serve::outside::Spawner)),
        false => eval.set_process_runner(std::sync::Arc::new(
            simtape_serve::outside::ContainedSpawner {
                network: eval
                    .scenario()
                    .network()
                    .cloned()
                    .unwrap_or_else(simtape::cap::net::Network::deny),
                expose: Vec::new(),
            },
        )),
    }
    let seed = args
        .seed
        .unwrap_or_else(|| eval.scenario().seeds().first().copied().unwrap_or(0));
    println!("seed={seed}");
    let mut builder = match crate::common::record::recorder(&args.record)? {
        Some(llm) => eval.builder_with_llm(seed, llm),
        None => eval.builder(seed),
    };
    if let Some(tape) = &args.tape {
        if let Some(parent) = tape.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| CliError::Usage(format!("{}: {e}", parent.display())))?;
        }
        builder.tape(tape);
    }
    // The scenario's task, as `run` hands it to an agent program.
    let task = match (&eval.eval().command, &eval.eval().agent) {
        (Some(command), _) => Some(command.task.clone()),
        (None, Some(agent)) => Some(agent.task.clone()),
        (None, None) => None,
    };
    let mut env: Vec<(String, String)> = task
        .map(|task| ("SIMTAPE_TASK".to_string(), task))
        .into_iter()
        .collect();
    // An agent program's scenario names its variables too.
    if let Some(command) = &eval.eval().command {
        env.extend(command.env.iter().cloned());
    }
    let command = args
        .command
        .split_first()
        .map(|(program, rest)| AgentCommand {
            program: program.clone(),
            args: rest.to_vec(),
            env: env.clone(),
            cwd: None,
            timeout: Some(Duration::from_secs(args.timeout_s)),
        });
    let interactive = command.is_none() && !args.in_process;
    let mut normalizer =
        BodyNormalizer::agent_defaults().with_scenario_rules(&eval.eval().normalize);
    // The agent inherits HOME, where agents keep state (Codex lists its skills under it in
    // every request): its path differs per user and machine, so it is normalized like the
    // working directory. A root HOME would turn every `/` into the placeholder.
    if let Some(home) = std::env::var_os("HOME").filter(|home| home.len() > 1) {
        normalizer.literal(&home.to_string_lossy(), "<home>");
    }
    for pointer in &args.normalize_pointers {
        normalizer
            .pointer(pointer)
            .map_err(|e| CliError::Input(e.to_string()))?;
    }
    // The agent works on the scenario's [fs] root, or the current directory, through an
    // overlay in its sandbox: the host's copy is never changed.
    let sandbox = match (&command, args.no_sandbox) {
        (Some(_), false) => {
            let project = match eval.scenario().fs_root() {
                Some(root) => root,
                None => std::env::current_dir()
                    .map_err(|e| CliError::Usage(format!("the current directory: {e}")))?,
            };
            let network = eval.scenario().network().cloned();
            Some(ServeSandbox {
                project,
                network: network.unwrap_or_else(simtape::cap::net::Network::deny),
                expose: Vec::new(),
            })
        }
        _ => None,
    };
    let options = ServeOptions {
        addr: args.addr,
        settle: Duration::from_millis(args.settle_ms),
        command,
        normalizer,
        session_log: args.session_log.clone(),
        sandbox,
    };
    let listening = |endpoints: &simtape_serve::Endpoints| {
        println!("serve: listening on http://{}", endpoints.addr);
        if interactive {
            println!("serve: point your agent here, then press Ctrl-C to end and write the tape:");
        }
        if interactive || args.in_process {
            for (name, value) in &endpoints.env {
                println!("  export {name}={value}");
            }
        }
        if args.in_process {
            println!("serve: waiting for the agent (`exit CODE` on stdin when it ends)");
        }
    };
    let session = if args.in_process {
        let verify = eval.eval().verify.clone();
        simtape_serve::serve_in_process(&mut builder, options, agent_exits(), verify, listening)
    } else {
        let (stop_tx, stop) = smol::channel::bounded(1);
        if interactive {
            // Ctrl-C ends the session; the tape is finished, not lost.
            simtape_serve::signals::on_ctrl_c(move || {
                let _ = stop_tx.try_send(());
            })
            .map_err(|e| CliError::Usage(format!("cannot watch for Ctrl-C: {e}")))?;
        }
        simtape_serve::serve(&mut builder, options, stop, listening)
    }
    .map_err(|e| CliError::Input(e.to_string()))?;
    if session.timed_out {
        eprintln!(
            "serve: the agent ran over --timeout-s {} and was killed",
            args.timeout_s
        );
    }
    if let Some(tape) = &args.tape {
        println!("tape: {}", tape.display());
    }
    report_session(session.report)
}

/// Reads the in-process agent's end from stdin (`exit CODE`), noting each other line.
fn agent_exits() -> smol::channel::Receiver<simtape_agent::AgentExit> {
    simtape_serve::signals::agent_exits_from_stdin(|shown| {
        eprintln!("serve: ignored a stdin line {shown:?}; expected `exit CODE`");
    })
}

/// Prints the session's counts, world goals and verdict; its outcome is the exit code.
fn report_session(
    report: Result<simtape::RunReport<simtape_serve::GatewayOutcome>, simtape::RunError>,
) -> CliResult {
    match report {
        Ok(report) => {
            let outcome = &report.output;
            println!(
                "serve: {} request(s), {} model call(s), {} MCP call(s)",
                outcome.requests, outcome.model_calls, outcome.mcp_calls
            );
            for (server, world) in simtape_serve::mcp_http::worlds(&report) {
                let scored = &world.scored;
                let goal = match (scored.goal_met, scored.passed) {
                    (true, true) => "goal met".to_string(),
                    (true, false) => format!(
                        "goal met, collateral damage at {}",
                        scored.failed_paths().join(", ")
                    ),
                    (false, _) => format!("goal not met at {}", scored.failed_paths().join(", ")),
                };
                println!(
                    "serve: world {server}: {goal}; {} call(s)",
                    world.calls.len()
                );
            }
            for judged in &outcome.verifiers {
                println!("serve: {}", verifier_line(judged));
            }
            let verdict = outcome.verdict();
            println!("verdict: {verdict}");
            Ok(match verdict.split(':').next() {
                Some("ok") => Outcome::Success,
                Some("fail") => Outcome::Finding,
                _ => Outcome::RunError,
            })
        }
        Err(error) => {
            println!("verdict: error: {}", error.error);
            Ok(Outcome::RunError)
        }
    }
}

/// A verifier as serve judged it for an in-process agent, as `run` shows one.
fn verifier_line(judged: &simtape_agent::Judged) -> String {
    match judged {
        simtape_agent::Judged::Result(result) => {
            let mark = if result.held { "held  " } else { "FAILED" };
            let (name, line, saw) = (&result.name, result.line, &result.saw);
            format!("verify {mark} {name} (line {line}): {saw}")
        }
        simtape_agent::Judged::Unseen { name, kind, why } => {
            format!("verify not judged {name} ({kind}): {why}; assert in the test")
        }
    }
}
