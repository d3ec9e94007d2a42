//! `simtape replay`: re-run a tape's scenario and seed; the new tape must be byte-identical.

use std::path::Path;

use simtape::oracle::{diff_paths, Mode};
use simtape::tape::{sha256_hex, TapeHeader, TapeReader, FORMAT_VERSION};
use simtape_agent::EvalScenario;

use crate::args::ReplayArgs;
use crate::common::files::{read, scratch_dir};
use crate::common::render::print_diff;
use crate::common::{inputs, load_scenario, refuse_recording};
use crate::exit::{CliError, CliResult, Outcome};

pub(crate) fn run(args: &ReplayArgs) -> CliResult {
    let tape = inputs::read(&args.tape)?;
    println!("seed={}", tape.header.seed);
    if let Some(path) = &args.out {
        crate::common::files::check_output(path, "--out")?;
    }
    // The replayed tape, and the inputs the scenario runs from, go to a scratch directory,
    // kept only when the replay differs (its tape is named then).
    let scratch = scratch_dir("replay")?;
    let result = replay(args, &tape, &scratch);
    if !matches!(result, Ok(Outcome::Finding)) {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    result
}

// Long because: the flags of `replay` applied in order (scenario source, inputs, rerun,
// comparison), each a few lines of parse and render.
fn replay(args: &ReplayArgs, tape: &inputs::TapeInputs, scratch: &Path) -> CliResult {
    let header = &tape.header;
    let scenario = match (&args.scenario, &tape.section) {
        (Some(path), _) => {
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
        // The tape carries the scenario's files: they are unpacked, and the scenario runs
        // from them, wherever the tape is and whatever is around it.
        (None, Some(_)) => {
            let unpacked = inputs::unpack_into(tape, &scratch.join("inputs"))?;
            load_scenario(&unpacked.scenario, unpacked.process_wasi.as_deref())?
        }
        (None, None) => embedded_only(&args.tape, header)?,
    };
    // A recording run called real programs: its replay is the process tape it wrote.
    refuse_recording(&scenario, "replay", &args.tape)?;
    let name = args
        .tape
        .file_name()
        .map_or_else(|| "replay.tape".into(), |n| n.to_os_string());
    let out = args.out.clone().unwrap_or_else(|| scratch.join(name));
    let mut builder = scenario.builder(header.seed);
    // The same blob mode and inputs section, its files where the tape keeps them: the same
    // bytes.
    inputs::write_like(&mut builder, tape, &out);
    // A run with a decisions file replays with the overrides its header carries.
    if let Some(stamp) = &header.decisions {
        builder.decisions(
            simtape::decision::DecisionBook::new(&stamp.overrides),
            Some(stamp.digest.clone()),
        );
        if let Some(branch) = &stamp.branch {
            builder.branch(branch.clone());
        }
    }
    if args.rerun_agent {
        if scenario.eval().command.is_none() {
            return Err(CliError::Usage(
                "--rerun-agent: the tape's scenario has no [agent] kind = \"command\"".into(),
            ));
        }
        // The program runs again, live, contained as the tape says it was: byte-identical
        // only when it asks the same again.
        crate::common::run_eval(
            &scenario,
            &mut builder,
            args.agent_bin.as_deref(),
            None,
            inputs::sandbox_of(header),
        )?;
    } else if scenario.eval().command.is_some() && judged_by_pipeline(&args.tape)? {
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
        // gateway runs again from them alone; no agent process is started. Also a serve
        // session of an agent-program scenario: it is judged as serve judged it (the agent's
        // exit and, for an in-process agent, the verifiers it can see), not by the pipeline.
        let verify = &scenario.eval().verify;
        let replayed = simtape_serve::replay(&mut builder, &args.tape, verify)
            .map_err(|error| CliError::Input(format!("{}: {error}", args.tape.display())))?;
        drop(replayed);
    } else {
        scenario.run(&mut builder);
    }
    if header.format_version != FORMAT_VERSION {
        return replay_older(args, header.format_version, &out);
    }
    if read(&args.tape)? == read(&out)? {
        println!(
            "replay: byte-identical ({}, scenario {}, seed {})",
            args.tape.display(),
            scenario.scenario().name(),
            header.seed
        );
        return Ok(Outcome::Success);
    }
    println!(
        "replay: the replayed tape differs from {}",
        args.tape.display()
    );
    if print_diff(&args.tape, &out, simtape::oracle::Mode::Exact, false)? == Outcome::Success {
        // Equal records, other bytes: what follows the footer differs.
        println!("replay: the records are the same; the inputs sections differ");
    }
    println!("replayed tape: {}", out.display());
    Ok(Outcome::Finding)
}

/// Returns whether the eval pipeline judged the run on `tape`, as `simtape run` does an
/// agent program's: the pipeline's `agent` actor wrote records (a `verifier` record for each
/// verifier it judged; every program run judges at least `agent exits 0`). `simtape serve`
/// runs the gateway alone, even for a program scenario, and judges only the agent's exit, so
/// its tape has none: replaying it through the pipeline would apply verifiers serve skipped.
fn judged_by_pipeline(tape: &Path) -> Result<bool, CliError> {
    let failed = |error| CliError::Tape {
        path: Some(tape.to_path_buf()),
        error,
    };
    let mut reader = TapeReader::open(tape).map_err(failed)?;
    let Some(agent) = reader
        .header()
        .actors
        .iter()
        .position(|name| name == simtape_agent::log::AGENT_ACTOR)
    else {
        return Ok(false);
    };
    while let Some(record) = reader.next_record().map_err(failed)? {
        if usize::from(record.actor) == agent {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Ends the replay of a tape of an older format: this engine writes the current one, whose
/// header (its version) and therefore every check differ, so the records are compared
/// instead of the bytes (the oracle's exact mode: every record, payload and instant).
fn replay_older(args: &ReplayArgs, version: u32, out: &Path) -> CliResult {
    let report = diff_paths(&args.tape, out, Mode::Exact)?;
    if report.equal {
        println!(
            "replay: the same records ({} is format version {version}, replayed as version \
             {FORMAT_VERSION}: the header and checks differ, every record is equal)",
            args.tape.display()
        );
        return Ok(Outcome::Success);
    }
    println!(
        "replay: the replayed records differ from {} (format version {version}, replayed as \
         version {FORMAT_VERSION})",
        args.tape.display()
    );
    print_diff(&args.tape, out, Mode::Exact, false)?;
    println!("replayed tape: {}", out.display());
    Ok(Outcome::Finding)
}

/// Parses the scenario embedded in a tape without an inputs section (a golden tape, or one
/// written by an older engine): its files resolve against the tape's directory.
fn embedded_only(tape: &Path, header: &TapeHeader) -> Result<EvalScenario, CliError> {
    if sha256_hex(header.scenario.source.as_bytes()) != header.scenario.digest {
        return Err(CliError::Input(
            "the scenario source embedded in the tape does not match its digest".into(),
        ));
    }
    let origin = tape.with_extension("embedded-scenario.toml");
    EvalScenario::parse(&header.scenario.source, &origin).map_err(|error| {
        let references_files = ["fs.", "llm.", "process.", "mcp"]
            .iter()
            .any(|t| error.field.starts_with(t));
        let hint = if references_files {
            "\nhint: this tape carries no inputs, so the scenario's files resolve against the \
             tape's directory; pass --scenario with the original scenario file"
        } else {
            ""
        };
        CliError::Input(format!("{error}{hint}"))
    })
}
