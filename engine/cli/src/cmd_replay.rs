//! `simtape replay`: re-run a tape's scenario and seed; the new tape must be byte-identical.

use simtape::tape::{sha256_hex, TapeReader};
use simtape_agent::EvalScenario;

use crate::args::ReplayArgs;
use crate::common::files::{read, scratch_dir};
use crate::common::load_scenario;
use crate::common::render::print_diff;
use crate::exit::{CliError, CliResult, Outcome};

pub(crate) fn run(args: &ReplayArgs) -> CliResult {
    let header = TapeReader::open(&args.tape)
        .map_err(|error| CliError::Tape {
            path: Some(args.tape.clone()),
            error,
        })?
        .header()
        .clone();
    println!("seed={}", header.seed);
    let scenario = match &args.scenario {
        Some(path) => {
            let scenario = load_scenario(path, None)?;
            if scenario.scenario().digest() != header.scenario.digest {
                return Err(CliError::Input(format!(
                    "{} has digest {}, but the tape was made from digest {}",
                    path.display(),
                    scenario.scenario().digest(),
                    header.scenario.digest
                )));
            }
            scenario
        }
        None => {
            if sha256_hex(header.scenario.source.as_bytes()) != header.scenario.digest {
                return Err(CliError::Input(
                    "the scenario source embedded in the tape does not match its digest".into(),
                ));
            }
            let origin = args.tape.with_extension("embedded-scenario.toml");
            EvalScenario::parse(&header.scenario.source, &origin).map_err(|error| {
                // The embedded source resolves its files against the tape's directory; a tape
                // kept away from its scenario needs the original file.
                let references_files = ["fs.", "llm.", "process.", "mcp"]
                    .iter()
                    .any(|t| error.field.starts_with(t));
                let hint = if references_files {
                    "\nhint: the scenario's files resolve against the tape's directory; pass \
                     --scenario with the original scenario file"
                } else {
                    ""
                };
                CliError::Input(format!("{error}{hint}"))
            })?
        }
    };
    // Without --out the replayed tape goes to a scratch directory, removed when it matches.
    let (out, scratch) = match &args.out {
        Some(path) => {
            crate::common::files::check_output(path, "--out")?;
            (path.clone(), None)
        }
        None => {
            let dir = scratch_dir("replay")?;
            (dir.join("replay.tape"), Some(dir))
        }
    };
    let mut builder = scenario.builder(header.seed);
    builder
        .tape(&out)
        .sidecar_blobs(header.blob_mode == "sidecar");
    builder.blob_threshold_bytes(header.blob_threshold_bytes as usize);
    if args.rerun_agent {
        if scenario.eval().command.is_none() {
            return Err(CliError::Usage(
                "--rerun-agent: the tape's scenario has no [agent] kind = \"command\"".into(),
            ));
        }
        // The program runs again, live: byte-identical only when it asks the same again.
        crate::common::run_eval(&scenario, &mut builder, args.agent_bin.as_deref(), None)?;
    } else if scenario.eval().command.is_some() {
        // An agent program's run: its requests, output, exit, changes and gate runs are
        // inputs on the tape, so the eval pipeline runs again from them; no program starts.
        simtape_serve::command::replay_command(&scenario, &mut builder, &args.tape)
            .map_err(|error| CliError::Input(format!("{}: {error}", args.tape.display())))?;
    } else if header
        .actors
        .iter()
        .any(|name| name == simtape_serve::GATEWAY_INBOX)
    {
        // A `simtape serve` tape: its inputs (the agent's requests and exit) are on it, so the
        // gateway runs again from them alone; no agent process is started.
        let replayed = simtape_serve::replay(&mut builder, &args.tape)
            .map_err(|error| CliError::Input(format!("{}: {error}", args.tape.display())))?;
        drop(replayed);
    } else {
        scenario.run(&mut builder);
    }
    if read(&args.tape)? == read(&out)? {
        println!(
            "replay: byte-identical ({}, scenario {}, seed {})",
            args.tape.display(),
            scenario.scenario().name(),
            header.seed
        );
        if let Some(dir) = &scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
        return Ok(Outcome::Success);
    }
    println!(
        "replay: the replayed tape differs from {}",
        args.tape.display()
    );
    print_diff(&args.tape, &out, simtape::oracle::Mode::Exact, false)?;
    println!("replayed tape: {}", out.display());
    Ok(Outcome::Finding)
}
